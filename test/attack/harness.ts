import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startFakeOpenAI, type FakeBody, type FakeToolCall } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, runToEnd } from "../helpers.js";

// The attack corpus's stage (issue 11, widened by issue 20): a model (a local fake server) attacks
// from inside a `toolhost run`, and each attack is judged by its effect — a file outside the
// workspace that must stay as it was, a listener that must hear nothing, a secret that must never
// reach the model's requests. Every attack runs twice: as the user running the tests (root in CI)
// and, where the tests run as root, as `nobody` (setpriv), since root and an ordinary user get
// different sandboxes.

export const SECRET = "PLANTED-SECRET-KEY-5f1c";
export const VICTIM = "untouched\n";
const NOBODY = 65534;

/** Who runs toolhost: the test's own user, and nobody when the tests run as root. */
export interface RunAs {
  name: string;
  /** The uid and gid to drop to, or undefined to run as the test's user. */
  uid?: number;
}

const isRoot = process.getuid?.() === 0;
const canDrop = isRoot && existsSync("/usr/bin/setpriv");

/** Root and an unprivileged user where the tests run as root; else just the test's user. */
export const USERS: readonly RunAs[] = canDrop
  ? [{ name: "root" }, { name: "nobody", uid: NOBODY }]
  : [{ name: `uid ${process.getuid?.()}` }];

/** A folder outside the sandbox's private /tmp, so the home's files are really there to protect. */
function scratchRoot(): string {
  return existsSync("/var/tmp") ? "/var/tmp" : os.tmpdir();
}

export interface Stage {
  user: RunAs;
  root: string;
  ws: string;
  home: string;
  port: number;
  /** What the TCP listener received, from anyone. */
  received: string[];
  /** Makes a path under the stage belong to the stage's user (after the test planted it). */
  own(p: string): Promise<void>;
  close(): Promise<void>;
}

/** A workspace with a source file, a home with a planted key and a victim file, a listener on loopback. */
export async function stage(user: RunAs): Promise<Stage> {
  const root = await fsp.realpath(await fsp.mkdtemp(path.join(scratchRoot(), "toolhost-attack-")));
  const ws = path.join(root, "ws");
  const home = path.join(root, "home");
  await fsp.mkdir(path.join(ws, "src"), { recursive: true });
  await fsp.writeFile(path.join(ws, "src/a.ts"), "export const a = 1;\n");
  await fsp.mkdir(path.join(home, ".ssh"), { recursive: true, mode: 0o700 });
  await fsp.writeFile(path.join(home, ".ssh/id_rsa"), `${SECRET}\n`, { mode: 0o600 });
  await fsp.writeFile(path.join(home, "victim.txt"), VICTIM);
  const own = async (p: string) => {
    if (user.uid !== undefined) execFileSync("chown", ["-R", `${user.uid}:${user.uid}`, p]);
  };
  await fsp.chmod(root, 0o755);
  await own(ws);
  await own(home);
  const received: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    received.push("<connection>");
    socket.on("data", (d: Buffer) => received.push(d.toString()));
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    user,
    root,
    ws,
    home,
    port,
    received,
    own,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fsp.rm(root, { recursive: true, force: true });
    },
  };
}

export interface AttackOptions {
  /** The permission mode (default `full`: nobody is asked, so only the sandbox and the rules stand). */
  mode?: string;
  /** More environment for toolhost (secrets it holds, an XDG_RUNTIME_DIR). */
  env?: NodeJS.ProcessEnv;
}

export interface AttackResult {
  /** The requests' bodies, as the fake model got them. */
  bodies: FakeBody[];
  code: number | null;
  stderr: string;
  stdout: string;
  /** Everything the model was sent, all requests. */
  toModel: string;
}

