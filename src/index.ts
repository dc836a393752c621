/**
 * The public entry point for tool authors and embedders:
 *   import { defineTool, z } from "toolhost";
 */
export { z } from "zod";
export * from "./tool/index.js";
export { invoke, type InvokeOptions, type Authorize, type Decision, type ToolCallRequest } from "./host/invoke.js";
export { ToolRegistry, type RegisteredTool, type ToolSource } from "./host/registry.js";
export { LOCKED_TOOL_IDS, isLockedId } from "./host/locked.js";
export { BUILTIN_TOOLS, builtinRegistry } from "./host/builtins.js";
export { RuntimeSession, type RuntimeSessionOptions } from "./runtime/session.js";
export { NodeFs } from "./runtime/fs/node.js";
export { MemoryFs } from "./runtime/fs/memory.js";
