// The layer table of docs/architecture.md says what each entry of src/ imports. This keeps that
// column true: every entry it names is one the code imports and eslint.config.js lets it import
// (asked of ESLint itself, with the project's config), and nothing the code imports is left out.
// The column's format is in the comment above the table.
import fs from "node:fs";
import { isBuiltin } from "node:module";
import os from "node:os";
import path from "node:path";
import { ESLint } from "eslint";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const src = path.join(root, "src");
const doc = path.join(root, "docs/architecture.md");

/** The rules that say "this import is not allowed here": layers, package bans, their import() form. */
const IMPORT_RULES = new Set(["import-x/no-restricted-paths", "no-restricted-imports", "no-restricted-syntax"]);
/** The most words a row's "owns" cell may take: the detail goes to the folder's README. */
const MAX_OWNS_WORDS = 25;

interface Row {
  /** `tool/` for a folder, `cli.ts` for a file at the top of src/. */
  entry: string;
  /** Where the entry cell links to (a folder's README), if anywhere. */
  link?: string;
  owns: string;
  /** The backticked names of the imports cell, in order. */
  imports: string[];
}

const backticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");

/** The rows of the table under `## Layers`. */
function parseTable(markdown: string): Row[] {
  const start = markdown.search(/^## Layers\b/m);
  if (start < 0) throw new Error("docs/architecture.md has no `## Layers` section");
  const section = markdown.slice(start).split(/\n(?=## )/)[0] ?? "";
  const lines = section.split("\n").filter((line) => line.startsWith("|"));
  return lines.slice(2).map((line) => {
    // A cell may hold `\|` (GitHub needs it even inside backticks).
    const cells = line.split(/(?<!\\)\|/).slice(1, -1);
    if (cells.length !== 3) throw new Error(`a layer table row has ${cells.length} cells, not 3: ${line}`);
    const [entryCell = "", owns = "", imports = ""] = cells.map((cell) => cell.trim());
    const entry = backticked(entryCell)[0];
    if (!entry) throw new Error(`a layer table row names no folder or file in backticks: ${line}`);
    const link = /\]\(([^)]+)\)/.exec(entryCell)?.[1];
    return { entry, ...(link ? { link } : {}), owns, imports: backticked(imports) };
  });
}

const isOurs = (name: string) => name.endsWith("/") || name.endsWith(".ts");

/** The entries of src/: each folder (`tool/`) and each file at the top (`cli.ts`). */
function srcEntries(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() || e.name.endsWith(".ts"))
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort();
}

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []));
}

/** The src/ entry a path lies in: `tool/` for src/tool/x.ts, `cli.ts` for src/cli.ts. */
function entryOf(srcDir: string, file: string): string {
  const [first = "", ...rest] = path.relative(srcDir, file).split(path.sep);
  return rest.length ? `${first}/` : first.replace(/\.js$/, ".ts");
}

/** A package's name from a specifier: `@ai-sdk/openai` of `@ai-sdk/openai/internal`, `zod` of `zod/v4`. */
const packageName = (spec: string) =>
  spec
    .split("/")
    .slice(0, spec.startsWith("@") ? 2 : 1)
    .join("/");

/**
 * What an entry of `srcDir` imports besides itself: each other entry and each package (Node's
 * built-ins aside), with the files that import it. TypeScript's own scanner reads the specifiers,
 * so `import`, `import type`, `export … from` and `import("…")` all count, and comments and strings
 * do not.
 */
function importsOf(srcDir: string, entry: string): Map<string, string[]> {
  const where = path.join(srcDir, entry);
  const files = entry.endsWith("/") ? tsFiles(where) : [where];
  const found = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true);
    for (const { fileName: spec } of importedFiles) {
      if (!spec.startsWith(".") && isBuiltin(spec)) continue;
      const target = spec.startsWith(".") ? entryOf(srcDir, path.resolve(path.dirname(file), spec)) : packageName(spec);
      if (target === entry) continue;
      const files = found.get(target) ?? [];
      const name = path.relative(srcDir, file);
      if (!files.includes(name)) files.push(name);
      found.set(target, files);
    }
  }
  return found;
}

