/** The ACP tool kinds. The kind drives the editor's icon, diff renderer and terminal pane. */
export const TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"] as const;

export type ToolKind = (typeof TOOL_KINDS)[number];

/** Kinds that never change the world: calls of these kinds may run in parallel and need no approval by default. */
export const READ_ONLY_KINDS: ReadonlySet<ToolKind> = new Set<ToolKind>(["read", "search", "think", "fetch"]);

export function isReadOnlyKind(kind: ToolKind): boolean {
  return READ_ONLY_KINDS.has(kind);
}

/** What a call of this kind does to the world, unless the tool says otherwise (seed 003's side-effect metadata). */
export function kindEffects(kind: ToolKind): { sideEffect: boolean; idempotent: boolean } {
  return isReadOnlyKind(kind) ? { sideEffect: false, idempotent: true } : { sideEffect: true, idempotent: false };
}
