import type { ToolEvent } from "../tool/context.js";
import type { AnyTool, ToolLocation } from "../tool/define.js";
import type { ErrorCode } from "../tool/errors.js";
import type { ToolKind } from "../tool/kinds.js";
import type { CallTargets } from "../tool/targets.js";

// The policy's own contract: what a call looks like to it and what it answers. The host builds
// these from a prepared call; the policy never sees host types.

/** The least the policy needs: which tool, and what the call touches. */
export interface PolicyCall {
  tool: { id: string; kind: ToolKind };
  targets: CallTargets;
}

/** A validated call, as the permission rules, the watchdog and an approval UI see it. */
export interface ToolCallRequest extends PolicyCall {
  callId: string;
  sessionId: string;
  tool: AnyTool;
  args: Record<string, unknown>;
  /** The editor's title for the call (`Edit src/a.ts`). */
  title: string;
  locations: ToolLocation[];
  /** What the preview showed (the diff an edit would make), for the approval request. */
  preview: ToolEvent[];
}

/**
 * What the policy decides. `deny` fails the call with the reason; nothing runs. An `allow` with
 * `unsandboxed` is the user's approval to run the call's commands outside the OS sandbox.
 */
export type Decision =
  | { outcome: "allow"; unsandboxed?: boolean }
  | { outcome: "deny"; reason: string; code?: Extract<ErrorCode, "rejected" | "permission_denied" | "aborted"> };

/** Runs before execute: modes, rules, the watchdog and approvals (ask → the user) plug in here. */
export type Authorize = (call: ToolCallRequest, signal: AbortSignal) => Promise<Decision>;

/** Allows everything: for embedders that decide elsewhere, and for tests. */
export const allowAll: Authorize = async () => ({ outcome: "allow" });
