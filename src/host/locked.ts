/** The RFC's locked fundamental tool ids. No extension may take one. */
export const LOCKED_TOOL_IDS = [
  "read",
  "write",
  "edit",
  "glob",
  "grep",
  "bash",
  "todo",
  "task",
  "question",
  "web_search",
  "web_fetch",
  "skill",
  "tool_search",
] as const;

export type LockedToolId = (typeof LOCKED_TOOL_IDS)[number];

const locked: ReadonlySet<string> = new Set(LOCKED_TOOL_IDS);

export function isLockedId(id: string): id is LockedToolId {
  return locked.has(id);
}
