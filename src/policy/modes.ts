import path from "node:path";
import type { ToolKind } from "../tool/kinds.js";
import { isReadOnlyKind } from "../tool/kinds.js";

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

/** What a call looks like to the policy (no host types: policy sits below host). */
export interface PolicyCall {
  tool: { id: string; kind: ToolKind };
  args: Record<string, unknown>;
}

export type PolicyAction = "allow" | "deny" | "ask";

/** The path a file-editing call targets, when it has one. */
export function targetPath(call: PolicyCall, workspace: string): string | null {
  const raw = call.args.path;
  return typeof raw === "string" && raw !== "" ? path.resolve(workspace, raw) : null;
}

function insideWorkspace(abs: string, workspace: string): boolean {
  const rel = path.relative(workspace, abs);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** The session mode's verdict on a call, before remembered answers are consulted. */
export function modeAction(mode: ModeId, call: PolicyCall, workspace: string): PolicyAction {
  if (isReadOnlyKind(call.tool.kind)) return "allow";
  switch (mode) {
    case "read-only":
      return "deny";
    case "ask":
      return "ask";
    case "accept-edits": {
      if (call.tool.kind !== "edit") return "ask";
      const target = targetPath(call, workspace);
      return target !== null && insideWorkspace(target, workspace) ? "allow" : "ask";
    }
    case "full":
      return "allow";
  }
}
