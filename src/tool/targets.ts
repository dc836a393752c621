import type { ToolContext } from "./context.js";
import { isReadOnlyKind, type ToolKind } from "./kinds.js";
import type { RequirementSet } from "./requirements.js";

/**
 * What a call touches, resolved the way the runtime will touch it: the permission policy
 * matches on these and never guesses from argument names.
 */
export interface CallTargets {
  /** Absolute paths, resolved through `ctx.fs.resolve` (so `~`, `@` and relative paths agree with the runtime). */
  paths: string[];
  /** Command lines the call runs. */
  commands: string[];
  /** Network hosts the call reaches. */
  hosts: string[];
  /**
   * The call asks to run its commands outside the OS sandbox (bash's `sandbox: "off"`). The
   * policy then always asks, and only an approved call is granted it.
   */
  unsandboxed?: boolean;
  /**
   * This call of a tool of a changing kind only reads: the `process` tool's list, get and output
   * look at toolhost's own processes. The policy then treats it as a read-only kind (no mode asks,
   * it runs no commands). Ignored on a call that names command lines or leaves the sandbox.
   */
  readOnly?: boolean;
}

export const NO_TARGETS: CallTargets = Object.freeze({ paths: [], commands: [], hosts: [] }) as CallTargets;

/** Fills the lists a tool's `targets` hook left out. */
export function completeTargets(partial: Partial<CallTargets> | undefined): CallTargets {
  return {
    paths: [...(partial?.paths ?? [])],
    commands: [...(partial?.commands ?? [])],
    hosts: [...(partial?.hosts ?? [])],
    ...(partial?.unsandboxed === true ? { unsandboxed: true } : {}),
    ...(partial?.readOnly === true ? { readOnly: true } : {}),
  };
}

/**
 * The targets of a tool without its own hook: a string `path` argument of a tool that declares
 * file access, resolved for writing when the tool's kind changes things, for reading otherwise.
 * A path the tool's scope refuses throws here, before anyone is asked about it.
 */
export async function defaultTargets(
  tool: { kind: ToolKind; requires: RequirementSet },
  args: Record<string, unknown>,
  ctx: Pick<ToolContext, "fs">,
): Promise<CallTargets> {
  const raw = args.path;
  const declaresFs = (tool.requires.fs?.read?.length ?? 0) > 0 || (tool.requires.fs?.write?.length ?? 0) > 0;
  if (typeof raw !== "string" || raw.trim() === "" || !declaresFs) return completeTargets(undefined);
  const writes = !isReadOnlyKind(tool.kind) && (tool.requires.fs?.write?.length ?? 0) > 0;
  return completeTargets({ paths: [await ctx.fs.resolve(raw, writes ? "write" : "read")] });
}
