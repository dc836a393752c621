// Issue 14: a session with 5 stdio MCP servers given in session/new. The session/new answer must
// not wait for them (its time with and without servers, interleaved, and their ratio), and the
// time from spawn until every server is ready (its prompt a command in available_commands_update).
// Run after `npm run build`: node bench/mcp.mjs (BENCH_ROUNDS, default 10).
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, onJsonLines } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = path.join(root, "dist", "cli.js");
const fixture = path.join(root, "test", "fixtures", "mcp-server.mjs");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const SERVERS = 5;

const servers = (n) =>
  Array.from({ length: n }, (_, i) => ({
    name: `s${i + 1}`,
    command: process.execPath,
    args: [fixture],
    env: [{ name: "MCP_NAME", value: `s${i + 1}` }],
  }));

/** One toolhost: spawn → session/new answered, and (with servers) → every server's tools announced. */
function run(n) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [cli], { stdio: ["pipe", "pipe", "ignore"] });
    const result = {};
    // Each server's prompt (the fixture's `greet`) becomes a slash command once the server is ready.
    const want = new Set(servers(n).map((s) => `${s.name}:greet`));
    const finish = () => {
      child.stdin.end();
    };
    child.on("error", reject);
    onJsonLines(child.stdout, (msg) => {
      if (msg.id === 1) {
        child.stdin.write(
          JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: os.tmpdir(), mcpServers: servers(n) } }) + "\n",
        );
      } else if (msg.id === 2) {
        result.sessionNew = performance.now() - start;
        if (n === 0) finish();
      } else if (msg.params?.update?.sessionUpdate === "available_commands_update" && result.ready === undefined) {
        const names = new Set(msg.params.update.availableCommands.map((c) => c.name));
        if ([...want].every((w) => names.has(w))) {
          result.ready = performance.now() - start;
          finish();
        }
      }
    });
    child.on("close", () => resolve(result));
    child.stdin.write(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }) + "\n",
    );
  });
}

await run(0);
await run(SERVERS); // warm the OS file cache
const without = [];
const withServers = [];
for (let i = 0; i < ROUNDS; i++) {
  without.push(await run(0));
  withServers.push(await run(SERVERS));
}
const plain = median(without.map((r) => r.sessionNew));
const busy = median(withServers.map((r) => r.sessionNew));
const ready = median(withServers.map((r) => r.ready));
console.log(`node ${process.version}, ${ROUNDS} interleaved rounds, ${SERVERS} stdio servers (test/fixtures/mcp-server.mjs, 7 tools each)`);
console.log("| measurement | median |\n|---|---|");
console.log(`| spawn → session/new answered, no MCP servers | ${fmt(plain)} ms |`);
console.log(`| spawn → session/new answered, ${SERVERS} stdio servers | ${fmt(busy)} ms (${fmt(busy / plain, 2)}×) |`);
console.log(`| spawn → all ${SERVERS} servers ready (their prompts announced) | ${fmt(ready)} ms |`);