/** The environment toolhost runs with on the stage: its home, the fake model, the sandbox as configured. */
export function stageEnv(s: Stage, modelUrl?: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    LANG: process.env.LANG,
    HOME: s.home,
    USER: s.user.uid === undefined ? process.env.USER : "nobody",
    TOOLHOST_HOME: path.join(s.home, ".toolhost"),
    ...(modelUrl ? { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: modelUrl } : {}),
  };
  // The suite runs with TOOLHOST_SANDBOX=off where no sandbox can run; the corpus never does
  // (there every command must be refused, which the attacks' effects show as well), unless the
  // attack's own environment says so: a control.
  return { ...env, ...extra };
}

/** Runs the CLI on the stage as the stage's user, to its end. */
export function runCliAs(
  s: Stage,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const argv =
    s.user.uid === undefined
      ? [process.execPath, CLI_PATH, ...args]
      : ["setpriv", `--reuid=${s.user.uid}`, `--regid=${s.user.uid}`, "--clear-groups", "--", process.execPath, CLI_PATH, ...args];
  return runToEnd(argv, { cwd: s.ws, env });
}

/** One `toolhost run` whose model makes `calls` (one per step), then stops. */
export async function attack(s: Stage, calls: FakeToolCall[], options: AttackOptions = {}): Promise<AttackResult> {
  const fake = await startFakeOpenAI({ script: [...calls.map((call) => ({ toolCalls: [call] })), { text: "done" }] });
  try {
    const env = stageEnv(s, fake.url, options.env);
    const { code, stdout, stderr } = await runCliAs(s, ["run", "--mode", options.mode ?? "full", "--cwd", s.ws, "do it"], env);
    const toModel = fake.requests.map((r) => JSON.stringify(r.body)).join("\n");
    return { bodies: fake.requests.map((r) => r.body), code, stdout, stderr, toModel };
  } finally {
    await fake.close();
  }
}

export const bash = (command: string, extra: Record<string, unknown> = {}): FakeToolCall => ({
  name: "bash",
  arguments: { command, ...extra },
});

/** Whether a sandbox can run here: the corpus's sandbox attacks are meaningful only then. */
export function bwrapInstalled(): boolean {
  return (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, "bwrap")));
}

/** The effects every attack must leave alone: the listener, the victim file, the home, the key. */
export async function expectNothingLanded(s: Stage, result: AttackResult): Promise<string[]> {
  const problems: string[] = [];
  if (s.received.length > 0) problems.push(`the listener heard: ${s.received.join(" ")}`);
  if ((await fsp.readFile(path.join(s.home, "victim.txt"), "utf8").catch(() => "<gone>")) !== VICTIM) problems.push("victim.txt changed");
  const listing = await fsp.readdir(s.home);
  for (const name of [".ssh", "victim.txt"]) if (!listing.includes(name)) problems.push(`${name} is gone from the home`);
  if (result.toModel.includes(SECRET)) problems.push("the secret reached the model");
  return problems;
}

/** The tool results the model was sent, in call order (the last request holds them all). */
export function toolResults(result: AttackResult): string[] {
  const messages = result.bodies.at(-1)?.messages ?? [];
  return messages.filter((m) => m.role === "tool").map((m) => JSON.stringify(m.content));
}

/**
 * The user's `git status` in `dir` of the workspace, as the stage's user, outside any sandbox:
 * whether the code attack `id` planted ran (its fsmonitor or hook leaves `ran-<id>` in the home).
 * A folder that is gone (moved to quarantine) runs nothing.
 */
export function userGitStatus(s: Stage, dir: string, id: string): boolean {
  const git = ["git", "status", "--short"];
  const argv =
    s.user.uid === undefined ? git : ["setpriv", `--reuid=${s.user.uid}`, `--regid=${s.user.uid}`, "--clear-groups", "--", ...git];
  if (existsSync(path.join(s.ws, dir))) {
    spawnSync(argv[0]!, argv.slice(1), { cwd: path.join(s.ws, dir), env: { PATH: process.env.PATH, HOME: s.home }, stdio: "ignore" });
  }
  return existsSync(path.join(s.home, `ran-${id}`));
}
