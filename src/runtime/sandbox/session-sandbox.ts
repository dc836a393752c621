import { existsSync } from "node:fs";
import os from "node:os";
import { peekUserConfig, type ConfigPeek } from "../../config/file.js";
import { ToolError } from "../../tool/errors.js";
import { expandHome } from "./mounts.js";
import { bubblewrapSandbox, prewarmNestedGit, sandboxAvailable, type BubblewrapOptions, type SandboxStatus } from "./bubblewrap.js";
import type { SpawnContext, SpawnRequest, SpawnTransform } from "../shell/scoped.js";

/** Whether the user wants the sandbox, and where that was said. */
export interface SandboxSetting {
  value: "on" | "off";
  /** `TOOLHOST_SANDBOX`, the config file's path, or `default`. */
  source: string;
  /** `sandbox.env` of the user's config: more variables sandboxed commands get. */
  env?: string[];
  /** `sandbox.denyRead` of the user's config, `~/` expanded: more paths hidden from them. */
  denyRead?: string[];
  /** `sandbox.allowUnixSockets: true` of the user's config: sandboxed commands may create AF_UNIX sockets. */
  allowUnixSockets?: boolean;
  /** The config's `sandbox` entry was malformed: it fails closed (on, nothing extra passed). */
  problem?: string;
}

/**
 * The sandbox setting: `TOOLHOST_SANDBOX=on|off`, then `"sandbox"` in the user's
 * `~/.toolhost/config.json`, else on. Never a project's file: a project cannot switch it off.
 * Any other value leaves it on.
 */
export function sandboxSetting(env: NodeJS.ProcessEnv = process.env, home?: string): SandboxSetting {
  return sandboxSettingOf(peekUserConfig(home), env);
}

/** The sandbox setting from a config file already read (a session's, read once at its start). */
export function sandboxSettingOf(peek: ConfigPeek, env: NodeJS.ProcessEnv = process.env): SandboxSetting {
  const denyRead = peek.sandboxDenyRead.map((p) => expandHome(p)).filter((p): p is string => p !== undefined);
  const extra = {
    ...(peek.sandboxEnv.length ? { env: peek.sandboxEnv } : {}),
    ...(denyRead.length ? { denyRead } : {}),
    ...(peek.sandboxAllowUnixSockets ? { allowUnixSockets: true } : {}),
    ...(peek.sandboxError ? { problem: `${peek.path}: ${peek.sandboxError}` } : {}),
  };
  const fromEnv = env.TOOLHOST_SANDBOX?.trim().toLowerCase();
  if (fromEnv === "on" || fromEnv === "off") return { value: fromEnv, source: "TOOLHOST_SANDBOX", ...extra };
  return peek.sandbox === "off" ? { value: "off", source: peek.path, ...extra } : { value: "on", source: "default", ...extra };
}

/**
 * For a session about to start over `roots` (ACP's session/new answered before the session's
 * modules load): where the user's setting leaves the sandbox on, the map of nested repositories
 * starts its first pass now, and the session takes it. Never throws.
 */
export function prewarmSandboxMap(roots: readonly string[]): void {
  try {
    if (sandboxSetting().value === "on") prewarmNestedGit(roots);
  } catch {
    // The session's own first pass runs instead.
  }
}

/** The sandbox as the policy sees it (structurally the policy's `SandboxState`). */
export interface SessionSandboxState {
  /** Commands run inside the sandbox. */
  active: boolean;
  /** The user switched it off: commands run unsandboxed, without extra prompts. */
  off: boolean;
  /** Why it is not active. */
  reason?: string;
  /** When it is unavailable: what would make it run, or how to do without it (`sandboxAdvice`). */
  advice?: string;
  /** The user's `sandbox.allowUnixSockets`: commands may create AF_UNIX sockets. */
  unixSockets?: boolean;
}

export interface SessionSandboxOptions {
  setting: SandboxSetting;
  /** Whether a sandbox can run here (default: `sandboxAvailable()`, probed once per process). */
  probe?: () => Promise<SandboxStatus>;
  bubblewrap?: BubblewrapOptions;
}

