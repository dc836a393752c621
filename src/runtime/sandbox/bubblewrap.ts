import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "../../config/real-path.js";
import { credentialsPath } from "../../config/credentials.js";
import { toolhostHome } from "../../config/paths.js";
import { userPath } from "../../config/host-path.js";
import { childEnvironment, ENV_NAME } from "./child-env.js";
import { isInside } from "../../tool/paths.js";
import { NestedGitWorker, prewarmMap } from "./nested-git-client.js";
import { projectGuard, settleProjectGuard, watchProjectGuard } from "./project-guard.js";
import { Quarantine, quarantineReachable } from "./quarantine.js";
import { agentSockets, mountArgs, runtimeDir } from "./mounts.js";
import { deniedProgramBinds, stubFolder, type StubBind } from "./denied-programs.js";
import { seccompFilterFile, seccompSupported, type SeccompVariant } from "./seccomp.js";
import { PROXY_PORT, proxyEnv, sandboxNetworkStatus, sandboxProxies, type SandboxNetworkStatus } from "./proxy.js";
import type { SpawnContext, SpawnRequest, SpawnTransform } from "../shell/scoped.js";
import { runOffThread } from "../shell/spawn-thread.js";

export interface BubblewrapOptions {
  /** The bwrap binary (default: `bwrap` found on PATH). */
  bwrapPath?: string;
  /**
   * Home directories whose secret paths are masked. Always added: this process's home and the
   * HOME the call's environment sets.
   */
  homes?: readonly string[];
  /** More paths to mask (absolute), e.g. a project's `.env`, the user's `sandbox.denyRead`. */
  maskPaths?: readonly string[];
  /** Folders hidden whole (default: toolhost's home); /run, /var/run and $XDG_RUNTIME_DIR always are. */
  hiddenDirs?: readonly string[];
  /** Where the map of nested repositories is kept between sessions (default: `folder-maps/` in toolhost's home); used only inside a hidden folder. */
  folderMapDir?: string;
  /** More environment variables the command gets (the user's `sandbox.env`: names, or `PREFIX_*`). */
  env?: readonly string[];
  /**
   * A host folder for temporary files that outlive one call: writable, and TMPDIR points to it.
   * Without it, TMPDIR is the call's private /tmp (a tmpfs gone when the call ends).
   */
  tmpDir?: string;
  /**
   * Host patterns a call may reach besides its scope's `net.hosts` (the session's allow rules
   * for net.fetch). A call with any allowed host reaches those hosts, and only those, through
   * an HTTP proxy it sees on 127.0.0.1 (HTTP_PROXY…); a call with none has no network at all.
   */
  allowedHosts?: (context: SpawnContext) => readonly string[];
  /** Host patterns the proxy refuses even when allowed (the session's deny rules for net.fetch). */
  deniedHosts?: (context: SpawnContext) => readonly string[];
  /** Host patterns the proxy lets reach private or loopback addresses (default: none). */
  privateHosts?: readonly string[];
  /** Per call, in place of `privateHosts`: the session's allow rules that name one host exactly. */
  privateHostsFor?: (context: SpawnContext) => readonly string[];
  /** How the proxy resolves host names (default: the system resolver). */
  resolveHost?: (host: string) => Promise<readonly string[]>;
  /**
   * Programs that cannot run inside (the session's bash deny rules that deny a program whole):
   * a refusing stub is bound over each one's file (`denied-programs.ts`).
   */
  deniedPrograms?: (context: SpawnContext) => readonly string[];
  /** The socat binary that forwards to the proxy inside the sandbox (default: `socat` on PATH). */
  socatPath?: string;
  /** Where plants are moved (default: `quarantine/` in toolhost's home, which the sandbox hides); a folder of the session's in it. */
  quarantineDir?: string;
  /**
   * The user's `sandbox.allowUnixSockets`: commands may create AF_UNIX sockets (default: refused
   * by the seccomp filter, but in a call with a proxy bridge, whose socat needs one). A confined
   * launch (a language server) is refused them whatever this says.
   */
  allowUnixSockets?: boolean;
}

