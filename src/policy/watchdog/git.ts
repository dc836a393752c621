import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { isReadOnlyKind } from "../../tool/kinds.js";
import type { Word } from "../bash-parse.js";
import { readGitPointer, type GitPointer } from "../../config/git-pointer.js";
import { realPath } from "../../config/real-path.js";
import { isWriteRedirect, operands, wordPath, type CheckInput, type Finding, type ShellCommand, type WatchdogCheck } from "./shell.js";

// Git: writes into a repository's `.git/` internals (hooks run code, config can too) by file tools
// or by commands other than git itself, and force pushes (`--force`, `-f`, `--force-with-lease`,
// `+ref`) or deletions of the default branch. Git commands themselves are fine.

const inGitDir = (abs: string) => abs.split(path.sep).includes(".git");

/** Commands that write (or remove) every path operand. */
const WRITES_ALL = new Set(["mv", "rm", "rmdir", "tee", "touch", "truncate", "chmod", "chown", "chgrp", "shred", "unlink", "mkdir"]);
/** Commands that write their last operand (or `-t DIR`). */
const WRITES_LAST = new Set(["cp", "install", "ln", "rsync"]);
/** Commands that write their operands when given `-i` (in place). */
const IN_PLACE = new Set(["sed", "perl", "ruby"]);

function writtenWords(command: ShellCommand): Word[] {
  const { name, args } = command;
  const redirected = command.command.redirects.filter(isWriteRedirect).flatMap((r) => (r.target ? [r.target] : []));
  if (!name || name === "git") return redirected;
  const written: Word[] = [...redirected];
  if (WRITES_ALL.has(name)) written.push(...operands(args));
  else if (WRITES_LAST.has(name)) {
    const target = args.findIndex((w) => w.text === "-t" || w.text.startsWith("--target-directory"));
    const files = operands(args, ["-t", "-m", "-o", "-g", "-S"]);
    if (target >= 0) {
      const word = args[target] as Word;
      const dir = word.text.includes("=") ? { ...word, text: word.text.slice(word.text.indexOf("=") + 1) } : args[target + 1];
      if (dir) written.push(dir);
    } else if (files.length > 1) written.push(files.at(-1) as Word);
  } else if (IN_PLACE.has(name) && args.some((w) => /^-[a-zA-Z]*i/.test(w.text) || w.text.startsWith("--in-place"))) {
    written.push(...operands(args, ["-e", "-f"]).slice(name === "sed" && !args.some((w) => w.text === "-e") ? 1 : 0));
  } else if (name === "dd") {
    written.push(...args.filter((w) => w.text.startsWith("of=")).map((w) => ({ ...w, text: w.text.slice(3) })));
  }
  return written;
}

export const gitInternalsCheck: WatchdogCheck = {
  name: "git-internals",
  check({ call, commands, home }): Finding | null {
    if (!isReadOnlyKind(call.tool.kind) && call.tool.kind !== "execute") {
      const target = call.targets.paths.find((p) => inGitDir(p) || inGitDir(realPath(p)));
      if (target) return { action: "deny", reason: `${call.tool.id} would write ${target}, inside .git/ (use git commands instead)` };
    }
    for (const command of commands) {
      for (const word of writtenWords(command)) {
        const named = wordPath(word, command.cwd, home);
        if (named && inGitDir(named.path)) {
          return {
            action: "deny",
            reason: `${command.name ?? "the command"} would write ${named.path}, inside .git/ (use git commands instead)`,
          };
        }
      }
    }
    return null;
  },
};

// ── force push ──────────────────────────────────────────────────────────────────────────────────

const GIT_GLOBAL_VALUES = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"]);
const PUSH_VALUES = ["-o", "--push-option", "--repo", "--receive-pack", "--exec"];

function readText(file: string): string | null {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
}

