import { existsSync, lstatSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "../../config/real-path.js";
import { isInside } from "../../tool/paths.js";

// What a sandboxed command sees of the file system, as bwrap mount operations. Each path gets
// the rule of the most specific entry covering it: the operations are laid out by path depth,
// so a deeper one (a sidecar folder inside a hidden ~/.toolhost, a secret inside a writable
// workspace, a read-only .git inside it) always lands on top of a shallower one.

/**
 * Under a home folder: credentials, shell histories, keyrings, browser profiles. Hidden inside
 * the sandbox (an empty tmpfs over a folder, /dev/null over a file), when they exist.
 */
export const SECRET_HOME_PATHS = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".azure",
  ".kube",
  ".docker/config.json",
  ".password-store",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".terraform.d/credentials.tfrc.json",
  ".vault-token",
  // toolhost's own stored login (`toolhost login`); the whole ~/.toolhost is hidden too, this holds
  // when a call may read in it (a sidecar) or TOOLHOST_HOME points elsewhere.
  ".toolhost/credentials.json",
  ".pgpass",
  ".my.cnf",
  // Credential stores under ~/.config.
  ".config/gh",
  ".config/gcloud",
  ".config/hub",
  ".config/op",
  ".config/rclone",
  ".config/git/credentials",
  ".config/doctl",
  ".config/netlify",
  ".config/heroku",
  ".config/configstore",
  ".config/Bitwarden CLI",
  ".config/1Password",
  ".config/github-copilot",
  ".config/sops",
  // Keyrings.
  ".local/share/keyrings",
  ".pki",
  // Shell and REPL histories.
  ".bash_history",
  ".zsh_history",
  ".zhistory",
  ".sh_history",
  ".history",
  ".python_history",
  ".node_repl_history",
  ".psql_history",
  ".mysql_history",
  ".sqlite_history",
  ".rediscli_history",
  ".irb_history",
  ".lesshst",
  ".viminfo",
  ".local/share/fish/fish_history",
  ".local/share/recently-used.xbel",
  // Browser profiles (cookies, saved passwords).
  ".mozilla",
  ".thunderbird",
  ".config/google-chrome",
  ".config/chromium",
  ".config/BraveSoftware",
  ".config/microsoft-edge",
  ".config/vivaldi",
  ".config/opera",
];

/** Host files no command needs to read. */
const SECRET_SYSTEM_PATHS = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"];

/** Where host services keep their unix sockets (and runtime state): an empty tmpfs inside. */
const RUNTIME_DIRS = ["/run", "/var/run"];

/** Files name resolution reads that may be symlinks into a hidden runtime folder. */
const RESOLVER_FILES = ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"];

/** One mount: `rank` orders operations on paths of the same depth (a later rank lands on top). */
interface MountOp {
  path: string;
  args: string[];
  rank: number;
}

const RANK = { hide: 0, writable: 1, reveal: 2, protect: 3, mask: 4, proxy: 5, stub: 6 } as const;

function depth(p: string): number {
  return p === "/" ? 0 : p.split(path.sep).length - 1;
}

export interface MountPlanInput {
  /** Writable folders (workspace roots, sidecar folder, temp folder): real paths. */
  writable: readonly string[];
  /** Folders the call may read that may lie in a hidden place (read roots, cwd): shown read-only there. */
  readable: readonly string[];
  /** Home folders whose secret paths are masked. */
  homes: readonly string[];
  /** Folders hidden whole (toolhost's home, the user's runtime folder…), before `RUNTIME_DIRS`. */
  hidden: readonly string[];
  /** More paths to mask (absolute). */
  maskPaths: readonly string[];
  /** Paths inside writable roots that stay read-only (project control). Real paths. */
  protect: readonly string[];
  /** The proxy's folder (hidden) and the one socket shown in it, and the strict filter the bridge's inner bwrap loads (`innerFilter` → `innerFilterAt`). */
  proxy?: { dir: string; socketPath: string; innerFilter?: string; innerFilterAt?: string };
  /** Denied programs (`denied-programs.ts`): a refusing stub bound read-only over each one's file. */
  stubs?: readonly { stub: string; target: string }[];
}

