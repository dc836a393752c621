import { realpathSync } from "node:fs";
import path from "node:path";
import type { RuntimeSession } from "../session.js";
import type { LspLaunch } from "./client.js";

/**
 * A language server's launch inside the session's OS sandbox (an untrusted project's server runs
 * project code): the workspace readable, the sandbox's own writable folders (its temp folder holds
 * the server's caches), no network. Undefined when the session has no sandbox that wraps it (off,
 * or none can run here): the server then does not start.
 */
export async function sandboxedLaunch(runtime: RuntimeSession, launch: LspLaunch): Promise<LspLaunch | undefined> {
  const transform = runtime.spawnTransform;
  if (!transform) return undefined;
  // The server's own files too: the node_modules folder it is installed in (its typescript beside it).
  const read = ["{workspace}/**", `${launch.root}/**`, ...installFolder(launch.file).map((dir) => `${dir}/**`)];
  const scope = runtime.scope({ fs: { read }, shell: [{ cmd: "*" }] });
  const wrapped = await transform(
    { file: launch.file, args: launch.args, cwd: launch.cwd, env: launch.env as Record<string, string> },
    { scope, roots: runtime.roots, sidecarDir: runtime.sidecars.dir, toolId: "lsp", backend: "local", unsandboxed: false },
  );
  if (!wrapped.sandboxed) return undefined;
  return { ...launch, file: wrapped.file, args: wrapped.args, cwd: wrapped.cwd, env: { ...process.env, ...wrapped.env }, sandboxed: true };
}

/** The outermost node_modules folder above the command's real file, else its folder. */
function installFolder(file: string): string[] {
  let real: string;
  try {
    real = realpathSync(file);
  } catch {
    return [];
  }
  const parts = real.split(path.sep);
  const at = parts.indexOf("node_modules");
  return [at > 0 ? parts.slice(0, at + 1).join(path.sep) : path.dirname(real)];
}
