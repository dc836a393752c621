import { realpathSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "../../config/real-path.js";
import { isInsideAny } from "../../tool/paths.js";
import type { SessionSandboxState } from "../sandbox/session-sandbox.js";
import type { RuntimeSession } from "../session.js";
import type { LspLaunch } from "./client.js";

// Language servers run workspace code whether the project is trusted or not:
// node_modules/.bin/typescript-language-server, node_modules/typescript/lib/tsserver.js and
// pyright's config are workspace files a sandboxed command or an accepted write may have changed.
// So every server runs in the session's sandbox, confined (`SpawnContext.confined`): the workspace
// read-only, one writable folder of the session's servers outside it (HOME, XDG_CACHE_HOME and
// TMPDIR point there; removed when the session closes), no network. Without a sandbox, none runs.

/** How the manager gets a server's launch: wrapped, or the reason it cannot start. */
export interface LspLauncher {
  launch(launch: LspLaunch): Promise<LspLaunch | { reason: string }>;
  /** Removes what the launches left (the cache folder), after the servers stopped. */
  close?(): Promise<void>;
}

export interface LspSandboxOptions {
  runtime: RuntimeSession;
  /** The session's sandbox, for the reason none can run (off, unavailable). */
  state?: () => Promise<SessionSandboxState>;
  /** Where the cache folder is made (default: the system's temp folder). */
  tmpRoot?: string;
}

export class LspSandbox implements LspLauncher {
  private cache: Promise<string> | undefined;

  constructor(private readonly options: LspSandboxOptions) {}

  /** The servers' writable folder: one per session, 0700, made on the first launch. */
  private cacheDir(): Promise<string> {
    this.cache ??= fsp.mkdtemp(path.join(this.options.tmpRoot ?? os.tmpdir(), "toolhost-lsp-")).then((dir) => fsp.realpath(dir));
    return this.cache;
  }

  async launch(launch: LspLaunch): Promise<LspLaunch | { reason: string }> {
    const { runtime } = this.options;
    const state = await this.options.state?.();
    if (state && !state.active) return { reason: state.reason ?? "the sandbox is not active" };
    const transform = runtime.spawnTransform;
    if (!transform) return { reason: "this session has no sandbox" };
    const cache = await this.cacheDir();
    const roots = runtime.roots.map((root) => realOrUndefined(root) ?? root);
    // Inside a root it would be a writable corner of the workspace.
    if (isInsideAny(cache, roots)) return { reason: `the servers' cache folder ${cache} would lie inside the workspace` };
    // The workspace, and the server's own files: the node_modules folder it is installed in (its typescript beside it).
    const read = ["{workspace}/**", ...[launch.root, ...installFolder(launch.file)].map((dir) => `${dir}/**`)];
    const scope = runtime.scope({ fs: { read }, shell: [{ cmd: "*" }] });
    const env = { ...(launch.env as Record<string, string>), HOME: cache, XDG_CACHE_HOME: path.join(cache, ".cache"), TMPDIR: cache };
    let wrapped;
    try {
      wrapped = await transform(
        { file: launch.file, args: launch.args, cwd: launch.cwd, env },
        {
          scope,
          roots: runtime.roots,
          sidecarDir: runtime.sidecars.dir,
          toolId: "lsp",
          backend: "local",
          unsandboxed: false,
          confined: { writable: [cache] },
        },
      );
    } catch (err) {
      return { reason: err instanceof Error ? err.message : String(err) };
    }
    if (!wrapped.sandboxed) return { reason: "the sandbox is switched off" };
    return {
      ...launch,
      file: wrapped.file,
      args: wrapped.args,
      cwd: wrapped.cwd,
      env: { ...process.env, ...wrapped.env },
      sandboxed: true,
    };
  }

  async close(): Promise<void> {
    const cache = this.cache;
    this.cache = undefined;
    const dir = await cache?.catch(() => undefined);
    if (dir) await fsp.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
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