/** The proxy a call goes out through: the folder the sandbox hides, and the one socket it binds in. */
export interface ProxyMount {
  dir: string;
  socketPath: string;
  /** The strict filter's file, shown read-only at `innerFilterAt` (in the hidden proxy folder) for the bridge's inner bwrap. */
  innerFilter?: string;
  innerFilterAt?: string;
}

/** Where bwrap is on PATH, or undefined. */
function findBwrap(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, "bwrap");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Isolation, whoever runs toolhost: a user namespace (as root too: the command's root is mapped
 * onto the real one, so it owns the same files but holds no capability over the host, and the
 * mounts below cannot be undone), every capability dropped, own pid, network, IPC, UTS and
 * cgroup namespaces. The seccomp filter comes from the wrapper (`--seccomp`).
 */
function isolationArgs(backend: string, bridge = false): string[] {
  // A call with a proxy bridge: its shell and socat keep the capabilities of this user namespace
  // (which reach nothing outside it) for the inner bwrap they start, as uid 0 here, so that bwrap
  // takes its privileged path (a nested user namespace could not mount the inner /proc). The
  // command itself runs in the inner one: no capability, the strict filter, its own pid namespace.
  const identity = bridge
    ? ["--uid", "0", "--gid", "0", "--cap-add", "ALL"]
    : ["--uid", String(process.getuid?.() ?? 0), "--gid", String(process.getgid?.() ?? 0), "--cap-drop", "ALL"];
  return [
    "--die-with-parent",
    // A new session: the sandboxed command cannot push input to a terminal (TIOCSTI). The local
    // backend already starts bwrap in a session of its own with no terminal, and there the
    // command must stay in bwrap's process group: a kill right after the start, before
    // --die-with-parent holds inside, would otherwise leave the sandbox running.
    ...(backend === "local" ? [] : ["--new-session"]),
    "--unshare-user",
    ...identity,
    // Own pid namespace: when bwrap dies (the tree kill, a timeout), everything inside goes with it.
    "--unshare-pid",
    // Its own network namespace: nothing but its own loopback, and the proxy's socket when hosts are allowed.
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
  ];
}

/**
 * The bwrap arguments (before `--`) for one call: isolation, then the mounts (`mounts.ts`):
 * writable workspace roots, sidecar folder and temp folder; hidden: toolhost's home (but the
 * call's sidecar folder), /run, /var/run, $XDG_RUNTIME_DIR (host sockets), secrets in the homes
 * and the user's `denyRead`; read-only: the project-control paths in the roots and the nested git
 * repositories in them (`protect`).
 */
export function bubblewrapArgs(
  request: SpawnRequest,
  context: SpawnContext,
  options: BubblewrapOptions = {},
  proxy?: ProxyMount,
  protect: readonly string[] = [],
  stubs: readonly StubBind[] = [],
): string[] {
  const homes = new Set([os.homedir(), ...(options.homes ?? [])]);
  if (request.env?.HOME) homes.add(request.env.HOME);
  return [
    ...isolationArgs(context.backend, proxy?.innerFilterAt !== undefined),
    ...mountArgs({
      writable: writableFolders(context, options),
      readable: [...context.scope.read.roots, request.cwd],
      homes: [...homes],
      // The denied programs' stubs are bound from the host; their folder is hidden, so nothing inside can reach them.
      hidden: [...hiddenFolders({ ...process.env, ...request.env }, options), ...(stubs.length ? [stubFolder() as string] : [])],
      // The stored login wherever TOOLHOST_HOME puts it (a call may read in that folder: its sidecars).
      maskPaths: [...(options.maskPaths ?? []), credentialsPath(), ...agentSockets({ ...process.env, ...request.env })],
      protect,
      proxy,
      stubs,
    }),
    "--chdir",
    request.cwd,
  ];
}

/** The folders hidden whole inside: toolhost's home (or the option's), the user's runtime folder. */
function hiddenFolders(env: NodeJS.ProcessEnv, options: BubblewrapOptions): string[] {
  const xdg = runtimeDir(env);
  return [...(options.hiddenDirs ?? [toolhostHome()]), ...(xdg ? [xdg] : [])];
}

const quarantineDir = (options: BubblewrapOptions) => options.quarantineDir ?? path.join(toolhostHome(), "quarantine");

const realPaths = (paths: readonly string[]) => paths.map(realOrUndefined).filter((p): p is string => p !== undefined);