/**
 * A session's OS sandbox: the setting, the probe (started in the background, awaited by the
 * first call that needs it) and the SpawnTransform every command of the session goes through.
 * Active, it wraps each command in bubblewrap; off, it runs commands as they are; where no
 * sandbox can run, it runs only commands the user approved to run unsandboxed (the policy asks).
 */
export class SessionSandbox {
  private status: Promise<SandboxStatus> | undefined;
  private readonly wrap: ReturnType<typeof bubblewrapSandbox>;

  constructor(private readonly options: SessionSandboxOptions) {
    const { env, denyRead, allowUnixSockets } = options.setting;
    this.wrap = bubblewrapSandbox({
      ...options.bubblewrap,
      allowUnixSockets: allowUnixSockets === true || options.bubblewrap?.allowUnixSockets === true,
      env: [...(options.bubblewrap?.env ?? []), ...(env ?? [])],
      maskPaths: [...(options.bubblewrap?.maskPaths ?? []), ...(denyRead ?? [])],
    });
  }

  get setting(): SandboxSetting {
    return this.options.setting;
  }

  /** Starts the probe without waiting for it (a session starts it when it is made). */
  start(): this {
    if (this.options.setting.value === "on") void this.probe();
    return this;
  }

  private probe(): Promise<SandboxStatus> {
    this.status ??= (this.options.probe ?? (() => sandboxAvailable(this.options.bubblewrap?.bwrapPath)))().catch(
      (err: unknown): SandboxStatus => ({ available: false, reason: `the sandbox probe failed: ${String(err)}` }),
    );
    return this.status;
  }

  async state(): Promise<SessionSandboxState> {
    const { value, source } = this.options.setting;
    if (value === "off") return { active: false, off: true, reason: `switched off (${source})` };
    const status = await this.probe();
    const unixSockets = this.options.setting.allowUnixSockets === true ? { unixSockets: true } : {};
    if (status.available) return { active: true, off: false, ...unixSockets };
    return { active: false, off: false, reason: status.reason, advice: sandboxAdvice(status.reason, runningInContainer()) };
  }

  /**
   * What changed below a root since the last call (the map's watch of its folders, in its worker):
   * the checkpoints' feed (runtime/checkpoints/change-feed.ts). Null while the sandbox is not
   * active: then no map runs, and git looks at everything.
   */
  readonly changes = async (root: string): Promise<string[] | undefined | null> =>
    (await this.state()).active ? this.wrap.changedSince(root) : null;

  /**
   * A session's roots, as it starts: once the probe says the sandbox runs, the map of nested
   * repositories makes its first pass over them in the background (its worker), so that the first
   * command finds it done. Never throws; a failure leaves that pass to the first command.
   */
  prepare(roots: readonly string[]): void {
    if (this.options.setting.value !== "on") return;
    void this.state()
      .then((state) => (state.active ? this.wrap.prepare(roots) : undefined))
      .catch(() => undefined);
  }

  /** Every command of the session goes through it; `close()` ends the network proxies it started. */
  readonly transform: SpawnTransform & { close(): Promise<void> } = Object.assign(this.run.bind(this), {
    close: () => this.wrap.close(),
  });

  private async run(request: SpawnRequest, context: SpawnContext): Promise<SpawnRequest> {
    if (context.unsandboxed) return request;
    const state = await this.state();
    if (state.off) return request;
    if (!state.active) {
      throw new ToolError(
        "permission_denied",
        `No sandbox can run here (${state.reason ?? "unknown"}), and this call was not approved to run without one.`,
      );
    }
    return { ...(await this.wrap(request, context)), sandboxed: true };
  }
}

const TURN_OFF = 'set TOOLHOST_SANDBOX=off (or "sandbox": "off" in ~/.toolhost/config.json) to run commands unsandboxed without asking';

