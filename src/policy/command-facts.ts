import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { isInsideAny } from "../tool/paths.js";
import type { PolicyCall } from "./call.js";
import { parseBash, type ParsedLine } from "./bash-parse.js";
import { bashFileTargets } from "./bash-targets.js";

/** What the policy reads from a call's command lines before the ruleset judges it. */
export interface CommandFacts {
  /** Each line, parsed (null: it does not parse). */
  lines: Map<string, ParsedLine | null>;
  /** Each parsed line's simple commands, for rules to match one by one. */
  units: Map<string, string[]>;
  /** Some line does not parse: a rule's allow becomes an ask. */
  unparsed: boolean;
  /** Files the lines name outside the workspace roots (policy/bash-targets.ts). */
  outside: { path: string; access: "read" | "write" }[];
  /** Files the lines name that are known only when they run (`> $F`): a rule's allow becomes an ask. */
  unknown: string[];
}

/** The real path of `p`: its nearest existing parent resolved through symlinks, the rest as written. */
function realPath(p: string): string {
  const rest: string[] = [];
  for (let dir = p; ; dir = path.dirname(dir)) {
    try {
      return path.join(realpathSync(dir), ...rest.reverse());
    } catch {
      if (path.dirname(dir) === dir) return p;
      rest.push(path.basename(dir));
    }
  }
}

/**
 * Where a path a command line names lands when it is outside the roots (its real path when a
 * symlink inside the workspace leads out), or null when it stays inside.
 */
function outsideRoots(p: string, roots: readonly string[]): string | null {
  if (!isInsideAny(p, roots)) return p;
  const real = realPath(p);
  return isInsideAny(real, roots) || isInsideAny(real, roots.map(realPath)) ? null : real;
}

/**
 * Parses a call's command lines: their simple commands, and the files they name outside the
 * roots (resolved against the call's working directory: its one path target, else the first root).
 */
export async function commandFacts(call: PolicyCall, roots: readonly string[], home = os.homedir()): Promise<CommandFacts> {
  const facts: CommandFacts = { lines: new Map(), units: new Map(), unparsed: false, outside: [], unknown: [] };
  const cwd = call.targets.paths.length === 1 ? (call.targets.paths[0] as string) : (roots[0] ?? process.cwd());
  for (const line of call.targets.commands) {
    const parsed = await parseBash(line).catch(() => null);
    facts.lines.set(line, parsed);
    if (!parsed || parsed.commands.length === 0) {
      facts.unparsed = true;
      continue;
    }
    facts.units.set(
      line,
      parsed.commands.map((c) => c.text.trim()),
    );
    const files = bashFileTargets(parsed, cwd, home);
    for (const f of files.targets) {
      const where = outsideRoots(f.path, roots);
      if (where && !facts.outside.some((o) => o.path === where && o.access === f.access)) facts.outside.push({ ...f, path: where });
    }
    facts.unknown.push(...files.unknown);
  }
  return facts;
}