/** Whether an imports-cell name covers an import: itself, or `@scope/*` for that scope's packages. */
const covers = (claim: string, target: string) => claim === target || (claim.endsWith("/*") && target.startsWith(claim.slice(0, -1)));

/** How `entry`'s code would spell an import of `claim`: a real module in a folder of ours, else the package. */
function specifierFor(entry: string, claim: string, actual: Map<string, string[]>): string[] {
  if (claim.endsWith("/*")) {
    const scoped = [...actual.keys()].filter((target) => covers(claim, target));
    return scoped.length ? scoped : [`${claim.slice(0, -1)}any`];
  }
  if (!isOurs(claim)) return [claim];
  const target = path.join(src, claim);
  const module = claim.endsWith("/")
    ? path.join(
        target,
        fs
          .readdirSync(target)
          .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts"))
          .sort()[0] ?? "index.ts",
      )
    : target;
  const from = entry.endsWith("/") ? path.join(src, entry) : src;
  const relative = path.relative(from, module).replace(/\.ts$/, ".js");
  return [relative.startsWith(".") ? relative : `./${relative}`];
}

/** Where ESLint lints an entry's probe: a new file in its folder, or the top file itself. */
const probePath = (entry: string) => (entry.endsWith("/") ? path.join(src, entry, "architecture-doc-probe.ts") : path.join(src, entry));

/**
 * Each name of the row's imports cell that eslint.config.js forbids for the entry, with the
 * config's message: one probe file importing them all, one import per line, linted with the
 * project's own config.
 */
async function forbiddenClaims(eslint: ESLint, row: Row, actual: Map<string, string[]>): Promise<Map<string, string>> {
  const lines = row.imports.flatMap((claim) => specifierFor(row.entry, claim, actual).map((spec) => ({ claim, spec })));
  const code = lines.map(({ spec }) => `import "${spec}";\n`).join("");
  const [result] = await eslint.lintText(code, { filePath: probePath(row.entry) });
  const forbidden = new Map<string, string>();
  for (const message of result?.messages ?? []) {
    if (!message.ruleId || !IMPORT_RULES.has(message.ruleId)) continue;
    const claim = lines[message.line - 1]?.claim;
    if (claim) forbidden.set(claim, message.message);
  }
  return forbidden;
}

/** What is wrong with one row: names the config forbids, imports it leaves out, names the code never imports. */
function rowProblems(row: Row, actual: Map<string, string[]>, forbidden: Map<string, string>): string[] {
  const problems: string[] = [];
  for (const [claim, message] of forbidden) {
    problems.push(`${row.entry} lists ${claim}, which eslint.config.js forbids: ${message}`);
  }
  for (const [target, files] of actual) {
    if (!row.imports.some((claim) => covers(claim, target))) {
      problems.push(`${row.entry} imports ${target} (${files.join(", ")}), which its row leaves out`);
    }
  }
  for (const claim of row.imports) {
    if (![...actual.keys()].some((target) => covers(claim, target))) problems.push(`${row.entry} lists ${claim}, which it does not import`);
  }
  return problems;
}

let eslint: ESLint;
let rows: Row[];
beforeAll(() => {
  eslint = new ESLint({ cwd: root });
  rows = parseTable(fs.readFileSync(doc, "utf8"));
});