/** The options a container runtime needs for bubblewrap inside: a /proc it may mount again, namespaces, mounts. */
const CONTAINER_SANDBOX_OPTIONS =
  "start the container with --security-opt systempaths=unconfined (Podman; through Podman's Docker API: --security-opt unmask=ALL), " +
  "or with Docker --security-opt systempaths=unconfined --security-opt seccomp=unconfined --security-opt apparmor=unconfined";

/** Whether toolhost runs in a container (Podman, Docker, Kubernetes, systemd-nspawn…), by the marks runtimes leave. */
export function runningInContainer(env: NodeJS.ProcessEnv = process.env): boolean {
  return existsSync("/run/.containerenv") || existsSync("/.dockerenv") || Boolean(env.container) || Boolean(env.KUBERNETES_SERVICE_HOST);
}

/**
 * What to do where no sandbox can run, from the probe's reason (`sandboxAvailable`): install
 * bubblewrap only when it is missing. Installed but stopped at the fresh /proc (a container
 * runtime's masked /proc paths), or at namespaces or mounts inside a container: the container's
 * options. Stopped at user namespaces elsewhere: the system's setting. Always: how to turn it off.
 */
export function sandboxAdvice(reason: string | undefined, inContainer: boolean): string {
  const why = reason ?? "";
  if (/bwrap\) is not installed/.test(why))
    return `Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) to sandbox commands, or ${TURN_OFF}.`;
  const bwrapFailed = why.startsWith("bwrap cannot start a sandbox here:");
  if (bwrapFailed && (/mount proc\b/i.test(why) || inContainer)) {
    return `bubblewrap is installed, but this container does not let it start (a masked /proc, or namespaces and mounts refused): ${CONTAINER_SANDBOX_OPTIONS}; or ${TURN_OFF}, with the container as the only boundary.`;
  }
  if (bwrapFailed && /namespace|uid map/i.test(why)) {
    return `bubblewrap is installed, but this system does not let it create user namespaces: allow them (Debian: sysctl kernel.unprivileged_userns_clone=1; Ubuntu 24.04 and later: sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap), or ${TURN_OFF}.`;
  }
  return `${TURN_OFF[0]!.toUpperCase()}${TURN_OFF.slice(1)}.`;
}

/** One line on the sandbox for `toolhost doctor` and `toolhost policy explain`. */
export function describeSandbox(
  state: SessionSandboxState,
  euid: number | undefined = process.geteuid?.(),
  roots: readonly string[] = [],
): string {
  const root = euid === 0;
  // Honest about a workspace that covers the home folder: the sandbox makes it all writable.
  const home = os.homedir();
  const wide = roots.filter((r) => r === home || home.startsWith(r.endsWith("/") ? r : `${r}/`));
  if (state.off)
    return `off, ${state.reason ?? "switched off"}: commands run unsandboxed, without extra prompts${root ? ", as root, with every capability" : ""}`;
  if (state.active) {
    return [
      "active (bubblewrap): a read-only system, writable workspace roots and a private /tmp, project-control paths (.git, .toolhost, .vscode…) and nested git repositories read-only,",
      ...(wide.length ? [`— the workspace ${wide.join(", ")} covers your whole home folder, so all of it is writable to commands,`] : []),
      "secrets, ~/.toolhost, host sockets (/run) and the agent's environment hidden (an allow-list passes), no network but the hosts a call may reach,",
      "no capabilities and a seccomp filter (no mount, namespaces, ptrace, bpf…);",
      state.unixSockets
        ? "unix sockets allowed (sandbox.allowUnixSockets): a command can connect to a listener outside through a socket file it can see"
        : "no unix sockets, a call with allowed hosts included (sandbox.allowUnixSockets allows them)",
      ...(root
        ? [
            "— running as root: commands run in a user namespace as root mapped to root, with no capabilities (mounts cannot be undone); they own root's files, so only the masks keep root's secrets hidden",
          ]
        : []),
    ].join(" ");
  }
  return `unavailable: ${state.reason ?? "unknown"}. Every call that runs commands asks first (headless: refused)${root ? "; running as root, an approved command runs with every capability" : ""}. ${state.advice ?? sandboxAdvice(state.reason, runningInContainer())}`;
}