/** What the map of nested repositories never walks, as real paths: the quarantine (what was moved there) and the hidden folders (nothing there reaches the host). */
const walkSkip = (hidden: readonly string[], place: string) => realPaths([place, ...hidden]);

/**
 * The map of nested repositories for a session about to start with these roots and the default
 * options (an ACP session/new answered, the session's modules still loading): its first pass
 * starts now, and the session's sandbox takes it (`NestedGitWorker.prepare`). Only where bwrap is
 * installed; the session's own probe still decides whether commands are sandboxed.
 */
export function prewarmNestedGit(roots: readonly string[]): void {
  if (!findBwrap()) return;
  prewarmMap(
    realPaths(roots),
    walkSkip(hiddenFolders(process.env, {}), new Quarantine(() => quarantineDir({})).place()),
    folderMapStore({}),
  );
}

/**
 * Where the map of nested repositories is kept between sessions: `folder-maps/` in toolhost's home
 * (or the option's), and only while a folder every sandbox hides holds it: a record a sandboxed
 * command could write would be a map of its making.
 */
export function folderMapStore(options: BubblewrapOptions): string | undefined {
  const dir = options.folderMapDir ?? path.join(toolhostHome(), "folder-maps");
  return (options.hiddenDirs ?? [toolhostHome()]).some((hidden) => isInside(dir, hidden)) ? dir : undefined;
}

/** The call's writable folders, as real paths: workspace roots, sidecar folder, temp folder; a confined launch's own. */
function writableFolders(context: SpawnContext, options: BubblewrapOptions): string[] {
  const all = context.confined
    ? context.confined.writable
    : [...context.roots, context.sidecarDir, ...(options.tmpDir ? [options.tmpDir] : [])];
  return all.map(realOrUndefined).filter((p): p is string => p !== undefined);
}

/**
 * The environment a sandboxed command gets: the allow-list (`child-env.ts`) of this process's
 * environment plus the user's `env` names, what the call itself sets, TMPDIR and the proxy's.
 */
function sandboxEnv(request: SpawnRequest, context: SpawnContext, options: BubblewrapOptions): Record<string, string> {
  // A confined launch names its own temp folder (in its writable cache); a command gets the session's.
  const ownTmp = context.confined ? request.env?.TMPDIR : undefined;
  return {
    ...childEnvironment(process.env, options.env),
    // Inside, the user's PATH as it was (toolhost's own leaves the workspaces out: config/host-path.ts).
    PATH: userPath(),
    ...request.env,
    TMPDIR: ownTmp ?? options.tmpDir ?? "/tmp",
  };
}

/**
 * Runs bwrap with the seccomp filter on fd 9 and the environment on fd 8 (`--args`: `--clearenv`,
 * then `--setenv NAME VALUE` for each allowed name, printed by the shell's builtin printf from its
 * own environment): values never appear in a command line (which every user can read), and this
 * works the same whether node or an editor's terminal starts it. `$0` is bwrap, `$1` the filter.
 */
export function wrapperScript(names: readonly string[]): string {
  const setenv = names.filter((n) => ENV_NAME.test(n)).map((n) => ` --setenv ${n} "$${n}"`);
  return [
    "f=$1; shift",
    // stdin, kept for the command (an editor terminal's); /dev/null when there is none.
    "{ command exec 3<&0; } 2>/dev/null || exec 3</dev/null",
    // `env -i`: bwrap itself (whose environment its init inside the sandbox keeps, readable there
    // in /proc/1/environ) starts with none; the command gets only what fd 8 sets.
    `printf '%s\\0' --clearenv${setenv.join("")} | { exec env -i "$0" --args 8 --seccomp 9 "$@" 8<&0 0<&3 3<&- 9<"$f"; }`,
  ].join("\n");
}

/**
 * argv that runs `command` in bwrap with `bwrapArgs`, through the wrapper, under the strict
 * seccomp filter (no AF_UNIX sockets) unless the variant says otherwise.
 */
function wrapped(
  bwrap: string,
  env: Record<string, string>,
  bwrapArgs: string[],
  command: string[],
  variant: SeccompVariant = {},
): string[] {
  return ["-c", wrapperScript(Object.keys(env)), bwrap, seccompFilterFile(variant), ...bwrapArgs, "--", ...command];
}

