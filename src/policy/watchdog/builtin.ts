import os from "node:os";
import { parseBash, type ParsedLine } from "../bash-parse.js";
import { ALLOW, strongerVerdict, type Watchdog, type WatchdogVerdict } from "../watchdog.js";
import { destructiveCheck } from "./destructive.js";
import { exfilCheck } from "./exfil.js";
import { forcePushCheck, gitInternalsCheck } from "./git.js";
import { networkCheck } from "./network.js";
import { projectConfigCheck } from "./project-config.js";
import { secretsCheck } from "./secrets.js";
import { shellCommands, type WatchdogCheck } from "./shell.js";

/** The built-in checks, each a small named rule (see their files). */
export const BUILTIN_CHECKS: readonly WatchdogCheck[] = [
  exfilCheck,
  secretsCheck,
  destructiveCheck,
  gitInternalsCheck,
  forcePushCheck,
  networkCheck,
  projectConfigCheck,
];

export interface BuiltinWatchdogOptions {
  /** The home folder `~` and the secret paths are under; default the user's (`$HOME`). */
  home?: string;
  checks?: readonly WatchdogCheck[];
}

/**
 * The built-in watchdog: every command line of the call is parsed (policy/bash-parse.ts) and
 * each check looks at its simple commands and at the call's path targets. A line that does not
 * parse cannot be checked, so it is asked about.
 */
export function builtinWatchdog(options: BuiltinWatchdogOptions = {}): Watchdog {
  const checks = options.checks ?? BUILTIN_CHECKS;
  return async (call) => {
    const home = options.home ?? os.homedir();
    const lines: ParsedLine[] = [];
    for (const line of call.targets.commands) {
      const parsed = await parseBash(line).catch(() => null);
      if (!parsed) {
        if (/\/dev\/(?:tcp|udp)\//.test(line)) {
          return { action: "deny", check: "exfil", reason: "the line opens a network socket (/dev/tcp): data would leave this machine" };
        }
        return { action: "ask", check: "parse", reason: `the command line does not parse, so the watchdog cannot check it: ${line}` };
      }
      lines.push(parsed);
    }
    // bash names its working directory as its path target; other tools' commands run in the workspace.
    const cwd = (call.tool.id === "bash" ? call.targets.paths[0] : undefined) ?? call.roots[0] ?? process.cwd();
    const input = { call, commands: await shellCommands(lines, cwd, home), home };
    let verdict: WatchdogVerdict = ALLOW;
    for (const check of checks) {
      const finding = check.check(input);
      if (finding) verdict = strongerVerdict(verdict, { ...finding, check: check.name });
      if (verdict.action === "deny") break;
    }
    return verdict;
  };
}
