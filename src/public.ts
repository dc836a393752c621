/**
 * Everything of the public entry except `z`. The extension loader serves this plus a lazily
 * loaded zod as the "toolhost" module, so the CLI bundle's start-up chunk keeps only the zod
 * code the SDK uses (a re-exported `z` namespace would pull in all of zod).
 */
export * from "./tool/index.js";
export {
  invoke,
  prepareCall,
  runPreparedCall,
  type CallOptions,
  type InvokeOptions,
  type PreparedCall,
  type ToolCallInfo,
} from "./host/invoke.js";
export type { Authorize, Decision, PolicyCall, ToolCallRequest } from "./policy/call.js";
export { ToolRegistry, type RegisteredTool, type ToolSource } from "./host/registry.js";
export { LOCKED_TOOL_IDS, isLockedId } from "./host/locked.js";
export { BUILTIN_TOOLS, builtinRegistry } from "./host/builtins.js";
export { projectToolDir } from "./host/discovery.js";
export type { Toolset } from "./host/toolset.js";
export * from "./host/toolset-report.js";
export { selectProfileName } from "./config/profile-name.js";
export { loadProfile, listProfiles, type Profile } from "./host/profiles.js";
export type { PermissionRule } from "./policy/rules.js";
export type { Watchdog, WatchdogCall, WatchdogManifest, WatchdogVerdict } from "./policy/watchdog.js";
export { isTrusted, trust, untrust } from "./host/trust.js";
export type { LoadProblem } from "./host/loader.js";
export type { HooksExport, HookAnswers } from "./host/hooks/extension.js";
export type { HookEventName, HookInput, HookInputs } from "./host/hooks/events.js";
export { RuntimeSession, type RuntimeSessionOptions } from "./runtime/session.js";
export { NodeFs } from "./runtime/fs/node.js";
export { MemoryFs } from "./runtime/fs/memory.js";
