import { execFile } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PROXY_PORT, proxyEnv, sandboxNetworkStatus, sandboxProxies, type SandboxNetworkStatus } from "./sandbox-proxy.js";
import type { SpawnContext, SpawnRequest, SpawnTransform } from "./scoped.js";

/**
 * Files and folders under a home directory that hold credentials: hidden inside the sandbox
 * (an empty tmpfs over a folder, /dev/null over a file), only when they exist.
 */
const SECRET_HOME_PATHS = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".azure",
  ".kube",
  ".docker/config.json",
  ".config/gh",
  ".config/gcloud",
  ".config/hub",
  ".password-store",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".cargo/credentials",
  ".cargo/credentials.toml",
];

export interface BubblewrapOptions {
  /** The bwrap binary (default: `bwrap` found on PATH). */
  bwrapPath?: string;
  /**
   * Home directories whose secret paths are masked. Always added: this process's home and the
   * HOME the call's environment sets.
   */
  homes?: readonly string[];
  /** More paths to mask (absolute), e.g. a project's `.env`. */
  maskPaths?: readonly string[];
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
  /** The socat binary that forwards to the proxy inside the sandbox (default: `socat` on PATH). */
  socatPath?: string;
}

/** The proxy a call goes out through: the folder the sandbox hides, and the one socket it binds in. */
export interface ProxyMount {
  dir: string;
  socketPath: string;
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

/** The real path of an existing path, or undefined when it does not exist. */
function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

function isUnder(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

/**
 * The bwrap arguments (before `--`) for one call. Order matters to bwrap: later mounts go on top
 * of earlier ones, so the masks come last.
 */
export function bubblewrapArgs(
  request: SpawnRequest,
  context: SpawnContext,
  options: BubblewrapOptions = {},
  proxy?: ProxyMount,
): string[] {
  const args = [
    "--die-with-parent",
    // A new session: the sandboxed command cannot push input to a terminal (TIOCSTI). The local
    // backend already starts bwrap in a session of its own with no terminal, and there the
    // command must stay in bwrap's process group: a kill right after the start, before
    // --die-with-parent holds inside, would otherwise leave the sandbox running.
    ...(context.backend === "local" ? [] : ["--new-session"]),
    // Own pid namespace: when bwrap dies (the tree kill, a timeout), everything inside goes with it.
    "--unshare-pid",
    // Its own network namespace: nothing but its own loopback, and the proxy's socket when hosts are allowed.
    "--unshare-net",
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
  const writable: string[] = [];
  const bind = (p: string | undefined) => {
    if (!p || writable.some((w) => isUnder(p, w))) return;
    writable.push(p);
    args.push("--bind", p, p);
  };
  for (const root of context.roots) bind(realOrUndefined(root));
  bind(realOrUndefined(context.sidecarDir));
  if (options.tmpDir) bind(realOrUndefined(options.tmpDir));
  // What the call may read under /tmp (its read roots, its cwd) stays visible, read-only.
  for (const p of [...context.scope.read.roots, request.cwd]) {
    const real = realOrUndefined(p);
    if (real && isUnder(real, "/tmp") && !writable.some((w) => isUnder(real, w))) args.push("--ro-bind", real, real);
  }

  const homes = new Set([os.homedir(), ...(options.homes ?? [])]);
  if (request.env?.HOME) homes.add(request.env.HOME);
  const masks = [...[...homes].flatMap((home) => SECRET_HOME_PATHS.map((rel) => path.join(home, rel))), ...(options.maskPaths ?? [])];
  const masked = new Set<string>();
  for (const p of masks) {
    const real = realOrUndefined(p);
    if (!real || masked.has(real)) continue;
    masked.add(real);
    if (statSync(real).isDirectory()) args.push("--tmpfs", real);
    else args.push("--ro-bind", "/dev/null", real);
  }
  if (proxy) {
    // Every proxy socket of the session is hidden but the call's own: another allows other hosts.
    args.push("--tmpfs", proxy.dir, "--bind", proxy.socketPath, proxy.socketPath);
  }
  args.push("--chdir", request.cwd);
  return args;
}

/**
 * A SpawnTransform that runs each shell call inside bubblewrap: the whole machine read-only, a
 * private /tmp, writable workspace roots + sidecar folder (+ `tmpDir`), secret paths in the home
 * masked, own pid namespace and session, gone with its parent. cwd and environment are kept.
 * Linux only; check `sandboxAvailable()` first.
 *
 * Network: none, unless the call has allowed hosts (its scope's `net.hosts`, `allowedHosts`)
 * and socat is installed (`sandboxNetworkStatus()`): then HTTP_PROXY and the like point at
 * 127.0.0.1 inside the sandbox, where socat forwards to a proxy of this session that lets
 * through those hosts only (`sandbox-proxy.ts`). The proxies end with `close()` (the session's).
 *
 * Unlike the plain LocalShell, a background job (`server >log 2>&1 &`) does not outlive the
 * call: it is in the call's pid namespace, which ends when the command does.
 */
export function bubblewrapSandbox(options: BubblewrapOptions = {}): SpawnTransform & { close(): Promise<void> } {
  const newProxies = () => sandboxProxies({ privateHosts: options.privateHosts, resolve: options.resolveHost });
  let proxies = newProxies();
  let network: SandboxNetworkStatus | undefined;
  const transform = async (request: SpawnRequest, context: SpawnContext): Promise<SpawnRequest> => {
    // Bound only if it exists, and the session creates it lazily.
    await mkdir(context.sidecarDir, { recursive: true, mode: 0o700 });
    const bwrap = options.bwrapPath ?? findBwrap();
    if (!bwrap) throw new Error("bubblewrap (bwrap) is not installed");
    const env = options.tmpDir ? { ...request.env, TMPDIR: options.tmpDir } : { ...request.env, TMPDIR: "/tmp" };
    let command = [request.file, ...request.args];
    let mount: ProxyMount | undefined;
    const hosts = [...context.scope.hostPatterns, ...(options.allowedHosts?.(context) ?? [])];
    // Without socat the proxy cannot be reached: the call keeps no network at all.
    network ??= hosts.length > 0 ? sandboxNetworkStatus(options.socatPath) : undefined;
    if (hosts.length > 0 && network?.available) {
      const pool = proxies;
      const proxy = await pool.forHosts(hosts, options.deniedHosts?.(context), options.privateHostsFor?.(context));
      mount = { dir: pool.dir, socketPath: proxy.socketPath };
      Object.assign(env, proxyEnv());
      command = ["/bin/sh", "-c", PROXY_BRIDGE, "toolhost-net", network.socat, proxy.socketPath, ...command];
    }
    return {
      file: bwrap,
      args: [...bubblewrapArgs(request, context, options, mount), "--", ...command],
      cwd: request.cwd,
      env,
      // What runs is no longer the line as typed: an editor terminal must run argv.
      shellLine: undefined,
    };
  };
  // The session's proxies end with it. Should the transform be used again, new ones start.
  const close = () => {
    const closing = proxies;
    proxies = newProxies();
    return closing.close();
  };
  return Object.assign(transform, { close });
}

/** 127.0.0.1:PROXY_PORT as /proc/net/tcp shows it listening: local address, remote address, state. */
const LISTENING = `0100007F:${PROXY_PORT.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`;

/**
 * Inside the sandbox, before the command: socat listens on 127.0.0.1:PROXY_PORT and forwards
 * each connection to the proxy's socket. It is started detached (a child of the sandbox's init,
 * not of the command) and waited for, so the command's first request finds it: /proc/net/tcp is
 * read with shell builtins (socat is usually up within a few reads), then every 10 ms, at most
 * 2 s in all. It ends with the sandbox's pid namespace. `$1` is socat, `$2` the socket, the rest
 * the command.
 */
const PROXY_BRIDGE = [
  "socat=$1 sock=$2; shift 2",
  `("$socat" TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr "UNIX-CONNECT:$sock" </dev/null >/dev/null 2>&1 &)`,
  `listening() { while read -r _ here there state _; do [ "$here $there $state" = "${LISTENING}" ] && return 0; done </proc/net/tcp; return 1; }`,
  "i=0; until listening || [ $i -ge 300 ]; do i=$((i+1)); [ $i -gt 100 ] && sleep 0.01; done",
  'exec "$@"',
].join("\n");

export type SandboxStatus = { available: true } | { available: false; reason: string };

const probes = new Map<string, Promise<SandboxStatus>>();

/**
 * Whether bubblewrap is installed and can start a sandbox here (user namespaces, mounts…),
 * probed once with the flags the sandbox uses. The reason says what is missing when not.
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
    if (!bwrap) {
      resolve({ available: false, reason: "bubblewrap (bwrap) is not installed: apt-get install bubblewrap" });
      return;
    }
    const args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/"];
    args.push("--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true");
    execFile(bwrap, args, { timeout: 10_000 }, (err, _stdout, stderr) => {
      if (!err) resolve({ available: true });
      else resolve({ available: false, reason: `bwrap cannot start a sandbox here: ${stderr.trim() || err.message}` });
    });
  });
  probes.set(key, probe);
  return probe;
}
