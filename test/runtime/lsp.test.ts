import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LspManager } from "../../src/runtime/lsp/manager.js";
import { LspSandbox } from "../../src/runtime/lsp/sandbox.js";
import { sandboxStatus } from "../sandbox-status.js";
import { SessionSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { tempDir } from "../helpers.js";

// The session's language servers with the real typescript-language-server (+ typescript) and
// pyright from the dev dependencies, on a small fixture project, one manager for the file, every
// server inside the sandbox (confined: the workspace read-only, a cache folder, no network): new
// errors only after an edit, nothing for a fix, another open file an edit broke, definition and
// references on the right lines; a server that crashes is said once and skipped; without a
// sandbox none starts; no server process and no cache folder is left after close (/proc).

const BIN = fileURLToPath(new URL("../../node_modules/.bin", import.meta.url));
const CRASHY = fileURLToPath(new URL("../fixtures/lsp-crash-server.mjs", import.meta.url));
const env = { ...process.env, PATH: `${BIN}${path.delimiter}${process.env.PATH ?? ""}` } as Record<string, string>;

const FILES = {
  "tsconfig.json": JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "nodenext" } }),
  "a.ts": "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
  "b.ts": 'import { add } from "./a.js";\n\nexport const total: number = add(1, 2);\n',
  "broken.ts": 'export const n: number = "already broken";\n',
  "m.py": "def add(a: int, b: int) -> int:\n    return a + b\n",
  "note.crash": "hello\n",
};

let ws: string;
let lsp: LspManager;
/** Where the servers' cache folders are made: empty once the managers closed. */
let caches: string;
let runtime: RuntimeSession;

const sandbox = await sandboxStatus("runtime/lsp.test.ts");
if (!sandbox.available) console.warn(`runtime/lsp.test.ts: the servers need a sandbox, their cases are skipped: ${sandbox.reason}`);
const withSandbox = describe.skipIf(!sandbox.available);

/** Each manager's launches: the session's sandbox, confined. */
const sandboxed = () => new LspSandbox({ runtime, tmpRoot: caches });

const LANGUAGE_SERVER = /typescript-language-server|tsserver|pyright|lsp-crash-server/;

/** This worker's descendants that are language servers (theirs: tsserver under typescript-language-server). */
async function serverProcesses(): Promise<string[]> {
  const parents = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of await fsp.readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fsp.readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (!stat || fields[0] === "Z") continue;
    parents.set(Number(entry), Number(fields[1]));
    commands.set(Number(entry), (await fsp.readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "")).replace(/\0/g, " "));
  }
  const mine = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === process.pid) return true;
    return false;
  };
  return [...commands].filter(([pid, cmd]) => LANGUAGE_SERVER.test(cmd) && mine(pid)).map(([pid, cmd]) => `${pid}: ${cmd}`);
}

/** Writes `text` to `rel` the way a tool call does, between beginEdit and after; the block after it. */
async function edit(rel: string, text: string, manager = lsp): Promise<string | undefined> {
  const abs = path.join(ws, rel);
  const pending = await manager.beginEdit([abs]);
  await fsp.writeFile(abs, text);
  return pending?.after();
}

const read = (abs: string) => fsp.readFile(abs, "utf8");

beforeAll(async () => {
  ws = await fsp.realpath(await tempDir(FILES));
  caches = await tempDir();
  runtime = new RuntimeSession({
    workspace: ws,
    spawnTransform: new SessionSandbox({ setting: { value: "on", source: "test" } }).transform,
  });
  lsp = new LspManager({
    workspace: ws,
    config: { crashy: { command: process.execPath, args: [CRASHY], extensions: [".crash"] } },
    sandbox: sandboxed(),
    read,
    env,
    lookupEnv: env,
    // Generous for a loaded machine: a settled server ends the wait long before.
    waitMs: 30_000,
  });
});

afterAll(async () => {
  await lsp.close();
  await runtime.close();
  await fsp.rm(ws, { recursive: true, force: true });
  await fsp.rm(caches, { recursive: true, force: true });
});

withSandbox("diagnostics after an edit, TypeScript", () => {
  it("an edit that introduces a type error reports exactly that error", async () => {
    const block = await edit("a.ts", FILES["a.ts"].replace("return a + b;", 'return "x";'));
    expect(block).toBe("New problems after this edit:\na.ts:2:3 Type 'string' is not assignable to type 'number'.");
  });

  it("a fix reports none", async () => {
    expect(await edit("a.ts", FILES["a.ts"])).toBeUndefined();
  });

  it("an edit in a file that already had errors reports only the new one (the old one moved a line down)", async () => {
    const text = `export const m: string = 42;\n${FILES["broken.ts"]}`;
    expect(await edit("broken.ts", text)).toBe(
      "New problems after this edit:\nbroken.ts:1:14 Type 'number' is not assignable to type 'string'.",
    );
  });

  it("another open file the edit broke is reported too", async () => {
    // b.ts is open in the server (the lsp tool's diagnostics opened it) and clean.
    expect((await lsp.query({ action: "diagnostics", path: path.join(ws, "b.ts") }, new AbortController().signal)).items).toEqual([]);
    const block = await edit("a.ts", FILES["a.ts"].replace("function add", "function sum"));
    expect(block).toBe(`New problems after this edit:\nb.ts:1:10 Module '"./a.js"' has no exported member 'add'.`);
    expect(await edit("a.ts", FILES["a.ts"])).toBeUndefined();
  });

  it("definition and references land on the right lines", async () => {
    const signal = new AbortController().signal;
    const b = path.join(ws, "b.ts");
    const definition = await lsp.query({ action: "definition", path: b, line: 3, character: 30 }, signal);
    expect(definition.items).toEqual([
      { path: path.join(ws, "a.ts"), line: 1, column: 17, text: "export function add(a: number, b: number): number {" },
    ]);
    const references = await lsp.query({ action: "references", path: path.join(ws, "a.ts"), line: 1, character: 17 }, signal);
    expect(references.items.map((i) => `${path.basename(i.path)}:${i.line}:${i.column}`).sort()).toEqual([
      "a.ts:1:17",
      "b.ts:1:10",
      "b.ts:3:30",
    ]);
    const hover = await lsp.query({ action: "hover", path: b, line: 3, character: 30 }, signal);
    expect(hover.text).toContain("add(a: number, b: number): number");
    const symbols = await lsp.query({ action: "symbols", path: path.join(ws, "a.ts") }, signal);
    expect(symbols.items.map((i) => `${i.line}:${i.text}`)).toEqual(["1:function add"]);
  });
});