/** The bwrap mount arguments, after `--ro-bind / /`, `--dev`, `--proc` and `--tmpfs /tmp`. */
export function mountArgs(input: MountPlanInput): string[] {
  const ops: MountOp[] = [];
  const hidden = new Set<string>();
  for (const dir of [...input.hidden, ...RUNTIME_DIRS]) {
    const real = realOrUndefined(dir);
    if (!real || real === "/" || hidden.has(real) || !statSync(real).isDirectory()) continue;
    hidden.add(real);
    ops.push({ path: real, args: ["--tmpfs", real], rank: RANK.hide });
  }
  const writable: string[] = [];
  for (const p of input.writable) {
    if (writable.some((w) => isInside(p, w))) continue;
    writable.push(p);
    ops.push({ path: p, args: ["--bind", p, p], rank: RANK.writable });
  }
  // What the call may read in a hidden place (/tmp, a hidden folder) stays visible, read-only.
  const veiled = ["/tmp", ...hidden];
  for (const p of [...input.readable, ...RESOLVER_FILES]) {
    const real = realOrUndefined(p);
    if (!real || writable.some((w) => isInside(real, w))) continue;
    if (veiled.some((v) => real !== v && isInside(real, v))) ops.push({ path: real, args: ["--ro-bind", real, real], rank: RANK.reveal });
  }
  // `-try`: another command's quarantine may have moved it since (project-guard.ts watches it then).
  for (const p of input.protect) ops.push({ path: p, args: ["--ro-bind-try", p, p], rank: RANK.protect });

  const masks = [
    ...input.homes.flatMap((home) => SECRET_HOME_PATHS.map((rel) => path.join(home, rel))),
    ...SECRET_SYSTEM_PATHS,
    ...input.maskPaths,
  ];
  const masked = new Set<string>();
  for (const p of masks) {
    const real = realOrUndefined(p);
    if (!real || masked.has(real) || real === "/") continue;
    masked.add(real);
    const dir = statSync(real).isDirectory();
    ops.push({ path: real, args: dir ? ["--tmpfs", real] : ["--ro-bind", "/dev/null", real], rank: RANK.mask });
  }
  if (input.proxy) {
    // Every proxy socket of the session is hidden but the call's own: another allows other hosts.
    ops.push({ path: input.proxy.dir, args: ["--tmpfs", input.proxy.dir], rank: RANK.proxy });
    ops.push({ path: input.proxy.socketPath, args: ["--bind", input.proxy.socketPath, input.proxy.socketPath], rank: RANK.proxy });
    const { innerFilter, innerFilterAt } = input.proxy;
    if (innerFilter && innerFilterAt) ops.push({ path: innerFilterAt, args: ["--ro-bind", innerFilter, innerFilterAt], rank: RANK.proxy });
  }
  for (const { stub, target } of input.stubs ?? []) ops.push({ path: target, args: ["--ro-bind", stub, target], rank: RANK.stub });
  // Stable: equal depth and rank keep their order.
  return ops
    .map((op, i) => ({ op, i }))
    .sort((a, b) => depth(a.op.path) - depth(b.op.path) || a.op.rank - b.op.rank || a.i - b.i)
    .flatMap(({ op }) => op.args);
}

/** `~/x` against the home folder; other paths as they are (absolute only). */
export function expandHome(p: string, home = os.homedir()): string | undefined {
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return path.isAbsolute(p) ? p : undefined;
}

/** The user's runtime folder ($XDG_RUNTIME_DIR) when it is a real folder: its sockets are hidden too. */
export function runtimeDir(env: Record<string, string | undefined>): string | undefined {
  const dir = env.XDG_RUNTIME_DIR;
  if (!dir || !path.isAbsolute(dir) || !existsSync(dir)) return undefined;
  return lstatSync(dir).isDirectory() || lstatSync(dir).isSymbolicLink() ? dir : undefined;
}

/**
 * Sockets the environment names wherever they are (an ssh-agent, docker, D-Bus, gpg-agent): masked
 * inside, as /run and $XDG_RUNTIME_DIR are hidden; the variables themselves do not pass either.
 */
export function agentSockets(env: Record<string, string | undefined>): string[] {
  const found: string[] = [];
  const add = (p: string | undefined) => {
    if (p && path.isAbsolute(p)) found.push(p);
  };
  add(env.SSH_AUTH_SOCK);
  add(env.GPG_AGENT_INFO?.split(":")[0]);
  if (env.DOCKER_HOST?.startsWith("unix://")) add(env.DOCKER_HOST.slice("unix://".length));
  for (const bus of [env.DBUS_SESSION_BUS_ADDRESS, env.DBUS_SYSTEM_BUS_ADDRESS]) {
    for (const part of bus?.split(";") ?? []) add(/(?:^|,)path=([^,]+)/.exec(part)?.[1]);
  }
  return found;
}
