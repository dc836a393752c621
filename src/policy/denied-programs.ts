import type { SourcedRule } from "./ruleset.js";

/** Permissions whose command patterns speak for bash's command lines (and so for what runs in its sandbox). */
const FOR_COMMANDS = new Set(["bash", "shell.run", "process", "*"]);

/**
 * The programs the sandbox makes unrunnable (`bubblewrapSandbox`'s `deniedPrograms`): each one a
 * bash deny rule denies whole — its pattern is the program's name, alone or followed only by `*`
 * words (`rm *`, `rm`, `/usr/bin/curl *`). A rule for part of a program's uses (`git push*`,
 * `rm -rf *`) names no program: stubbing git would deny `git status`, which no rule denies; the
 * text check holds those. A first word with a wildcard names no program. The session's remembered
 * "always reject" answers are left out: they stand for the lines the user saw, not a program.
 */
export function deniedPrograms(rules: readonly SourcedRule[]): string[] {
  const names = new Set<string>();
  for (const rule of rules) {
    if (rule.action !== "deny" || rule.source === "session" || !FOR_COMMANDS.has(rule.permission)) continue;
    const [first, ...rest] = rule.pattern.trim().split(/\s+/);
    if (!first || /[*?[\]{}!\\]/.test(first) || !rest.every((w) => w === "*")) continue;
    names.add(first.split("/").at(-1) ?? first);
  }
  return [...names].filter(Boolean);
}
