import { guardHostPath } from "../config/host-path.js";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { realOrUndefined } from "../config/real-path.js";
import { toolhostHome } from "../config/paths.js";
import type { Workspace } from "../config/workspace.js";
import type { SessionState } from "../tool/context.js";
import type { RequirementSet } from "../tool/requirements.js";
import type { FsBackend } from "./fs/backend.js";
import { NodeFs } from "./fs/node.js";
import { NetGuard, type NetGuardOptions } from "./net.js";
import { compileScope, type CompiledScope, type ScopeVariables } from "./scope.js";
import { LocalShell } from "./shell/local.js";
import type { ShellBackend } from "./shell/backend.js";
import type { SpawnTransform } from "./shell/scoped.js";
import { SessionProcesses } from "./shell/processes.js";
import { SessionSidecars, sidecarRoot } from "./sidecars.js";

export interface RuntimeSessionOptions {
  id?: string;
  /**
   * The workspace root (absolute): relative tool paths resolve against it. Or the session's
   * resolved Workspace (config/workspace.ts), which brings its further roots and their real paths.
   */
  workspace: string | Workspace;
  /** Further workspace roots, with a plain `workspace` folder (`{workspace}` expands to all of them). */
  additionalRoots?: string[];
  /** Directories of open ad-hoc files (`{ad-hoc}`). */
  adHoc?: string[];
  /** The per-user data directory (`{user-data}`), default toolhostHome(). */
  userData?: string;
  /** Storage for the file tools (default: the real disk). */
  fs?: FsBackend;
  /**
   * Picks the backend per path, given the default; the ACP adapter uses this to send
   * workspace files through the editor and everything else to disk.
   */
  route?: (abs: string, fallback: FsBackend) => FsBackend;
  shell?: ShellBackend;
  /** Rewrites what shell calls run, before either backend (an OS sandbox plugs in here). */
  spawnTransform?: SpawnTransform;
  /** The tools' fetch: which hosts may reach private addresses (the agent hands in its rules'), and a resolver for tests. */
  net?: NetGuardOptions;
  /**
   * A sidecar folder that outlives the session (a recorded session's, next to its file): close
   * leaves it, and a later session on it adds to it. Default: a folder of its own under
   * sidecarRoot(), removed on close.
   */
  sidecarDir?: string;
}

const localDisk = new NodeFs();

const realOrSame = (p: string): string => realOrUndefined(p) ?? p;

/**
 * One agent session's runtime: its roots and variables, backends, read stamps, stores and
 * sidecar folder. Compiled scopes are cached per requirement set.
 */
export class RuntimeSession implements SessionState {
  readonly id: string;
  readonly workspace: string;
  readonly roots: string[];
  readonly readStamps = new Map<string, string>();
  readonly store = new Map<string, unknown>();
  readonly sidecars: SessionSidecars;
  readonly fs: FsBackend;
  readonly shell: ShellBackend;
  readonly spawnTransform?: SpawnTransform;
  /** Every tool's fetch goes through it: no private address unless a rule names the host. */
  readonly net: NetGuard;
  /** The session's background processes (the `process` tool's), their output in the sidecar folder. */
  readonly processes: SessionProcesses;
  private readonly vars: ScopeVariables;
  private readonly router: (abs: string, fallback: FsBackend) => FsBackend;
  private readonly scopes = new Map<string, CompiledScope>();
  /** Folders every call may read besides its scope (loaded skills' folders). */
  private readonly readDirs = new Set<string>();
  /** The sidecar folder was handed in: it lives as long as its owner says, not the session. */
  private readonly keepSidecars: boolean;