/**
 * A SpawnTransform that runs each shell call inside bubblewrap (see `bubblewrapArgs`), without
 * capabilities, under a seccomp filter (`seccomp.ts`), with an allow-listed environment. Linux
 * only; check `sandboxAvailable()` first.
 *
 * Network: none, unless the call has allowed hosts (its scope's `net.hosts`, `allowedHosts`)
 * and socat is installed (`sandboxNetworkStatus()`): then HTTP_PROXY and the like point at
 * 127.0.0.1 inside the sandbox, where socat forwards to a proxy of this session that lets
 * through those hosts only (`proxy.ts`). The proxies end with `close()` (the session's).
 *
 * A project-control path the command created (`project-guard.ts`), or a git repository it left
 * anywhere in the workspace (`nested-git.ts`), is moved to quarantine when it ends: the request's
 * `settle` does it and returns the note for the result.
 *
 * Unlike the plain LocalShell, a background job (`server >log 2>&1 &`) does not outlive the
 * call: it is in the call's pid namespace, which ends when the command does.
 */
export function bubblewrapSandbox(options: BubblewrapOptions = {}): SpawnTransform & {
  close(): Promise<void>;
  changedSince(root: string): Promise<string[] | undefined>;
  prepare(roots: readonly string[]): Promise<void>;
} {
  const newProxies = () => sandboxProxies({ privateHosts: options.privateHosts, resolve: options.resolveHost });
  let proxies = newProxies();
  let network: SandboxNetworkStatus | undefined;
  // The session's map of nested git repositories (`nested-git.ts`): walked once, then kept current
  // by the kernel's watch, in a worker thread (`nested-git-client.ts`).
  const gitMap = new NestedGitWorker(() => folderMapStore(options));
  // Where what a command planted goes: out of every sandbox's reach (`quarantine.ts`).
  const quarantine = new Quarantine(() => quarantineDir(options));
  const transform = async (request: SpawnRequest, context: SpawnContext): Promise<SpawnRequest> => {
    const bwrap = options.bwrapPath ?? findBwrap();
    if (!bwrap) throw new Error("bubblewrap (bwrap) is not installed");
    const env = sandboxEnv(request, context, options);
    if (context.confined) {
      // Nothing of the workspace writable, no network, no unix sockets (strict filter): nothing to guard, no proxy.
      const args = wrapped(bwrap, env, bubblewrapArgs(request, context, options), [request.file, ...request.args]);
      return { file: "/bin/sh", args, commandAt: args.length - 1 - request.args.length, cwd: request.cwd, env, shellLine: undefined };
    }
    // Bound only if it exists, and the session creates it lazily.
    await mkdir(context.sidecarDir, { recursive: true, mode: 0o700 });
    let command = [request.file, ...request.args];
    let mount: ProxyMount | undefined;
    const hosts = [...context.scope.hostPatterns, ...(context.scopeHostsOnly ? [] : (options.allowedHosts?.(context) ?? []))];
    // Without socat the proxy cannot be reached: the call keeps no network at all.
    network ??= hosts.length > 0 ? sandboxNetworkStatus(options.socatPath) : undefined;
    if (hosts.length > 0 && network?.available) {
      const pool = proxies;
      const proxy = await pool.forHosts(hosts, options.deniedHosts?.(context), options.privateHostsFor?.(context));
      mount = { dir: pool.dir, socketPath: proxy.socketPath };
      Object.assign(env, proxyEnv());
      // socat needs AF_UNIX to reach the proxy; the command must not have it: it runs in an inner
      // bwrap under the strict filter (unless the user allows unix sockets anyway).
      const inner = options.allowUnixSockets === true ? undefined : path.join(pool.dir, "toolhost-inner.bpf");
      if (inner) Object.assign(mount, { innerFilter: seccompFilterFile(), innerFilterAt: inner });
      const uid = process.getuid?.() ?? 0;
      const ids = inner && uid !== 0 ? [String(uid), String(process.getgid?.() ?? uid)] : ["", ""];
      command = [
        "/bin/sh",
        "-c",
        PROXY_BRIDGE,
        "toolhost-net",
        network.socat,
        proxy.socketPath,
        inner ? bwrap : "",
        inner ?? "",
        ...ids,
        ...command,
      ];
    }
    const roots = realPaths(context.roots);
    const hidden = hiddenFolders({ ...process.env, ...request.env }, options);
    const writable = writableFolders(context, options);
    const place = quarantine.place();
    const nested = await gitMap.scan(roots, walkSkip(hidden, place));
    const guard = projectGuard(roots, writable, nested.found);
    const reachable = quarantineReachable(place, writable, realPaths(hidden));
    const into = quarantine.forCall(place, context.toolId, reachable);
    const settle = () => settleProjectGuard(guard.watched, into, nested);
    // The sandbox's own shells stay runnable: /bin/sh (the proxy bridge, the stubs' interpreter) and what runs the line.
    const stubs = deniedProgramBinds(options.deniedPrograms?.(context) ?? [], env.PATH, ["/bin/sh", request.file]);
    // The bridge's own filter lets its socat reach the proxy and start the inner bwrap; the command
    // runs under the strict one there. Without a bridge the command runs under the strict one directly.
    const variant: SeccompVariant =
      options.allowUnixSockets === true ? { allowUnixSockets: true } : { bridge: mount?.innerFilterAt !== undefined };
    const args = wrapped(bwrap, env, bubblewrapArgs(request, context, options, mount, guard.protect, stubs), command, variant);
    return {
      file: "/bin/sh",
      args,
      // The command as asked is the tail of argv (after the proxy bridge, if any).
      commandAt: args.length - 1 - request.args.length,
      cwd: request.cwd,
      env,
      // What runs is no longer the line as typed: an editor terminal must run argv.
      shellLine: undefined,
      settle,
      // The map's check is a pass over every folder: spaced to cost a background process's session at most 2% of a core.
      watch: (said: (note: string) => void) => watchProjectGuard(guard.watched, settle, said, () => Math.max(1000, 50 * gitMap.lastPassMs)),
    };
  };
  // The session's proxies and its map's worker end with it. Should the transform be used again, new ones start.
  const close = async () => {
    const closing = proxies;
    proxies = newProxies();
    await Promise.all([closing.close(), gitMap.close()]);
  };
  // The checkpoints' feed: the same watch, what changed below a root since its last mark (`NestedGitWorker.changedSince`).
  const changedSince = (root: string) => gitMap.changedSince(root);
  // A session's first pass over its roots, started with it, leaving out what a command's scan leaves out.
  const prepare = async (roots: readonly string[]) => {
    await gitMap.prepare(realPaths(roots), walkSkip(hiddenFolders(process.env, options), quarantine.place()));
  };
  return Object.assign(transform, { close, changedSince, prepare });
}

