// Issue 24 §1 targets: a command hook on a tool call costs < 15 ms over a bare spawn of the same
// command, and an in-process hook < 0.5 ms. Each pair runs interleaved, medians reported.
//   command — Hooks.run("tool_call") with one command hook (its JSON built, the shell spawned in its
//             own process group, stdin written, stdout read and parsed) vs spawning the same
//             command line with the shell and writing the same JSON to its stdin, in this process
//   in-process — Hooks.run("tool_call") with an extension's handler vs awaiting the handler itself
// Run after `npm run build`: node bench/hooks.mjs
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, interleave, median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = (p) => path.join(root, "dist", p);
const { Hooks } = await import(dist("host/hooks/engine.js"));
const { commandPayload } = await import(dist("host/hooks/events.js"));

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 31);
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const project = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-hooks-")));
const shell = ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"].find((p) => existsSync(p)) ?? "/bin/sh";
const script = path.join(root, "test/fixtures/claude-hooks/block-rm.mjs");

const input = {
  sessionId: "bench",
  cwd: project,
  transcriptPath: path.join(project, "session.jsonl"),
  mode: "ask",
  callId: "call-1",
  tool: { id: "bash", kind: "execute" },
  args: { command: "npm test -- --run", description: "run the tests" },
};
const configOf = (hooks) => ({ config: { hooks }, path: path.join(project, "config.json"), problems: [] });

/** The same command line spawned as the engine does (the shell, its own group, the JSON on stdin), waited for. */
function bareSpawn(command, stdin) {
  return new Promise((resolve, reject) => {
    const child = spawn(shell, ["-c", command], { cwd: project, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.resume();
    child.stdin.on("error", () => {});
    child.stdin.end(stdin);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

async function commandPair(label, command) {
  const hooks = Hooks.load(project, {
    config: configOf({ PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command }] }] }),
    trusted: true,
    userHome: project,
  });
  const stdin = JSON.stringify(commandPayload("tool_call", input, "claude"));
  const check = await hooks.run("tool_call", input);
  if (check.problems.length || check.decision) throw new Error(`${label}: ${JSON.stringify(check)}`);
  for (let i = 0; i < 3; i++) await Promise.all([hooks.run("tool_call", input), bareSpawn(command, stdin)]);
  const { a, b } = await interleave(
    ROUNDS,
    () => timed(() => hooks.run("tool_call", input)),
    () => timed(() => bareSpawn(command, stdin)),
  );
  return { label, hook: median(a), bare: median(b) };
}

async function inProcess() {
  let n = 0;
  const handler = (event) => {
    n++;
    return event.args.command.includes("rm ") ? { decision: "deny", reason: "no rm" } : undefined;
  };
  const hooks = Hooks.load(project, {
    config: configOf(undefined),
    trusted: true,
    userHome: project,
    extensions: [
      {
        file: path.join(project, "guard.ts"),
        level: "user",
        hooks: [{ event: "tool_call", run: handler, timeoutMs: 10_000, failClosed: false, at: "tool_call" }],
      },
    ],
  });
  const perCall = async (fn) =>
    (await timed(async () => {
      for (let i = 0; i < CALLS; i++) await fn();
    })) / CALLS;
  for (let i = 0; i < 2; i++) await Promise.all([perCall(() => hooks.run("tool_call", input)), perCall(() => handler(input))]);
  const { a, b } = await interleave(
    Math.max(5, Math.floor(ROUNDS / 3)),
    () => perCall(() => hooks.run("tool_call", input)),
    () => perCall(async () => handler({ event: "tool_call", ...input, args: structuredClone(input.args) })),
  );
  if (n === 0) throw new Error("the handler never ran");
  return { hook: median(a), bare: median(b) };
}

console.log(
  `hooks bench: ${ROUNDS} interleaved rounds, Node ${process.version}, shell ${shell}, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
const rows = [
  await commandPair("sh: `cat > /dev/null`", "cat > /dev/null"),
  await commandPair("node: a Claude Code hook script (block-rm.mjs)", `node ${JSON.stringify(script)}`),
];
console.log("\n| command hook on a tool call | through Hooks.run | bare spawn | overhead | ratio | target |\n|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.label} | ${fmt(r.hook)} ms | ${fmt(r.bare)} ms | **${fmt(r.hook - r.bare, 2)} ms** | ${fmt(r.hook / r.bare, 2)}× | < 15 ms |`,
  );
}
const ip = await inProcess();
console.log(
  `\n| in-process hook (${CALLS} calls a round) | per call through Hooks.run | the handler alone | overhead | target |\n|---|---|---|---|---|`,
);
console.log(
  `| a tool_call handler | ${fmt(ip.hook * 1000, 2)} µs | ${fmt(ip.bare * 1000, 2)} µs | **${fmt((ip.hook - ip.bare) * 1000, 2)} µs** | < 500 µs |`,
);
await fsp.rm(project, { recursive: true, force: true });