/** The repository's git dir and common dir from a folder inside it, or null: the first `.git` entry up from it. */
function gitDirs(start: string): GitPointer | null {
  let dir = start;
  for (;;) {
    const dotGit = path.join(dir, ".git");
    if (existsSync(dotGit)) return readGitPointer(dotGit) ?? null;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

const symbolic = (text: string | null, prefix: string) => (text?.startsWith(`ref: ${prefix}`) ? text.slice(5 + prefix.length) : null);

/** The default branches (main, master and the remote's HEAD) and the current branch, as far as cheaply known. */
function repoBranches(dir: string | null, remote: string): { defaults: Set<string>; current: string | null } {
  const defaults = new Set(["main", "master"]);
  const dirs = dir ? gitDirs(dir) : null;
  if (!dirs) return { defaults, current: null };
  const remoteHead = symbolic(readText(path.join(dirs.commonDir, "refs", "remotes", remote, "HEAD")), `refs/remotes/${remote}/`);
  if (remoteHead) defaults.add(remoteHead);
  return { defaults, current: symbolic(readText(path.join(dirs.gitDir, "HEAD")), "refs/heads/") };
}

function forcePush(command: ShellCommand, home: string): Finding | null {
  const words = command.args;
  let i = 0;
  let dir = command.cwd;
  while (i < words.length && words[i]?.text.startsWith("-")) {
    const word = words[i] as Word;
    if (word.text === "-C") {
      const next = words[i + 1];
      dir = next ? (wordPath(next, dir, home)?.path ?? null) : dir;
    }
    i += GIT_GLOBAL_VALUES.has(word.text) ? 2 : 1;
  }
  if (words[i]?.text !== "push") return null;
  const args = words.slice(i + 1);
  const flags = args.filter((w) => w.literal && w.text.startsWith("-")).map((w) => w.text);
  const forced = flags.some((f) => f === "--force" || f.startsWith("--force-with-lease") || /^-[a-zA-Z]*f/.test(f));
  const deletes = flags.some((f) => f === "--delete" || /^-[a-zA-Z]*d/.test(f));
  const everything = flags.some((f) => f === "--all" || f === "--mirror" || f === "--branches");
  const [remote, ...refspecs] = operands(args, PUSH_VALUES);
  const { defaults, current } = repoBranches(dir, remote?.literal ? remote.text : "origin");
  const risky: { ref: string | null; force: boolean }[] = [];
  for (const spec of refspecs.length ? refspecs : [null]) {
    if (spec && !spec.literal) {
      risky.push({ ref: null, force: forced || deletes || spec.text.startsWith("+") });
      continue;
    }
    const text = spec?.text ?? "HEAD";
    const plus = text.startsWith("+");
    const body = plus ? text.slice(1) : text;
    const colon = body.indexOf(":");
    const src = colon >= 0 ? body.slice(0, colon) : body;
    let dst = colon >= 0 ? body.slice(colon + 1) : body;
    if (dst === "HEAD" || (colon < 0 && src === "HEAD")) dst = current ?? "";
    dst = dst.replace(/^refs\/heads\//, "");
    risky.push({ ref: dst || null, force: forced || deletes || plus || (colon >= 0 && src === "") });
  }
  if (everything && (forced || deletes)) return { action: "deny", reason: `a force push of every branch includes the default branch` };
  for (const { ref, force } of risky) {
    if (!force) continue;
    if (ref === null)
      return { action: "deny", reason: "a force push to a branch the watchdog cannot work out (it may be the default branch)" };
    if (defaults.has(ref))
      return { action: "deny", reason: `a force push (or delete) of ${ref}, the default branch, rewrites shared history` };
  }
  const other = risky.find((r) => r.force);
  return other ? { action: "ask", reason: `a force push (or delete) of ${other.ref} rewrites its history on the remote` } : null;
}

export const forcePushCheck: WatchdogCheck = {
  name: "force-push",
  check({ commands, home }: CheckInput): Finding | null {
    let asked: Finding | null = null;
    for (const command of commands) {
      if (command.name !== "git") continue;
      const finding = forcePush(command, home);
      if (finding?.action === "deny") return finding;
      asked ??= finding;
    }
    return asked;
  },
};
