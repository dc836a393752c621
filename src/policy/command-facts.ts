import os from "node:os";
import { isInsideAny } from "../tool/paths.js";
import type { PolicyCall } from "./call.js";
import { parseBash, type ParsedLine } from "./bash-parse.js";
import { bashFileTargets } from "./bash-targets.js";
import { normalizeLine } from "./normalize.js";
import { realPath } from "../config/real-path.js";

/**
 * One spelling of a command a line runs, for the rules to match. `primary`: the simple command as
 * written, which an allow must cover; the others (wrappers off, path off, read out of `find
 * -exec`, `xargs`, a wrapped `bash -c`, `eval`, …) are matched by deny and ask rules only.
 */
export interface CommandUnit {
  text: string;
  primary: boolean;
}

/** What the policy reads from a call's command lines before the ruleset judges it. */
export interface CommandFacts {
  /** Each line, parsed (null: it does not parse). */
  lines: Map<string, ParsedLine | null>;
  /** Each parsed line's simple commands in every spelling (policy/normalize.ts), for rules to match one by one. */
  units: Map<string, CommandUnit[]>;
  /** Why parts of the lines cannot be read (`eval "$X"`, `… | sh`, `python3 -c`): unknown spellings. */
  unknownCode: string[];
  /** Some line does not parse: a rule's allow becomes an ask. */
  unparsed: boolean;
  /** Files the lines name outside the workspace roots (policy/bash-targets.ts). */
  outside: { path: string; access: "read" | "write" }[];
  /** Files the lines name that are known only when they run (`> $F`): a rule's allow becomes an ask. */
  unknown: string[];
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
  const facts: CommandFacts = { lines: new Map(), units: new Map(), unparsed: false, outside: [], unknown: [], unknownCode: [] };
  const cwd = call.targets.paths.length === 1 ? (call.targets.paths[0] as string) : (roots[0] ?? process.cwd());
  for (const line of call.targets.commands) {
    const parsed = await parseBash(line).catch(() => null);
    facts.lines.set(line, parsed);
    if (!parsed || parsed.commands.length === 0) {
      facts.unparsed = true;
      continue;
    }
    const units: CommandUnit[] = parsed.commands.map((c) => ({ text: c.text.trim(), primary: true }));
    const normal = await normalizeLine(parsed);
    for (const c of normal.commands) {
      if (c.text && !units.some((u) => u.text === c.text)) units.push({ text: c.text, primary: false });
    }
    facts.units.set(line, units);
    for (const why of normal.unknown) if (!facts.unknownCode.includes(why)) facts.unknownCode.push(why);
    const files = bashFileTargets(parsed, cwd, home);
    for (const f of files.targets) {
      const where = outsideRoots(f.path, roots);
      if (where && !facts.outside.some((o) => o.path === where && o.access === f.access)) facts.outside.push({ ...f, path: where });
    }
    facts.unknown.push(...files.unknown);
  }
  return facts;
}