describe("docs/architecture.md's layer table", () => {
  it("has one row for each entry of src/", () => {
    expect(rows.map((row) => row.entry).sort()).toEqual(srcEntries(src));
  });

  it("keeps each row to one line: the owns cell within the word limit, each folder's detail in its linked README", () => {
    for (const row of rows) {
      expect(row.owns.split(/\s+/).length, `${row.entry}'s owns cell`).toBeLessThanOrEqual(MAX_OWNS_WORDS);
      if (row.entry === "types/" || !row.entry.endsWith("/")) continue;
      expect(row.link, `${row.entry} links its README`).toBe(`../src/${row.entry}README.md`);
      expect(fs.existsSync(path.join(src, row.entry, "README.md")), `src/${row.entry}README.md exists`).toBe(true);
    }
  });

  it("lists what each entry imports: all of it, nothing more, nothing eslint.config.js forbids", async () => {
    const problems: string[] = [];
    for (const row of rows) {
      const actual = importsOf(src, row.entry);
      problems.push(...rowProblems(row, actual, await forbiddenClaims(eslint, row, actual)));
    }
    expect(problems).toEqual([]);
  });
});

describe("the checker can fail (controls)", () => {
  let scratch: string;
  beforeAll(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "toolhost-architecture-doc-"));
  });
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it("reads a doctored table: a row that lists an import the zones forbid and leaves out one the code makes", async () => {
    const real = rows.find((row) => row.entry === "host/");
    expect(real?.imports).toContain("policy/");
    const table = [
      "## Layers (`src/`)",
      "",
      "| folder | owns | imports |",
      "|---|---|---|",
      `| [\`host/\`](../src/host/README.md) | the host | ${real?.imports
        .filter((name) => name !== "policy/")
        .concat("agent/", "ai")
        .map((name) => `\`${name}\``)
        .join(", ")} |`,
      "",
      "## Next",
    ].join("\n");
    const [doctored] = parseTable(table);
    expect(doctored?.entry).toBe("host/");
    const actual = importsOf(src, "host/");
    const problems = rowProblems(doctored as Row, actual, await forbiddenClaims(eslint, doctored as Row, actual));
    expect(problems).toHaveLength(5);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^host\/ lists agent\/, which eslint\.config\.js forbids: .*host\/ sits below agent\//),
        expect.stringMatching(/^host\/ lists ai, which eslint\.config\.js forbids: .*The AI SDK is imported only/),
        expect.stringMatching(/^host\/ imports policy\/ \(host\/.*\.ts.*\), which its row leaves out$/),
        "host/ lists agent/, which it does not import",
        "host/ lists ai, which it does not import",
      ]),
    );
  });

  it("a forbidden package stays forbidden behind a scope pattern, and an allowed one passes", async () => {
    const row: Row = { entry: "tools/", owns: "", imports: ["tool/", "@ai-sdk/*", "zod"] };
    const forbidden = await forbiddenClaims(eslint, row, new Map());
    expect([...forbidden.keys()]).toEqual(["@ai-sdk/*"]);
  });

  it("the scanner counts static, type-only, re-exported and dynamic imports, and nothing in comments or strings", () => {
    const dir = path.join(scratch, "src");
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    };
    write("low/a.ts", "export const a = 1;\n");
    write("mid/b.ts", "export const b = 1;\n");
    write("top.ts", "export const t = 1;\n");
    write("pkg/c.ts", "export const c = 1;\n");
    write(
      "up/deep/x.ts",
      [
        'import { a } from "../../low/a.js";',
        'import type { b } from "../../mid/b.js";',
        'export * from "../../pkg/c.js";',
        'export const load = () => import("../../top.js");',
        'import { z } from "zod/v4";',
        'import type { LanguageModel } from "@ai-sdk/provider/internal";',
        'import fs from "node:fs";',
        'import path from "path";',
        'import { y } from "../y.js";',
        '// import { no } from "../../comment/x.js";',
        "const text = 'from \"../../string/x.js\"';",
        "export const all = [a, z, fs, path, y, text];",
      ].join("\n"),
    );
    write("up/y.ts", "export const y = 1;\n");
    const found = importsOf(dir, "up/");
    expect([...found.keys()].sort()).toEqual(["@ai-sdk/provider", "low/", "mid/", "pkg/", "top.ts", "zod"]);
    expect(found.get("top.ts")).toEqual([path.join("up", "deep", "x.ts")]);
    expect(srcEntries(dir)).toEqual(["low/", "mid/", "pkg/", "top.ts", "up/"]);
  });
});
