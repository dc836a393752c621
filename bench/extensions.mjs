// Issue 5 target: a session's toolset with 50 extension files, built in under 300 ms (issue 10:
// also cold, with an empty transpile cache).
// Each run is a fresh Node process (what a new agent process pays), median of interleaved runs:
//   cold  — jiti's transpile cache is empty (the first start after the files were written or edited)
//   warm  — the cache is filled (every later start)
//   reload — a second build in the same process (what /reload pays)
//   none  — builtins only, the baseline
// plus the whole `toolhost tools --json` command, spawn to exit, with and without the 50 files.
// Run after `npm run build`: node bench/extensions.mjs
import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, runProcess } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const FILES = 50;
const base = await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-ext-"));
const home = path.join(base, "home");
const emptyHome = path.join(base, "empty-home");
const toolDir = path.join(base, "tools");
const project = path.join(base, "project");

// Fifty small but realistic tool files: a zod schema with descriptions, a shared helper, a title.
await fsp.mkdir(toolDir, { recursive: true });
await fsp.mkdir(project, { recursive: true });
await fsp.mkdir(emptyHome, { recursive: true });
await fsp.writeFile(
  path.join(toolDir, "_shared.ts"),
  `export const clamp = (n: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, n));\n`,
);
for (let i = 0; i < FILES; i++) {
  await fsp.writeFile(
    path.join(toolDir, `tool_${String(i).padStart(2, "0")}.ts`),
    `import { defineTool, ToolError, z } from "toolhost";
import { clamp } from "./_shared.ts";

interface Row { name: string; score: number }

export default defineTool({
  id: "bench_tool_${i}",
  description: "Benchmark tool ${i}: ranks the given rows by score and returns the top ones.",
  kind: "think",
  parameters: z.object({
    rows: z.array(z.object({ name: z.string(), score: z.number() })).describe("The rows to rank"),
    top: z.number().int().min(1).max(100).default(5).describe("How many to keep"),
    order: z.enum(["asc", "desc"]).default("desc"),
  }),
  requires: {},
  title: (args) => \`Rank \${args.rows.length} rows\`,
  async execute({ rows, top, order }): Promise<Row[]> {
    if (!rows.length) throw new ToolError("invalid_arguments", "no rows");
    const sorted = [...rows].sort((a, b) => (order === "desc" ? b.score - a.score : a.score - b.score));
    return sorted.slice(0, clamp(top, 1, rows.length));
  },
});
`,
  );
}
for (const h of [home, emptyHome]) await fsp.mkdir(h, { recursive: true });
await fsp.writeFile(path.join(home, "config.json"), JSON.stringify({ toolDirs: [toolDir] }));

// The child: import the library (as the CLI has it loaded already), then time buildToolset.
const child = `
const { buildToolset } = await import(${JSON.stringify(path.join(root, "dist/index.js"))});
const t0 = performance.now();
const first = await buildToolset({ cwd: ${JSON.stringify(project)} });
const t1 = performance.now();
const again = await buildToolset({ cwd: ${JSON.stringify(project)} });
const t2 = performance.now();
if (first.report.errors.length) throw new Error(JSON.stringify(first.report.errors));
process.stdout.write(JSON.stringify({ build: t1 - t0, reload: t2 - t1, tools: first.registry.ids().length }));
`;
const measure = (h) =>
  JSON.parse(
    execFileSync(process.execPath, ["--input-type=module", "-e", child], { env: { ...process.env, TOOLHOST_HOME: h } }).toString(),
  );
const clearCache = () => fsp.rm(path.join(home, "cache"), { recursive: true, force: true });
const cli = (h) =>
  runProcess(process.execPath, [path.join(root, "dist/cli.js"), "tools", "--json", "--cwd", project], {
    env: { ...process.env, TOOLHOST_HOME: h },
  });

const series = { cold: [], warm: [], reload: [], none: [], cliWarm: [], cliNone: [] };
let tools = 0;
measure(home); // fill the cache once, and warm the OS file cache
for (let i = 0; i < ROUNDS; i++) {
  await clearCache();
  series.cold.push(measure(home).build);
  const warm = measure(home);
  series.warm.push(warm.build);
  series.reload.push(warm.reload);
  tools = warm.tools;
  series.none.push(measure(emptyHome).build);
  series.cliWarm.push((await cli(home)).ms);
  series.cliNone.push((await cli(emptyHome)).ms);
}
await fsp.rm(base, { recursive: true, force: true });

const m = Object.fromEntries(Object.entries(series).map(([k, v]) => [k, median(v)]));
console.log(`${FILES} extension files (${tools} tools with the builtins), ${ROUNDS} interleaved rounds, Node ${process.versions.node}\n`);
console.log("| measurement | median | target |");
console.log("|---|---|---|");
console.log(`| build the toolset, cold (empty transpile cache) | ${fmt(m.cold)} ms | < 300 ms |`);
console.log(`| build the toolset, warm (a fresh process, cache filled) | ${fmt(m.warm)} ms | < 300 ms |`);
console.log(`| rebuild in the same process (/reload) | ${fmt(m.reload)} ms | |`);
console.log(`| build the toolset, builtins only | ${fmt(m.none)} ms | |`);
console.log(`| \`toolhost tools --json\`, spawn to exit, 50 files, warm | ${fmt(m.cliWarm)} ms | |`);
console.log(`| \`toolhost tools --json\`, spawn to exit, no extension files | ${fmt(m.cliNone)} ms | |`);
