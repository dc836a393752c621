import path from "node:path";
import picomatch from "picomatch";
import type { ArgPattern, RequirementSet, ShellRunRequirement } from "../tool/requirements.js";

/** Values of the RFC's pattern variables. A variable with no values expands to nothing (fail closed). */
export interface ScopeVariables {
  workspace: string[];
  "ad-hoc": string[];
  "user-data": string[];
  [name: string]: string[];
}

export class ScopeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ScopeError";
  }
}

const VARIABLE = /\{([a-zA-Z][a-zA-Z0-9_-]*)\}/g;

/**
 * Expands `{workspace}` & co. An unknown variable throws (a typo must not widen or silently
 * empty a scope); a known variable with no value removes the pattern.
 */
export function expandPattern(pattern: string, vars: ScopeVariables): string[] {
  let results = [pattern];
  for (const match of pattern.matchAll(VARIABLE)) {
    const name = match[1] as string;
    const values = vars[name];
    if (values === undefined) throw new ScopeError(`Undefined variable {${name}} in pattern ${JSON.stringify(pattern)}`);
    const next: string[] = [];
    for (const partial of results) for (const value of values) next.push(partial.split(`{${name}}`).join(value));
    results = next;
  }
  return results;
}

/** A compiled set of path patterns. */
export class PathMatcher {
  private readonly matchers: ((p: string) => boolean)[];
  /** The literal directories the patterns are rooted at, for error messages and search roots. */
  readonly roots: string[];

  constructor(
    readonly patterns: string[],
    base: string,
  ) {
    const absolute = patterns.map((p) => toPosix(path.isAbsolute(p) ? p : path.join(base, p)));
    this.roots = [...new Set(absolute.map(literalPrefix))];
    this.matchers = absolute.map((pattern) => {
      const isMatch = picomatch(pattern, { dot: true });
      // "dir/**" also covers "dir" itself; a plain directory pattern covers everything below it.
      const base = pattern.endsWith("/**") ? pattern.slice(0, -3) : picomatch.scan(pattern).isGlob ? null : pattern;
      return (candidate: string) =>
        isMatch(candidate) || (base !== null && (candidate === base || candidate.startsWith(base.endsWith("/") ? base : `${base}/`)));
    });
  }

  matches(absolutePath: string): boolean {
    const candidate = toPosix(absolutePath);
    return this.matchers.some((m) => m(candidate));
  }

  get empty(): boolean {
    return this.matchers.length === 0;
  }
}

function toPosix(p: string): string {
  return p.split(path.sep).join("/");
}

/** The directory part of a pattern before its first glob segment. */
function literalPrefix(pattern: string): string {
  const scan = picomatch.scan(pattern);
  const base = scan.isGlob ? scan.base : pattern;
  return base === "" ? "/" : base;
}

export interface CompiledScope {
  read: PathMatcher;
  write: PathMatcher;
  hosts: ((host: string) => boolean)[];
  hostPatterns: string[];
  shell: ShellRunRequirement[];
  capabilities: Set<string>;
}

/** Compiles a RequirementSet against variable values. Throws ScopeError on an undefined variable. */
export function compileScope(requires: RequirementSet, vars: ScopeVariables, base: string): CompiledScope {
  const expand = (patterns: string[] | undefined) => (patterns ?? []).flatMap((p) => expandPattern(p, vars));
  const hostPatterns = expand(requires.net?.hosts);
  return {
    read: new PathMatcher(expand(requires.fs?.read), base),
    write: new PathMatcher(expand(requires.fs?.write), base),
    hosts: hostPatterns.map(hostMatcher),
    hostPatterns,
    shell: requires.shell ?? [],
    capabilities: new Set(requires.capabilities ?? []),
  };
}

function argMatches(pattern: ArgPattern, arg: string): boolean {
  if (typeof pattern === "string") return pattern === arg;
  if ("wildcard" in pattern) return true;
  return arg.startsWith(pattern.prefix);
}

/** Whether argv is allowed by one of the scope's shell requirements. */
export function shellAllowed(scope: CompiledScope, cmd: string, args: string[]): boolean {
  const name = path.basename(cmd);
  return scope.shell.some((req) => {
    if (req.cmd !== "*" && req.cmd !== name && req.cmd !== cmd) return false;
    if (!req.args) return true;
    return req.args.length === args.length && req.args.every((p, i) => argMatches(p, args[i] as string));
  });
}

/** Matches a host name (lower case) against one `net.hosts` pattern (`*.github.com`). */
export function hostMatcher(pattern: string): (host: string) => boolean {
  return picomatch(pattern.toLowerCase(), { dot: true });
}

export function hostAllowed(scope: CompiledScope, host: string): boolean {
  const h = host.toLowerCase();
  return scope.hosts.some((m) => m(h));
}
