import { isInside, isInsideAny } from "../../tool/paths.js";
import type { Word } from "../bash-parse.js";
import { operands, optionText, wordPath, type CheckInput, type Finding, type ShellCommand, type WatchdogCheck } from "./shell.js";

// Recursive deletes of anything but what lies inside the workspace: `rm -r` / `rm -rf` (in any
// spelling) of `/`, `~`, `$HOME`, a `..` escape, a workspace root itself or any path outside, and
// `find … -delete` (or `-exec rm`) starting outside. A path the watchdog cannot work out
// (`rm -rf "$DIR"`) is asked about.

function recursive(args: readonly Word[]): boolean {
  return args.some((w) => {
    const option = optionText(w);
    if (!option) return false;
    return option === "--recursive" || (!option.startsWith("--") && /[rR]/.test(option));
  });
}

/** What is wrong with deleting under `word`, if anything. */
function judge(word: Word, command: ShellCommand, { call, home }: CheckInput, what: string, whole: boolean): Finding | null {
  const named = wordPath(word, command.cwd, home);
  if (!named) return { action: "ask", reason: `${what} ${word.text}, and the watchdog cannot tell where that is` };
  const target = named.path;
  const label = target === "/" ? "/ (the whole system)" : target === home ? `${target} (the home folder)` : target;
  if (!isInsideAny(target, call.roots)) return { action: "deny", reason: `${what} ${label}, outside the workspace` };
  // The workspace itself (`rm -rf .`), not only what is in it.
  if (whole && named.exact && call.roots.some((root) => isInside(root, target))) {
    return { action: "deny", reason: `${what} ${label}, a whole workspace root` };
  }
  return null;
}

function rm(command: ShellCommand, input: CheckInput): Finding | null {
  if (!recursive(command.args)) return null;
  // `find … -exec rm -r {} \;`: find's own check judges where it starts.
  const found = command.via.some((v) => v.startsWith("find "));
  for (const word of operands(command.args)) {
    if (found && word.text.includes("{}")) continue;
    const finding = judge(word, command, input, "rm -r removes", true);
    if (finding) return finding;
  }
  return null;
}

const FIND_ACTIONS = /^-(?:delete|exec|execdir|ok|okdir)$/;

function find(command: ShellCommand, input: CheckInput): Finding | null {
  const { args } = command;
  const deletes = args.some(
    (w, i) => w.text === "-delete" || (FIND_ACTIONS.test(w.text) && /^(?:.*\/)?(?:rm|shred|unlink)$/.test(args[i + 1]?.text ?? "")),
  );
  if (!deletes) return null;
  const starts: Word[] = [];
  let i = 0;
  while (i < args.length && /^-[HLP]$|^-O\d$|^-D$/.test(args[i]?.text ?? "")) i += args[i]?.text === "-D" ? 2 : 1;
  for (; i < args.length; i++) {
    const word = args[i] as Word;
    if (word.literal && (word.text.startsWith("-") || word.text === "(" || word.text === "!")) break;
    starts.push(word);
  }
  for (const word of starts.length ? starts : [{ text: ".", literal: true, tilde: false }]) {
    const finding = judge(word, command, input, "find deletes under", false);
    if (finding) return finding;
  }
  return null;
}

export const destructiveCheck: WatchdogCheck = {
  name: "rm-outside",
  check(input): Finding | null {
    let asked: Finding | null = null;
    for (const command of input.commands) {
      const finding = command.name === "rm" ? rm(command, input) : command.name === "find" ? find(command, input) : null;
      if (finding?.action === "deny") return finding;
      asked ??= finding;
    }
    return asked;
  },
};
