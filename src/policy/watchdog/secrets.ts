import path from "node:path";
import { credentialsPath } from "../../config/credentials.js";
import { isInside, isInsideAny } from "../../tool/paths.js";
import type { Word } from "../bash-parse.js";
import { wordPaths } from "./expand.js";
import type { CheckInput, Finding, WatchdogCheck } from "./shell.js";

// Reads (or writes) of secret files outside the workspace: credentials under the home folder and
// the `.env` files of other projects. Judged on a file tool's targets and on every word and
// redirection of a command, whatever the command is (`cat`, `base64`, `cp`, `tar`, …).

/** Under the home folder. */
const HOME_SECRETS = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".config/gh",
  ".netrc",
  ".docker/config.json",
  ".git-credentials",
  ".kube/config",
  ".config/gcloud",
  ".azure",
  ".pgpass",
  ".toolhost/credentials.json",
];

/** `.env`, `.env.local`, `.envrc`; not the templates checked in beside them. */
const ENV_FILE = /^\.env(?!.*\.(?:example|sample|template|dist)$)/;

/** Why a path is a secret the call may not touch, or null. */
export function secretPath(abs: string, home: string, roots: readonly string[]): string | null {
  // The stored login (`toolhost login`), wherever TOOLHOST_HOME puts it.
  if (abs === credentialsPath()) return `${abs} is toolhost's stored login, which holds credentials`;
  for (const rel of HOME_SECRETS) {
    const secret = path.join(home, rel);
    // A workspace inside the secret folder (working on ~/.config/gh itself) may touch its own files.
    if (isInside(abs, secret) && !roots.some((root) => isInside(root, secret) && isInside(abs, root))) {
      return `${abs} is under ~/${rel}, which holds credentials`;
    }
  }
  if (ENV_FILE.test(path.basename(abs)) && !isInsideAny(abs, roots)) return `${abs} is an environment file of another project`;
  return null;
}

/** The paths a word may name: itself, the value of `--opt=value` / `k=value`, a curl-style `@file`. */
function candidates(word: Word): Word[] {
  const out = [word];
  const eq = word.text.indexOf("=");
  if (eq > 0) out.push({ text: word.text.slice(eq + 1), literal: word.literal, tilde: word.text.slice(eq + 1).startsWith("~") });
  for (const w of [...out])
    if (w.text.startsWith("@")) out.push({ text: w.text.slice(1), literal: w.literal, tilde: w.text.startsWith("@~") });
  return out;
}

/** Text that names a secret file, wherever it points (`id_rsa`, `.ssh/`, `.aws/credentials`, `.env`). */
const SECRET_NAME = new RegExp(
  `(?:^|[/"'\\s=:@(])(?:${HOME_SECRETS.map((r) => r.replace(/[.]/g, "\\.")).join("|")}|id_(?:rsa|dsa|ecdsa|ed25519)\\w*|credentials|\\.env(?:\\.[\\w-]+)?)(?:$|[/"'\\s);])`,
);

function firstSecret({ call, commands, home }: CheckInput): Finding | null {
  for (const target of call.targets.paths) {
    const why = secretPath(target, home, call.roots);
    if (why) return { action: "deny", reason: `${why}; secrets outside the workspace stay unread` };
  }
  let asked: Finding | null = null;
  for (const command of commands) {
    const words = [
      ...command.command.words,
      ...command.command.redirects.flatMap((r) => (r.kind === "file" && r.target ? [r.target] : [])),
    ];
    for (const word of words.flatMap(candidates)) {
      const { paths, unknown } = wordPaths(word, command, home);
      for (const p of paths) {
        const why = secretPath(p, home, call.roots);
        if (why) return { action: "deny", reason: `${why}; secrets outside the workspace stay unread` };
      }
      // Where a word points is known only when it runs (`cd "$D"; cat id_rsa`, `git -C "$D"`), and it names a secret.
      if (unknown && SECRET_NAME.test(word.text)) {
        asked ??= { action: "ask", reason: `${word.text} names a secret file, and the watchdog cannot tell where it points` };
      }
    }
    // Code the watchdog cannot read (`python3 -c "open('…/.ssh/id_rsa')"`) that names a secret.
    if (command.unknown) {
      const named = command.command.words.find((w) => SECRET_NAME.test(w.text));
      if (named) asked ??= { action: "ask", reason: `${command.unknown}, and it names a secret file (${named.text})` };
    }
  }
  return asked;
}

export const secretsCheck: WatchdogCheck = {
  name: "secrets",
  check: firstSecret,
};
