/**
 * The public entry point for tool authors and embedders:
 *   import { defineTool, z, ToolError } from "toolhost";
 * Extension files get the same API when they import "toolhost" (the loader maps it to the
 * running toolhost), so they need no node_modules of their own.
 */
import { extensionLoader } from "./agent/extension-loader.js";
import { buildToolset as buildWithLoader, type Toolset, type ToolsetOptions as HostToolsetOptions } from "./host/toolset.js";

export { z } from "zod";
export * from "./public.js";

/** Where a session's tools come from; see `buildToolset`. */
export type ToolsetOptions = Omit<HostToolsetOptions, "loader">;

/**
 * A session's tools (builtins, the profile's, the trusted project's and config `toolDirs`),
 * with the report of what was found. Extension files that import "toolhost" get this entry.
 */
export function buildToolset(options: ToolsetOptions): Promise<Toolset> {
  return buildWithLoader({ ...options, loader: extensionLoader() });
}