/** 127.0.0.1:PROXY_PORT as /proc/net/tcp shows it listening: local address, remote address, state. */
const LISTENING = `0100007F:${PROXY_PORT.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`;

/**
 * Inside the sandbox, before the command: socat listens on 127.0.0.1:PROXY_PORT and forwards
 * each connection to the proxy's socket. It is started detached (a child of the sandbox's init,
 * not of the command) and waited for, so the command's first request finds it: /proc/net/tcp is
 * read with shell builtins (socat is usually up within a few reads), then every 10 ms, at most
 * 2 s in all. It ends with the sandbox's pid namespace. Then the command runs in an inner bwrap
 * (`$3`, unless empty): the same mounts (`--dev-bind / /` keeps every mount below as it is, the
 * read-only ones too), a pid namespace of its own with its own /proc (socat out of its sight),
 * no capability, and the strict filter read from `$4`; as uid `$5`/gid `$6` in a user namespace
 * of its own when toolhost is not root. `$1` is socat, `$2` the socket, the rest the command.
 */
const PROXY_BRIDGE = [
  "socat=$1 sock=$2 inner=$3 filter=$4 uid=$5 gid=$6; shift 6",
  `("$socat" TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr "UNIX-CONNECT:$sock" </dev/null >/dev/null 2>&1 &)`,
  `listening() { while read -r _ here there state _; do [ "$here $there $state" = "${LISTENING}" ] && return 0; done </proc/net/tcp; return 1; }`,
  "i=0; until listening || [ $i -ge 300 ]; do i=$((i+1)); [ $i -gt 100 ] && sleep 0.01; done",
  '[ -n "$inner" ] || exec "$@"',
  'if [ -n "$uid" ]; then set -- --unshare-user --uid "$uid" --gid "$gid" -- "$@"; else set -- -- "$@"; fi',
  'exec "$inner" --dev-bind / / --unshare-pid --proc /proc --die-with-parent --cap-drop ALL --chdir "$PWD" --seccomp 8 "$@" 8<"$filter"',
].join("\n");

