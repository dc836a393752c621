import type { ToolKind } from "../tool/kinds.js";
import type { RequirementSet } from "../tool/requirements.js";
import type { CallTargets } from "../tool/targets.js";
import type { PermissionRule } from "./rules.js";

// The watchdog (RFC "The watchdog"): a pre-execute look at every call, after the capability check
// and the permission rules' deny. It refuses categories of arguments the scopes cannot express
// (exfiltration, secrets, rm -rf outside the workspace, …). It can refuse or ask about what the
// rules allow; it never allows what they or the capability check refused.

export type WatchdogVerdict =
  { action: "allow" } | { action: "deny"; reason: string; check: string } | { action: "ask"; reason: string; check: string };

/** The manifest as the policy sees it: the active profile's name, requirements and permission rules. */
export interface WatchdogManifest {
  profile: string;
  requires: RequirementSet;
  permissions: readonly PermissionRule[];
}

/** What the watchdog sees of one call. */
export interface WatchdogCall {
  tool: { id: string; kind: ToolKind };
  /** The validated arguments. */
  args: Record<string, unknown>;
  /** What the call touches, resolved as the runtime will touch it. */
  targets: CallTargets;
  manifest: WatchdogManifest;
  sessionId: string;
  /** The workspace roots (absolute); the first is the workspace. */
  roots: readonly string[];
  /** Whether commands run in the OS sandbox (no network, read-only system); true when unknown. */
  sandboxed: boolean;
}

export type Watchdog = (call: WatchdogCall, signal: AbortSignal) => Promise<WatchdogVerdict>;

export const ALLOW: WatchdogVerdict = Object.freeze({ action: "allow" });

const RANK = { allow: 0, ask: 1, deny: 2 } as const;

/** The stronger of two verdicts: deny beats ask beats allow; the first wins a tie. */
export function strongerVerdict(a: WatchdogVerdict, b: WatchdogVerdict): WatchdogVerdict {
  return RANK[b.action] > RANK[a.action] ? b : a;
}

/** Whether a value is a well-formed verdict (a profile watchdog's answer is checked before use). */
export function isWatchdogVerdict(value: unknown): value is WatchdogVerdict {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.action === "allow") return true;
  return (
    (v.action === "deny" || v.action === "ask") && typeof v.reason === "string" && v.reason.trim() !== "" && typeof v.check === "string"
  );
}

/**
 * Several watchdogs as one: each sees the call, and deny beats ask beats allow. One that throws
 * or answers garbage denies (fail closed).
 */
export function composeWatchdogs(...watchdogs: readonly (Watchdog | undefined)[]): Watchdog {
  const present = watchdogs.filter((w): w is Watchdog => w !== undefined);
  return async (call, signal) => {
    const verdicts = await Promise.all(
      present.map(async (watchdog): Promise<WatchdogVerdict> => {
        try {
          const verdict = await watchdog(call, signal);
          return isWatchdogVerdict(verdict)
            ? verdict
            : { action: "deny", check: "watchdog", reason: "a watchdog answered something that is not a verdict" };
        } catch (err) {
          return { action: "deny", check: "watchdog", reason: `a watchdog failed: ${err instanceof Error ? err.message : String(err)}` };
        }
      }),
    );
    return verdicts.reduce(strongerVerdict, ALLOW);
  };
}
