import type { ToolKind } from "../tool/kinds.js";
import { isReadOnlyKind } from "../tool/kinds.js";
import { isInsideAny } from "../tool/paths.js";
import type { PolicyCall } from "./call.js";

export const MODE_IDS = ["read-only", "ask", "accept-edits", "full"] as const;
export type ModeId = (typeof MODE_IDS)[number];
export const DEFAULT_MODE: ModeId = "ask";

export interface ModeInfo {
  id: ModeId;
  name: string;
  description: string;
}

export const MODES: readonly ModeInfo[] = [
  { id: "read-only", name: "Read only", description: "Reads and searches; every tool that changes something is refused" },
  { id: "ask", name: "Ask", description: "Reads and searches run; edits and commands ask first" },
  { id: "accept-edits", name: "Accept edits", description: "Edits inside the workspace run; commands still ask" },
  { id: "full", name: "Full access", description: "Everything runs without asking" },
];

export function isModeId(value: string): value is ModeId {
  return (MODE_IDS as readonly string[]).includes(value);
}

export type PolicyAction = "allow" | "deny" | "ask";

/**
 * Locked tools whose whole job is to talk to the user (question): they change nothing, and the
 * user answering is the approval, so no mode refuses them or asks before them. Locked ids: no
 * extension can take one.
 */
const USER_FACING_TOOLS: ReadonlySet<string> = new Set(["question"]);

/** Whether the model is offered tools of this kind (and id) in this mode: read-only mode hides what it would refuse. */
export function isKindVisible(mode: ModeId, kind: ToolKind, id?: string): boolean {
  return mode !== "read-only" || isReadOnlyKind(kind) || (id !== undefined && USER_FACING_TOOLS.has(id));
}

/**
 * Whether the call only reads: a tool of a read-only kind, or a call whose targets say so (the
 * `process` tool's list, get and output), unless it names command lines or leaves the sandbox.
 */
export function readsOnly(call: PolicyCall): boolean {
  if (isReadOnlyKind(call.tool.kind)) return true;
  return call.targets.readOnly === true && call.targets.commands.length === 0 && call.targets.unsandboxed !== true;
}

/** The session mode's verdict on a call, before remembered answers are consulted. */
export function modeAction(mode: ModeId, call: PolicyCall, roots: readonly string[]): PolicyAction {
  if (USER_FACING_TOOLS.has(call.tool.id)) return "allow";
  // A read-only call that reaches a host (web_fetch) changes nothing here, but its URL can carry
  // data out: every mode but full asks (an allow rule or an "always" answer for the host covers it).
  if (readsOnly(call) && call.targets.hosts.length > 0) return mode === "full" ? "allow" : "ask";
  if (readsOnly(call)) return "allow";
  switch (mode) {
    case "read-only":
      return "deny";
    case "ask":
      return "ask";
    case "accept-edits": {
      // Only an edit that says which files it changes, all of them inside the workspace.
      if (call.tool.kind !== "edit" || call.targets.paths.length === 0) return "ask";
      return call.targets.paths.every((p) => isInsideAny(p, roots)) ? "allow" : "ask";
    }
    case "full":
      return "allow";
  }
}
