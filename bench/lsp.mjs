// Issue 25 targets: the new errors after an edit in a warm 200-file TypeScript project in < 1.5 s,
// and the first server start as it is. Medians.
//   first start — a fresh session's language servers asked for one file's diagnostics: the
//                 typescript-language-server process, initialize, tsserver loading the project, the
//                 file opened and checked (what the first edit or read of a session pays, in the background)
//   warm edit   — with the server running and three files open: beginEdit (the file's text read, its
//                 diagnostics before), the write, after() (the new text sent, the file and the other
//                 open ones checked, compared), alternately breaking and fixing a file in the middle
//                 of an import chain
// Run after `npm run build`: node bench/lsp.mjs (typescript-language-server from node_modules/.bin)
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const { LspManager } = await import(path.join(root, "dist/runtime/lsp/manager.js"));

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
const manager = () =>
  new LspManager({
    workspace: project,
    config: { pyright: { disabled: true }, bash: { disabled: true } },
    trusted: () => true,
    read: (p) => fsp.readFile(p, "utf8"),
    env,
    lookupEnv: env,
    waitMs: 30_000,
  });
const signal = new AbortController().signal;

// First start: a fresh manager each round.
const starts = [];
for (let i = 0; i < STARTS; i++) {
  const lsp = manager();
  starts.push(
    await timed(async () => {
      const answer = await lsp.query({ action: "diagnostics", path: file(100) }, signal);
      if (answer.items.length) throw new Error(`mod100.ts has problems: ${JSON.stringify(answer.items)}`);
    }),
  );
  await lsp.close();
}

// Warm edits.
const lsp = manager();
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
await fsp.rm(project, { recursive: true, force: true });

console.log(`TypeScript project of ${FILES} files (${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)})`);
console.log(`first start → diagnostics of one file: median ${fmt(median(starts))} ms (${starts.map((s) => s.toFixed(0)).join(", ")})`);
console.log(`warm edit that breaks the file (1 new error): median ${fmt(median(breaking))} ms, max ${fmt(Math.max(...breaking))} ms`);
console.log(`warm edit that fixes it (none): median ${fmt(median(fixing))} ms, max ${fmt(Math.max(...fixing))} ms`);
