import { createExtensionLoader, type LoadFile } from "../host/loader.js";

/**
 * The loader the front ends hand to `buildToolset`: an extension file that imports "toolhost"
 * gets this process's own public entry (one runtime, one ToolError), imported with the first
 * extension file so a session without any never loads it. `host/` sits below the public entry
 * and cannot import it; this is where the two meet.
 */
export function extensionLoader(): LoadFile {
  return createExtensionLoader({ api: () => import("../public.js") });
}