withSandbox("diagnostics after an edit, Python (pyright)", () => {
  it("reports exactly the new error, and none after the fix", async () => {
    const block = await edit("m.py", FILES["m.py"].replace("return a + b", 'return "x"'));
    expect(block).toMatch(/^New problems after this edit:\nm\.py:2:12 Type "Literal\['x'\]" is not assignable to return type "int"/);
    expect(block!.split("\n")).toHaveLength(2);
    expect(await edit("m.py", FILES["m.py"])).toBeUndefined();
  });
});

withSandbox("a server that crashes", () => {
  it("is reported once, then skipped without waiting", async () => {
    const first = await edit("note.crash", "changed\n");
    expect(first).toMatch(
      /^The crashy language server exited \(code 3\): crashy: cannot handle a change; it is skipped for the rest of the session\.$/,
    );
    const started = performance.now();
    expect(await edit("note.crash", "changed again\n")).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1000);
    // The others still work.
    expect(await edit("a.ts", FILES["a.ts"].replace("return a + b;", "return a + c;"))).toBe(
      "New problems after this edit:\na.ts:2:14 Cannot find name 'c'.",
    );
    expect(await edit("a.ts", FILES["a.ts"])).toBeUndefined();
  });
});

withSandbox("a server that hangs", () => {
  it("gives nothing twice in a row: said once, then skipped; an edit waits no longer than the bound", async () => {
    const hung = new LspManager({
      workspace: ws,
      config: { silent: { command: process.execPath, args: [CRASHY, "--silent"], extensions: [".crash"] } },
      sandbox: sandboxed(),
      read,
      env,
      lookupEnv: env,
      waitMs: 1000,
      requestMs: 300,
    });
    // Started and open (the read's touch), so the edits find it running.
    await hung.query({ action: "symbols", path: path.join(ws, "note.crash") }, new AbortController().signal).catch(() => undefined);
    const timed = async (text: string) => {
      const started = performance.now();
      const block = await edit("note.crash", text, hung);
      return { block, ms: performance.now() - started };
    };
    const first = await timed("one\n");
    expect(first.block).toBeUndefined();
    const second = await timed("two\n");
    expect(second.block).toBe(
      "The silent language server did not give diagnostics within 1000 ms twice in a row; it is skipped for the rest of the session.",
    );
    for (const { ms } of [first, second]) expect(ms).toBeLessThan(1000 + 1500);
    const third = await timed("three\n");
    expect(third.block).toBeUndefined();
    expect(third.ms).toBeLessThan(500);
    await hung.close();
  });
});

describe("no sandbox", () => {
  it("starts no server, trusted project or not, and says why once", async () => {
    const switchedOff = new SessionSandbox({ setting: { value: "off", source: "TOOLHOST_SANDBOX" } });
    const off = new RuntimeSession({ workspace: ws, spawnTransform: switchedOff.transform });
    const launcher = new LspSandbox({ runtime: off, state: () => switchedOff.state(), tmpRoot: caches });
    const none = new LspManager({ workspace: ws, config: undefined, sandbox: launcher, read, env, lookupEnv: env });
    const before = (await serverProcesses()).length;
    const block = await edit("a.ts", FILES["a.ts"].replace("return a + b;", 'return "x";'), none);
    expect(block).toBe(
      "Language servers run workspace code (node_modules/.bin, tsserver.js, pyright's config), so they run only inside the sandbox, trusted project or not, and no sandbox can run them here: switched off (TOOLHOST_SANDBOX). None started.",
    );
    expect(await edit("a.ts", FILES["a.ts"], none)).toBeUndefined();
    expect(await edit("m.py", FILES["m.py"].replace("return a + b", 'return "x"'), none)).toBeUndefined();
    await edit("m.py", FILES["m.py"], none);
    expect((await serverProcesses()).length).toBe(before);
    await none.close();
    await off.close();
  });
});

withSandbox("the session's end", () => {
  it("leaves no server process and no cache folder behind (/proc)", async () => {
    expect((await serverProcesses()).length).toBeGreaterThanOrEqual(2);
    expect(await fsp.readdir(caches)).toHaveLength(1);
    await lsp.close();
    expect(await serverProcesses()).toEqual([]);
    expect(await fsp.readdir(caches)).toEqual([]);
  });
});
