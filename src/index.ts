/**
 * The public entry point for tool authors and embedders:
 *   import { defineTool, z, ToolError } from "toolhost";
 * Extension files get the same API when they import "toolhost" (the loader maps it to the
 * running toolhost), so they need no node_modules of their own.
 */
export { z } from "zod";
export * from "./public.js";