  constructor(options: RuntimeSessionOptions) {
    const given = options.workspace;
    if (typeof given === "string" && !path.isAbsolute(given)) throw new Error(`Workspace must be absolute: ${given}`);
    this.id = options.id ?? randomUUID();
    this.workspace = typeof given === "string" ? path.resolve(given) : given.cwd;
    this.roots =
      typeof given === "string" ? [this.workspace, ...(options.additionalRoots ?? []).map((r) => path.resolve(r))] : [...given.roots];
    this.fs = options.fs ?? localDisk;
    this.shell = options.shell ?? new LocalShell();
    this.spawnTransform = options.spawnTransform;
    this.net = new NetGuard(options.net);
    this.router = options.route ?? ((_abs, fallback) => fallback);
    this.keepSidecars = options.sidecarDir !== undefined;
    const root = sidecarRoot();
    this.sidecars = options.sidecarDir
      ? new SessionSidecars(path.resolve(options.sidecarDir))
      : new SessionSidecars(path.join(root, this.id.replace(/[^a-zA-Z0-9_-]/g, "_")), {}, root);
    this.processes = new SessionProcesses(() => this.sidecars.folder());
    // On disk a root may sit behind a symlink (/tmp → /private/tmp): allow both spellings (a
    // Workspace resolved them already).
    const onDisk = this.fs.kind === "node";
    // Nothing toolhost runs outside the sandbox is looked up in these roots from now on (config/host-path.ts;
    // a Workspace was guarded when it was resolved).
    if (onDisk && typeof given === "string") guardHostPath(this.roots);
    const withReal = (dirs: string[]) => [...new Set(dirs.flatMap((d) => (onDisk ? [d, realOrSame(d)] : [d])))];
    const workspaceRoots =
      typeof given === "string"
        ? withReal(this.roots)
        : [...new Set(given.roots.flatMap((d, i) => (onDisk ? [d, given.realRoots[i] as string] : [d])))];
    this.vars = {
      workspace: workspaceRoots,
      "ad-hoc": withReal(options.adHoc ?? []),
      "user-data": withReal([options.userData ?? toolhostHome()]),
      // The configured search providers' hosts (web_search's net.hosts); none until the session sets them.
      "web-search": [],
    };
  }

  /** The backend for an absolute path: sidecars always on disk, the rest as routed. */
  route = (abs: string): FsBackend => {
    if (abs === this.sidecars.dir || abs.startsWith(this.sidecars.dir + path.sep)) return localDisk;
    return this.router(abs, this.fs);
  };

  /** Lets every call of the session read `dir` (a loaded skill's folder), on top of its own scope. */
  allowRead(dir: string): void {
    // Skill folders are found on disk: allow their real path too, whatever backend serves the workspace.
    const dirs = [path.resolve(dir), realOrSame(path.resolve(dir))];
    // A `{` would read as a scope variable and break every scope: such a folder stays unreadable (fail closed).
    const fresh = dirs.filter((d) => !this.readDirs.has(d) && !d.includes("{"));
    if (!fresh.length) return;
    for (const d of fresh) this.readDirs.add(d);
    this.scopes.clear();
  }

  /** Sets a host variable (`{web-search}`: the hosts of the search providers the user configured); scopes compile again. */
  setVariable(name: string, values: readonly string[]): void {
    const next = [...new Set(values)];
    const current = this.vars[name];
    if (current && current.length === next.length && current.every((v, i) => v === next[i])) return;
    this.vars[name] = next;
    this.scopes.clear();
  }

  /**
   * The compiled scope of a requirement set. The session's own sidecar folder is always
   * readable, so a truncated output can be read on. Throws ScopeError on an undefined variable.
   */
  scope(requires: RequirementSet): CompiledScope {
    const key = JSON.stringify(requires);
    let scope = this.scopes.get(key);
    if (!scope) {
      const withSidecars: RequirementSet = {
        ...requires,
        fs: {
          ...requires.fs,
          read: [...(requires.fs?.read ?? []), `${this.sidecars.dir}/**`, ...[...this.readDirs].map((d) => `${d}/**`)],
        },
      };
      scope = compileScope(withSidecars, this.vars, this.workspace);
      this.scopes.set(key, scope);
    }
    return scope;
  }

  /**
   * Stops the background processes (their trees, then their output rings go), then ends what the
   * spawn transform keeps (a sandbox's proxies, which a process with allowed hosts used until
   * now) and the fetch connections, and removes the sidecar files (unless their folder was handed in).
   */
  async close(): Promise<void> {
    await this.processes.close();
    await this.spawnTransform?.close?.();
    await this.net.close();
    if (!this.keepSidecars) await this.sidecars.remove();
  }
}
