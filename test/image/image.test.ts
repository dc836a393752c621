import { execFile, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { RemoteClient } from "../acp/remote.js";
import { startFakeOpenAI, type FakeBody, type FakeOpenAI } from "../fixtures/fake-openai.mjs";

// Issue 35 §2: the container image, built as a user builds it (`node scripts/image.mjs`, which packs
// the checkout), then used as a user uses it: a headless `toolhost run --json` that reads, edits and
// runs a command in bubblewrap inside the container, against the fake model on the host's loopback
// (`--network host`), every event checked against the published schema; the same run without the
// container option the sandbox needs, refused with that option named; and `toolhost serve` in the
// container, answering a WebSocket client that has the token and refusing one that has not.
// Not part of `npm test`: `npm run test:image` (vitest's "image" project), its own CI step.

const ROOT = path.join(import.meta.dirname, "..", "..");
const TOKEN = "image-test-token-0123456789";
const validate = new Ajv2020({ strict: false }).compile(
  JSON.parse(fs.readFileSync(path.join(ROOT, "schemas", "run-events.v1.json"), "utf8")),
);

type Engine = "podman" | "docker";
const answers = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

/** podman, or docker with a daemon; else why not. CI (.ci/run) installs podman, runc and debootstrap first. */
function findEngine(): { engine?: Engine; why?: string } {
  if (answers("podman", ["--version"])) return { engine: "podman" };
  if (answers("docker", ["info"])) return { engine: "docker" };
  return { why: "neither podman nor a docker daemon is here (apt-get install podman runc debootstrap)" };
}

const found = findEngine();
// In CI as root the image must be tested: no engine there is a failure, not a skip.
if (found.why && process.env.CI === "true" && process.getuid?.() === 0) {
  throw new Error(`test/image: CI=true as root, but no container engine runs: ${found.why}`);
}
if (found.why) console.warn(`test/image/image.test.ts: skipped: ${found.why}`);
const engine = found.engine!;

/** The option the sandbox needs in the container: a /proc it may mount (Docker: namespaces and mounts too). */
const SANDBOX_OPTIONS =
  engine === "docker"
    ? ["--security-opt", "systempaths=unconfined", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined"]
    : ["--security-opt", "systempaths=unconfined"];

interface Built {
  image: string;
  containersConf?: string;
  sizeBytes: number;
  seconds: number;
}
let built: Built;
let fake: FakeOpenAI | undefined;
let ws: string;
const env = () => ({ ...process.env, ...(built.containersConf ? { CONTAINERS_CONF: built.containersConf } : {}) });

/** `engine run` with the workspace at /work, the host's network and the fake model; stdout, stderr and exit code. */
function containerRun(args: string[], extra: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  // The image runs as uid 1000: as root the workspace is given to it; rootless podman maps us to it.
  const user = process.getuid?.() === 0 || engine === "docker" ? [] : ["--userns=keep-id:uid=1000,gid=1000"];
  const model = ["-e", "TOOLHOST_MODEL=openai-compatible/fake", "-e", `TOOLHOST_BASE_URL=${fake!.url}`];
  const argv = ["run", "--rm", "--network", "host", ...user, ...extra, "-v", `${ws}:/work:Z`, ...model, built.image, ...args];
  return new Promise((resolve) =>
    execFile(engine, argv, { env: env(), timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    ),
  );
}

/** The JSON lines of a `run --json`, each valid against the published schema. */
function events(stdout: string): { type: string; [key: string]: unknown }[] {
  const lines = stdout.split("\n").filter(Boolean);
  const parsed = lines.map((line) => JSON.parse(line) as { type: string });
  for (const event of parsed) expect(validate(event), `${JSON.stringify(event)}: ${JSON.stringify(validate.errors)}`).toBe(true);
  return parsed;
}

const toolText = (body: FakeBody) =>
  (body.messages ?? [])
    .filter((m) => m.role === "tool")
    .map((m) => String(m.content))
    .join("\n");

describe.skipIf(!found.engine)(`the container image (${engine ?? "no engine"})`, () => {
  beforeAll(async () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, "scripts", "image.mjs"), "--engine", engine, "--json"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    expect(result.status, "scripts/image.mjs failed").toBe(0);
    built = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as Built;
    console.warn(`image: ${built.image}, ${(built.sizeBytes / 1e6).toFixed(0)} MB, built in ${built.seconds.toFixed(0)} s`);
    ws = await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-image-ws-"));
  }, 900_000);

  afterAll(async () => {
    await fake?.close();
    if (ws) await fsp.rm(ws, { recursive: true, force: true });
  });

  /** A fresh workspace of the image's user with `a.txt`. */
  async function workspace(): Promise<void> {
    await fsp.rm(ws, { recursive: true, force: true });
    await fsp.mkdir(ws);
    await fsp.writeFile(path.join(ws, "a.txt"), "a needle here\n");
    if (process.getuid?.() === 0) for (const p of [ws, path.join(ws, "a.txt")]) await fsp.chown(p, 1000, 1000);
  }

  it("is small: at most 450 MB", () => {
    expect(built.sizeBytes).toBeLessThanOrEqual(450e6);
  });

  it("run --json reads, edits and runs a sandboxed command against the host's model; events as published", async () => {
    await workspace();
    const command = "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; cat a.txt; echo made > made.txt; id -u";
    await fake?.close();
    fake = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: "r1", name: "read", arguments: { path: "a.txt" } }] },
        { toolCalls: [{ id: "e1", name: "edit", arguments: { path: "a.txt", old_string: "needle", new_string: "pin" } }] },
        { toolCalls: [{ id: "b1", name: "bash", arguments: { command } }] },
        { text: "Done." },
      ],
    });
    const run = await containerRun(["run", "--json", "--mode", "full", "replace the needle, then look around"], SANDBOX_OPTIONS);
    expect(run.code, run.stderr).toBe(0);
    const all = events(run.stdout);
    // Event by event (usage events come with each request, their count is the provider's business).
    const shape = all
      .filter((e) => e.type !== "usage")
      .map((e) =>
        e.type.startsWith("tool_call") ? `${e.type} ${e.tool as string} ${(e.status as string | undefined) ?? e.kind}` : e.type,
      );
    expect(shape).toEqual([
      "start",
      "tool_call_start read read",
      "tool_call_end read completed",
      "tool_call_start edit edit",
      "tool_call_end edit completed",
      "tool_call_start bash execute",
      "tool_call_end bash completed",
      "text",
      "stop",
    ]);
    expect(all[0]).toMatchObject({ cwd: "/work", mode: "full", model: "openai-compatible/fake" });
    expect(all.at(-1)).toMatchObject({ stop_reason: "end_turn", exit_code: 0, totals: { requests: 4, tool_calls: 3 } });
    // The edit reached the host's folder; the command ran in bubblewrap (no capability, no new
    // privileges, the seccomp filter), as the image's user, and saw the edited file.
    expect(await fsp.readFile(path.join(ws, "a.txt"), "utf8")).toBe("a pin here\n");
    expect(fs.statSync(path.join(ws, "made.txt")).uid).toBe(process.getuid?.() === 0 ? 1000 : process.getuid?.());
    const seen = toolText(fake.requests[3]!.body);
    expect(seen).toMatch(/CapEff:\s+0{16}/);
    expect(seen).toMatch(/NoNewPrivs:\s+1/);
    expect(seen).toMatch(/Seccomp:\s+2/);
    expect(seen).toMatch(/a pin here\n(?:.*\n)?1000/);
  });

  it("without the container's option the command is refused, naming the option, not 'install bubblewrap'", async () => {
    await workspace();
    const run = await containerRun(["run", "--json", "--mode", "full", "/bash echo hi"]);
    const all = events(run.stdout);
    const end = all.find((e) => e.type === "tool_call_end");
    expect(end).toMatchObject({ tool: "bash", status: "failed", error_code: "permission_denied" });
    expect(end?.error).toMatch(/Can't mount proc/);
    expect(end?.error).toMatch(/--security-opt systempaths=unconfined/);
    expect(end?.error).toMatch(/TOOLHOST_SANDBOX=off/);
    expect(end?.error).not.toMatch(/install bubblewrap/i);
    expect(all.at(-1)).toMatchObject({ type: "stop", exit_code: 1 });
  });

  it("serve answers a WebSocket client with the token, over ACP, and refuses one without", async () => {
    await workspace();
    await fake?.close();
    fake = await startFakeOpenAI({
      fallback: (body) =>
        toolText(body)
          ? { text: `I read: ${toolText(body).includes("needle") ? "needle" : "?"}` }
          : { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
    });
    const port = await freePort();
    const name = `toolhost-image-test-${process.pid}`;
    const user = process.getuid?.() === 0 || engine === "docker" ? [] : ["--userns=keep-id:uid=1000,gid=1000"];
    const server = spawn(
      engine,
      [
        ...["run", "--rm", "--name", name, "--network", "host", ...user, ...SANDBOX_OPTIONS, "-v", `${ws}:/work:Z`],
        ...["-e", `TOOLHOST_SERVE_TOKEN=${TOKEN}`, "-e", "TOOLHOST_MODEL=openai-compatible/fake", "-e", `TOOLHOST_BASE_URL=${fake.url}`],
        ...[built.image, "serve", "--listen", `127.0.0.1:${port}`],
      ],
      { env: env(), stdio: ["ignore", "pipe", "pipe"] },
    );
    let [stdout, stderr] = ["", ""];
    server.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => server.on("close", resolve));
    await new Promise<void>((resolve, reject) => {
      server.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes(`listening on http://127.0.0.1:${port}`)) resolve();
      });
      void exited.then((code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
    });
    const url = `ws://127.0.0.1:${port}/acp`;
    try {
      // Without the token: refused before ACP starts, on the WebSocket upgrade and on HTTP.
      const status = await new Promise<number | undefined>((resolve) => {
        const socket = new WebSocket(url);
        socket.on("unexpected-response", (_req, res) => resolve(res.statusCode));
        socket.on("open", () => resolve(101));
        socket.on("error", () => resolve(undefined));
      });
      expect(status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/acp`, { method: "POST" })).status).toBe(401);
      // With it: a session in the container's /work and a prompt whose read sees the host's file.
      const client = new RemoteClient(url, "ws", { token: TOKEN });
      await client.initialize();
      const sessionId = await client.newSession("/work");
      const answer = await client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "read a.txt" }] });
      expect(answer.stopReason).toBe("end_turn");
      const said = client.updates
        .map((u) => u.update)
        .map((u) => (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" ? u.content.text : ""))
        .join("");
      expect(said).toBe("I read: needle");
      expect(client.updates.some((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "completed")).toBe(true);
      client.close();
      expect(client.checker.problems).toEqual([]);
    } finally {
      spawnSync(engine, ["stop", "-t", "10", name], { env: env(), stdio: "ignore" });
    }
    // SIGTERM ends it cleanly, and serve wrote nothing to stdout.
    expect(await exited).toBe(0);
    expect(stdout).toBe("");
  });
});

/** A port free on the loopback now (serve binds it in the container, on the host's network). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
