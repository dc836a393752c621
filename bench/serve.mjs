// Issue 27 §2: `toolhost serve` on loopback next to stdio, through the SDK's own clients.
// - connect → initialize → session/new answered, on a running server (WebSocket, HTTP), next to
//   stdio's spawn → initialize → session/new (what an editor pays to start an agent);
// - the cost of one session/update: a prompt whose model streams N text chunks (N updates) minus
//   one of a single chunk, divided by N - 1, on each transport.
// Each for an ACP v1 client and (issue 27 §1) a v2 one over stdio and WebSocket: v2 is mapped over
// the v1 agent in-process (acp/v2/), which is what its figures show beside v1's.
// Median of interleaved rounds. Run after `npm run build`: node bench/serve.mjs
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { client as v2client } from "@agentclientprotocol/sdk/experimental/v2";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import { startFakeOpenAI } from "../test/fixtures/fake-openai.mjs";
import { fmt, median } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = path.join(root, "dist", "cli.js");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 2000);
const TOKEN = "bench-token-0123456789abcdef";

const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-serve-home-"));
const cwd = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-serve-ws-"));
const lastUser = (body) => {
  const m = (body.messages ?? []).filter((x) => x.role === "user").at(-1);
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content);
};
const fake = await startFakeOpenAI({
  fallback: (body) => (lastUser(body).includes("big") ? { text: Array.from({ length: CHUNKS }, (_, i) => `c${i} `) } : { text: "x" }),
});
const env = { ...process.env, TOOLHOST_HOME: home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: fake.url };
env.TOOLHOST_SERVE_TOKEN = TOKEN;

const server = spawn(process.execPath, [cli, "serve", "--listen", "127.0.0.1:0", "--grace", "0", "--max-connections", "64"], {
  env,
  stdio: ["ignore", "ignore", "pipe"],
});
const address = await new Promise((resolve) => {
  let err = "";
  server.stderr.on("data", (d) => {
    err += d;
    const m = /http:\/\/(127\.0\.0\.1:\d+)/.exec(err);
    if (m) resolve(m[1]);
  });
});

/** An SDK client (v1 or v2) on `stream`, counting the updates it gets; v2's turn ends with an idle state. */
function connectClient(stream, v2) {
  const counter = { updates: 0, idle: null };
  const conn = (v2 ? v2client : client)({ name: "bench" })
    .onNotification("session/update", ({ params }) => {
      if (v2 && params.update.sessionUpdate === "state_update") {
        if (params.update.state === "idle") counter.idle?.();
        return;
      }
      counter.updates++;
    })
    .connect(stream);
  return { conn, counter };
}

const headers = { Authorization: `Bearer ${TOKEN}` };
const streams = {
  ws: () => createWebSocketStream(`ws://${address}/acp`, { WebSocket, headers }),
  http: () => createHttpStream(`http://${address}/acp`, { headers }),
};

/** `kind`: a transport, and "-v2" for a v2 client. */
async function open(kind) {
  const [transport, version] = kind.split("-");
  const v2 = version === "v2";
  const start = performance.now();
  let child;
  let stream;
  if (transport === "stdio") {
    child = spawn(process.execPath, [cli], { env, stdio: ["pipe", "pipe", "ignore"] });
    stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  } else stream = streams[transport]();
  const { conn, counter } = connectClient(stream, v2);
  if (v2) await conn.agent.request("initialize", { protocolVersion: 2, info: { name: "bench", version: "1" }, capabilities: {} });
  else await conn.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await conn.agent.request("session/new", v2 ? { cwd } : { cwd, mcpServers: [] });
  const ms = performance.now() - start;
  const close = async () => {
    conn.close();
    if (child) {
      child.stdin.end();
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", resolve)));
    }
  };
  return { ms, conn, counter, sessionId, close, v2 };
}

/** A prompt until its turn ended: v1's answer, v2's idle state. */
async function prompt(c, text) {
  const before = c.counter.updates;
  const start = performance.now();
  const idle = c.v2 ? new Promise((resolve) => (c.counter.idle = resolve)) : null;
  await c.conn.agent.request("session/prompt", { sessionId: c.sessionId, prompt: [{ type: "text", text }] });
  await idle;
  return { ms: performance.now() - start, updates: c.counter.updates - before };
}

const kinds = ["stdio", "ws", "http", "stdio-v2", "ws-v2"];
// Warm: the server's modules, the OS file cache.
for (const kind of kinds) {
  if (process.env.BENCH_DEBUG) console.error("warm", kind);
  await (await open(kind)).close();
}

const startup = Object.fromEntries(kinds.map((k) => [k, []]));
for (let i = 0; i < ROUNDS; i++) {
  for (const kind of i % 2 ? [...kinds].reverse() : kinds) {
    const c = await open(kind);
    startup[kind].push(c.ms);
    await c.close();
  }
}

// One session per transport; big and small prompts interleaved.
const sessions = Object.fromEntries(await Promise.all(kinds.map(async (k) => [k, await open(k)])));
for (const kind of kinds) await prompt(sessions[kind], "small");
const per = Object.fromEntries(kinds.map((k) => [k, { big: [], small: [], updates: [] }]));
for (let i = 0; i < ROUNDS; i++) {
  for (const kind of i % 2 ? [...kinds].reverse() : kinds) {
    const big = await prompt(sessions[kind], "big");
    const small = await prompt(sessions[kind], "small");
    per[kind].big.push(big.ms);
    per[kind].small.push(small.ms);
    per[kind].updates.push(big.updates - small.updates);
  }
}
for (const kind of kinds) await sessions[kind].close();

const cpus = os.cpus();
console.log(`node ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, ${ROUNDS} interleaved rounds, ${CHUNKS} chunks`);
console.log("| transport | to session/new answered | prompt of N chunks | prompt of 1 chunk | updates more | per update | vs stdio |");
console.log("|---|---|---|---|---|---|---|");
const perUpdate = (k) => (median(per[k].big) - median(per[k].small)) / median(per[k].updates);
for (const kind of kinds) {
  const what = kind.startsWith("stdio") ? "spawn → initialize → session/new" : "connect → initialize → session/new";
  console.log(
    `| ${kind} | ${fmt(median(startup[kind]))} ms (${what}) | ${fmt(median(per[kind].big))} ms | ${fmt(median(per[kind].small))} ms | ${median(per[kind].updates)} | ${fmt(perUpdate(kind) * 1000, 0)} µs | ${fmt(perUpdate(kind) / perUpdate("stdio"), 2)}× |`,
  );
}

server.kill("SIGTERM");
await new Promise((resolve) => server.once("exit", resolve));
await fake.close();
rmSync(home, { recursive: true, force: true });
rmSync(cwd, { recursive: true, force: true });
