// Issue 25 targets: the new errors after an edit in a warm 200-file TypeScript project in < 1.5 s,
// and the first server start as it is. Medians.
//   first start — a fresh session's language servers asked for one file's diagnostics: the
//                 typescript-language-server process, initialize, tsserver loading the project, the
//                 file opened and checked (what the first edit or read of a session pays, in the background)
//   warm edit   — with the server running and three files open: beginEdit (the file's text read, its
//                 diagnostics before), the write, after() (the new text sent, the file and the other
//                 open ones checked, compared), alternately breaking and fixing a file in the middle
//                 of an import chain
// Language servers run inside the sandbox (issue 33): the bench needs bubblewrap, as a session does.
// With `--baseline DIR` (another built checkout) the first starts run interleaved with its, and the
// agent's event loop is measured through each (its slowest stall: a server's fork held it before
// the spawner thread started them).
// Run after `npm run build`: node bench/lsp.mjs (typescript-language-server from node_modules/.bin)
import * as fsp from "node:fs/promises";
import { monitorEventLoopDelay } from "node:perf_hooks";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const baselineAt = process.argv.indexOf("--baseline");
const baselineRoot = baselineAt > 0 ? path.resolve(process.argv[baselineAt + 1]) : null;
/** A build's language-server manager, sandboxed as a session's. */
async function build(name, dir) {
  const load = (p) => import(path.join(dir, "dist", p));
  const { LspManager } = await load("runtime/lsp/manager.js");
  const { LspSandbox } = await load("runtime/lsp/sandbox.js");
  const { RuntimeSession } = await load("runtime/session.js");
  const { SessionSandbox, sandboxAvailable } = {
    ...(await load("runtime/sandbox/session-sandbox.js")),
    ...(await load("runtime/sandbox/bubblewrap.js")),
  };
  return { name, LspManager, LspSandbox, RuntimeSession, SessionSandbox, sandboxAvailable };
}
const builds = [await build("this build", root), ...(baselineRoot ? [await build("baseline", baselineRoot)] : [])];
const status = await builds[0].sandboxAvailable();
if (!status.available) {
  console.log(`lsp bench skipped: language servers run only inside the sandbox, and none runs here: ${status.reason}`);
  process.exit(0);
}

const FILES = Number(process.env.BENCH_FILES ?? 200);
const STARTS = Number(process.env.BENCH_STARTS ?? 5);
const EDITS = Number(process.env.BENCH_EDITS ?? 21);
const env = { ...process.env, PATH: `${path.join(root, "node_modules/.bin")}${path.delimiter}${process.env.PATH ?? ""}` };

const project = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-lsp-")));
await fsp.writeFile(
  path.join(project, "tsconfig.json"),
  JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "nodenext" }, include: ["src"] }),
);
await fsp.mkdir(path.join(project, "src"));
const source = (i) =>
  [
    i > 0 ? `import { value${i - 1}, type Shape${i - 1} } from "./mod${i - 1}.js";` : "",
    `export interface Shape${i} { id: number; name: string; tags: string[]; parent?: ${i > 0 ? `Shape${i - 1}` : "undefined"} }`,
    `export function make${i}(id: number, name: string): Shape${i} {`,
    `  return { id, name, tags: [name.toUpperCase(), String(id)]${i > 0 ? `, parent: undefined as Shape${i - 1} | undefined` : ""} };`,
    "}",
    `export const value${i}: number = ${i > 0 ? `value${i - 1} + 1` : "0"};`,
    ...Array.from({ length: 20 }, (_, k) => `export const item${i}_${k} = make${i}(${k}, "item ${k}").tags.join(",");`),
    "",
  ].join("\n");
for (let i = 0; i < FILES; i++) await fsp.writeFile(path.join(project, "src", `mod${i}.ts`), source(i));

const file = (i) => path.join(project, "src", `mod${i}.ts`);
const runtimes = [];
const manager = (b) => {
  const runtime = new b.RuntimeSession({
    workspace: project,
    spawnTransform: new b.SessionSandbox({ setting: { value: "on", source: "bench" } }).transform,
  });
  runtimes.push(runtime);
  return new b.LspManager({
    workspace: project,
    config: { pyright: { disabled: true }, bash: { disabled: true } },
    sandbox: new b.LspSandbox({ runtime }),
    read: (p) => fsp.readFile(p, "utf8"),
    env,
    lookupEnv: env,
    waitMs: 30_000,
  });
};
const signal = new AbortController().signal;

// First start: a fresh manager each round, the builds interleaved; the event loop watched meanwhile.
const starts = new Map(builds.map((b) => [b.name, []]));
const stalls = new Map(builds.map((b) => [b.name, []]));
for (let i = 0; i < STARTS; i++) {
  for (const b of builds) {
    const lsp = manager(b);
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    starts.get(b.name).push(
      await timed(async () => {
        const answer = await lsp.query({ action: "diagnostics", path: file(100) }, signal);
        if (answer.items.length) throw new Error(`mod100.ts has problems: ${JSON.stringify(answer.items)}`);
      }),
    );
    delay.disable();
    stalls.get(b.name).push(delay.max / 1e6);
    await lsp.close();
  }
}

// Warm edits (this build).
const lsp = manager(builds[0]);
for (const i of [99, 100, 101]) await lsp.query({ action: "diagnostics", path: file(i) }, signal);
const clean = source(100);
const broken = clean.replace("`export const value100: number = value99 + 1;`", "").replace("value99 + 1;", 'value99 + "1";');
const breaking = [];
const fixing = [];
for (let i = 0; i < EDITS; i++) {
  const text = i % 2 ? clean : broken;
  let block;
  const ms = await timed(async () => {
    const pending = await lsp.beginEdit([file(100)]);
    await fsp.writeFile(file(100), text);
    block = await pending.after();
  });
  if (i % 2) {
    if (block !== undefined) throw new Error(`the fix reported ${block}`);
    fixing.push(ms);
  } else {
    if (!block || block.split("\n").length !== 2) throw new Error(`the break reported ${block}`);
    breaking.push(ms);
  }
}
await lsp.close();
for (const runtime of runtimes) await runtime.close();
await fsp.rm(project, { recursive: true, force: true });

console.log(`TypeScript project of ${FILES} files (${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)})`);
for (const b of builds) {
  const ms = starts.get(b.name);
  console.log(
    `${b.name}: first start → diagnostics of one file: median ${fmt(median(ms))} ms (${ms.map((s) => s.toFixed(0)).join(", ")}); the event loop's slowest stall meanwhile: median ${fmt(median(stalls.get(b.name)))} ms, max ${fmt(Math.max(...stalls.get(b.name)))} ms`,
  );
}
console.log(`warm edit that breaks the file (1 new error): median ${fmt(median(breaking))} ms, max ${fmt(Math.max(...breaking))} ms`);
console.log(`warm edit that fixes it (none): median ${fmt(median(fixing))} ms, max ${fmt(Math.max(...fixing))} ms`);
