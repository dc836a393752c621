// A malformed file is read by several loaders (the config, its permission rules, MCP servers,
// hooks, the budget), and each turns it into a problem of its own: a process says it once.

/** "FILE is not valid JSON (…)", "FILE: FILE is not valid JSON (…)", "FILE: not valid JSON …", "FILE: the permission rules could not be read…". */
const UNREADABLE =
  /^(\S+?)(?:: \1)?:? (?:is )?(?:not valid JSON|not a JSON object|could not be read|the permission rules could not be read)/;
const said = new Set<string>();

/**
 * Whether a problem is new to this process: true the first time, false after. Every way of saying
 * that one file cannot be read counts as the same problem (the first said wins, so a reporter puts
 * the one that says the most first).
 */
export function firstTimeSaid(problem: string): boolean {
  const key = UNREADABLE.exec(problem)?.[1] ?? problem;
  if (said.has(key)) return false;
  said.add(key);
  return true;
}
