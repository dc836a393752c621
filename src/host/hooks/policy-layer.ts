import { layersWithHook, type PolicyLayer } from "../../policy/decide.js";
import type { HookOutcome } from "./events.js";

// A tool_call hook's verdict as one more layer of the policy's ordered decision (policy/decide.ts
// puts it in its place: it can refuse or ask anything, and allow only what the mode would ask).

/**
 * The layers for `decide`'s `layers` option, with the hooks' verdict on this call in its place
 * (none: the policy's own). The verdict's `why` names the hook.
 */
export function hookPolicyLayers(outcome: HookOutcome<"tool_call"> | undefined): readonly PolicyLayer[] {
  const decision = outcome?.decision;
  if (!outcome || !decision) return layersWithHook();
  const source = outcome.source ?? "a hook";
  const reason = outcome.reason?.trim();
  const layer: PolicyLayer = ({ call }) => {
    if (decision === "deny")
      return {
        action: "deny",
        layer: "hook",
        code: "permission_denied",
        why: `The ${call.tool.id} call was refused by the hook ${source}: ${reason || "no reason given"}. Do not work around it; ask the user if it should run.`,
      };
    if (decision === "ask") return { action: "ask", layer: "hook", why: `the hook ${source} asks${reason ? `: ${reason}` : ""}` };
    return { action: "allow", layer: "hook", why: `allowed by the hook ${source}${reason ? `: ${reason}` : ""}` };
  };
  return layersWithHook({ [decision]: layer });
}