export type SandboxStatus = { available: true } | { available: false; reason: string };

const probes = new Map<string, Promise<SandboxStatus>>();

/** Prints the shell's own /proc/self/status with builtins only: what the sandbox gave the command. */
const STATUS_PROBE = 'while IFS= read -r line; do printf "%s\\n" "$line"; done </proc/self/status';

/** What /proc/self/status must say inside: no capability at all, no new privileges, the filter on. */
export function provenIsolation(status: string): string | undefined {
  const field = (name: string) => new RegExp(`^${name}:\\s*(\\S+)`, "m").exec(status)?.[1];
  const problems: string[] = [];
  for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
    const value = field(cap);
    if (value === undefined || !/^0+$/.test(value)) problems.push(`${cap} is ${value ?? "unknown"}`);
  }
  if (field("NoNewPrivs") !== "1") problems.push("no_new_privs is not set");
  if (field("Seccomp") !== "2") problems.push("the seccomp filter is not in force");
  return problems.length ? problems.join(", ") : undefined;
}

/**
 * Whether bubblewrap is installed and can start a sandbox here (user namespaces, mounts…),
 * probed once with the flags and the wrapper the sandbox uses, and proven from inside: no
 * capabilities (CapEff and CapBnd all zero), NoNewPrivs 1, Seccomp 2. The reason says what is
 * missing when not.
 */
export function sandboxAvailable(bwrapPath?: string): Promise<SandboxStatus> {
  const bwrap = bwrapPath ?? findBwrap();
  const key = bwrap ?? "";
  let probe = probes.get(key);
  if (probe) return probe;
  probe = new Promise<SandboxStatus>((resolve) => {
    if (process.platform !== "linux") {
      resolve({ available: false, reason: `bubblewrap needs Linux (this is ${process.platform})` });
      return;
    }
    if (!seccompSupported()) {
      resolve({ available: false, reason: `the sandbox's seccomp filter covers x86_64 and arm64 only (this is ${process.arch})` });
      return;
    }
    if (!bwrap) {
      resolve({ available: false, reason: "bubblewrap (bwrap) is not installed: apt-get install bubblewrap" });
      return;
    }
    if (!existsSync(bwrap)) {
      resolve({ available: false, reason: `bwrap cannot start a sandbox here: ${bwrap}: ENOENT (no such file)` });
      return;
    }
    const env = childEnvironment(process.env);
    let args: string[];
    try {
      args = wrapped(bwrap, env, isolationArgs("probe"), ["/bin/sh", "-c", STATUS_PROBE]);
    } catch (err) {
      resolve({ available: false, reason: `the sandbox cannot start: ${(err as Error).message}` });
      return;
    }
    // On the spawner thread: the probe's fork would hold the agent's thread as a command's does.
    runOffThread("/bin/sh", args, { env, maxOutput: 1024 * 1024, timeoutMs: 10_000 }).then(
      (ran) => {
        const stdout = Buffer.from(ran.stdout).toString("utf8");
        const stderr = Buffer.from(ran.stderr).toString("utf8");
        if (ran.code !== 0) {
          const how = ran.timedOut ? "it took over 10 s" : ran.signal ? `it was ended by ${ran.signal}` : `exit code ${ran.code}`;
          resolve({ available: false, reason: `bwrap cannot start a sandbox here: ${stderr.trim() || how}` });
          return;
        }
        const problem = provenIsolation(stdout);
        resolve(problem ? { available: false, reason: `the sandbox does not isolate commands here: ${problem}` } : { available: true });
      },
      (err: Error) => resolve({ available: false, reason: `bwrap cannot start a sandbox here: ${err.message}` }),
    );
  });
  probes.set(key, probe);
  return probe;
}
