// Issue 15: what a 30-request session is billed for its input, with Anthropic prompt caching
// (toolhost's cache breakpoints) and without (TOOLHOST_PROMPT_CACHE=off). The local Anthropic
// server reports what a caching provider would bill (test/fixtures/fake-anthropic.mjs: tokens as
// characters / 4, a prefix read at a breakpoint or up to 20 blocks before it). One `toolhost run`
// turn: 29 tool calls, then the answer. Run after `npm run build`: node bench/prompt-cache.mjs
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startFakeAnthropic } from "../test/fixtures/fake-anthropic.mjs";

const run = promisify(execFile);
const root = fileURLToPath(new URL("..", import.meta.url));
const cli = path.join(root, "dist", "cli.js");
const REQUESTS = 30;

/** Sonnet 4.5's prices per million tokens: input, cache write (1.25×), cache read (0.1×). */
const PRICE = { input: 3, write: 3.75, read: 0.3 };

async function session(caching) {
  const turns = [];
  for (let i = 0; i < REQUESTS - 1; i++)
    turns.push({ toolUse: { name: i % 2 ? "grep" : "read", input: i % 2 ? { pattern: `f${i}` } : { path: `src/m${i % 10}.ts` } } });
  turns.push({ text: "Done: every module read." });
  const fake = await startFakeAnthropic(turns);
  const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-home-"));
  const ws = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-ws-"));
  mkdirSync(path.join(ws, "src"));
  for (let i = 0; i < 10; i++) writeFileSync(path.join(ws, "src", `m${i}.ts`), `export function f${i}() {\n  return ${i};\n}\n`.repeat(20));
  writeFileSync(
    path.join(home, "config.json"),
    JSON.stringify({ model: "anthropic/claude-sonnet-4-5", providers: { anthropic: { apiKey: "sk-ant-bench", baseURL: fake.url } } }),
  );
  const env = { ...process.env, TOOLHOST_HOME: home, TOOLHOST_SESSIONS: "off", TOOLHOST_MODEL: "" };
  if (!caching) env.TOOLHOST_PROMPT_CACHE = "off";
  await run(process.execPath, [cli, "run", "--mode", "full", "Read every module and say what each does"], { cwd: ws, env });
  await fake.close();
  rmSync(home, { recursive: true, force: true });
  rmSync(ws, { recursive: true, force: true });
  const sum = (key) => fake.requests.reduce((n, r) => n + r.usage[key], 0);
  const input = sum("input_tokens");
  const write = sum("cache_creation_input_tokens");
  const read = sum("cache_read_input_tokens");
  return {
    requests: fake.requests.length,
    sent: input + write + read,
    input,
    write,
    read,
    dollars: (input * PRICE.input + write * PRICE.write + read * PRICE.read) / 1e6,
  };
}

const off = await session(false);
const on = await session(true);
const fmtN = (n) => n.toLocaleString("en-US");
console.log(`| | requests | input tokens sent | billed as plain input | written to the cache | read from the cache | cost (Sonnet 4.5) |`);
console.log(`|---|---|---|---|---|---|---|`);
for (const [name, r] of [
  ["without caching", off],
  ["with caching", on],
]) {
  console.log(
    `| ${name} | ${r.requests} | ${fmtN(r.sent)} | ${fmtN(r.input)} | ${fmtN(r.write)} | ${fmtN(r.read)} | $${r.dollars.toFixed(4)} |`,
  );
}
console.log(`\ninput cost with caching: ${((on.dollars / off.dollars) * 100).toFixed(1)}% of without`);
