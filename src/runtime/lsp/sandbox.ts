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
  const scope = runtime.scope({ fs: { read: ["{workspace}/**", `${launch.root}/**`] }, shell: [{ cmd: "*" }] });
  const wrapped = await transform(
    { file: launch.file, args: launch.args, cwd: launch.cwd, env: launch.env as Record<string, string> },
    { scope, roots: runtime.roots, sidecarDir: runtime.sidecars.dir, toolId: "lsp", backend: "local", unsandboxed: false },
  );
  if (!wrapped.sandboxed) return undefined;
  return { ...launch, file: wrapped.file, args: wrapped.args, cwd: wrapped.cwd, env: { ...process.env, ...wrapped.env } };
}
