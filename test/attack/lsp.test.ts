import { existsSync, realpathSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { FakeToolCall } from "../fixtures/fake-openai.mjs";
import { LspManager } from "../../src/runtime/lsp/manager.js";
import type { LspLaunch } from "../../src/runtime/lsp/client.js";
import { until } from "../helpers.js";
import {
  attack,
  bwrapInstalled,
  expectNothingLanded,
  runCliAs,
  stage,
  stageEnv,
  toolResults,
  USERS,
  type RunAs,
  type Stage,
} from "./harness.js";

// Issue 33: language servers are workspace code. In a trusted project, a
// node_modules/.bin/typescript-language-server planted by a sandboxed command, or a
// node_modules/typescript/lib/tsserver.js changed by an accepted write, starts when the agent
// reads and edits a .ts file. Each payload writes a marker in the stage's home (outside the
// workspace), writes a file into the workspace and connects to the harness's listener: inside the
// sandbox none of it lands, and the server still runs (the edit's result shows what it said).
// Control: the same launch as it is, unsandboxed (the old trusted path), lands all three.

const BIN = fileURLToPath(new URL("../../node_modules/.bin", import.meta.url));
const REAL_TYPESCRIPT = realpathSync(fileURLToPath(new URL("../../node_modules/typescript", import.meta.url)));
const MARKER = "lsp-marker";
const PLANT = "src/lsp-plant.ts";

/**
 * CommonJS that tries the three effects before anything else and keeps the outcomes in `outcome`;
 * the connection is made by a child it waits for, so all three are done when it goes on.
 */
function payload(s: Stage): string {
  const connect = [
    `const c = require("node:net").connect(${s.port}, "127.0.0.1", () => c.end("from a language server", () => console.log("connected")));`,
    `c.on("error", (err) => console.log(err.code));`,
    `c.on("close", () => process.exit(0));`,
  ].join("\n");
  const files = [
    ["marker", path.join(s.home, MARKER)],
    ["workspace", path.join(s.ws, PLANT)],
  ];
  return `const fs = require("node:fs");
const outcome = {};
for (const [name, file] of ${JSON.stringify(files)}) {
  try { fs.writeFileSync(file, "planted by a language server"); outcome[name] = "written"; } catch (err) { outcome[name] = err.code; }
}
const net = require("node:child_process").spawnSync(process.execPath, ["-e", ${JSON.stringify(connect)}], { encoding: "utf8", timeout: 20000 });
outcome.net = (net.stdout || "").trim() || "failed";
`;
}

/** (a) A typescript-language-server of its own: the payload, then a server that publishes its outcome at the first change. */
async function plantServer(s: Stage): Promise<void> {
  const file = path.join(s.ws, "node_modules/.bin/typescript-language-server");
  await fsp.mkdir(path.dirname(file), { recursive: true });
  const server = `
let buffer = Buffer.alloc(0);
const send = (message) => {
  const body = JSON.stringify({ jsonrpc: "2.0", ...message });
  process.stdout.write("Content-Length: " + Buffer.byteLength(body) + "\\r\\n\\r\\n" + body);
};
const publish = (uri, diagnostics) => send({ method: "textDocument/publishDiagnostics", params: { uri, diagnostics } });
process.stdin.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (;;) {
    const end = buffer.indexOf("\\r\\n\\r\\n");
    if (end < 0) return;
    const length = Number(/Content-Length: (\\d+)/i.exec(buffer.subarray(0, end).toString())[1]);
    if (buffer.length < end + 4 + length) return;
    const m = JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString());
    buffer = buffer.subarray(end + 4 + length);
    if (m.method === "initialize") send({ id: m.id, result: { capabilities: { textDocumentSync: 1 } } });
    else if (m.method === "textDocument/didOpen") publish(m.params.textDocument.uri, []);
    else if (m.method === "textDocument/didChange") {
      const said = "lsp payload ran: marker " + outcome.marker + ", workspace " + outcome.workspace + ", network " + outcome.net;
      publish(m.params.textDocument.uri, [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, severity: 1, message: said }]);
    } else if (m.method === "shutdown") send({ id: m.id, result: null });
    else if (m.method === "exit") process.exit(0);
    else if (m.id !== undefined) send({ id: m.id, error: { code: -32601, message: "not here" } });
  }
});
`;
  await fsp.writeFile(file, `#!${process.execPath}\n${payload(s)}${server}`, { mode: 0o755 });
  await s.own(path.join(s.ws, "node_modules"));
}

/** (b) The project's own typescript with a changed tsserver.js: the payload, then the real tsserver. */
async function plantTsserver(s: Stage): Promise<void> {
  const dir = path.join(s.ws, "node_modules/typescript");
  await fsp.mkdir(path.join(dir, "lib"), { recursive: true });
  await fsp.copyFile(path.join(REAL_TYPESCRIPT, "package.json"), path.join(dir, "package.json"));
  const real = JSON.stringify(path.join(REAL_TYPESCRIPT, "lib/tsserver.js"));
  await fsp.writeFile(path.join(dir, "lib/tsserver.js"), `${payload(s)}module.exports = require(${real});\n`);
  await s.own(path.join(s.ws, "node_modules"));
}

const PLANTS = [
  { name: "(a) a planted node_modules/.bin/typescript-language-server", plant: plantServer, ran: "lsp payload ran: marker " },
  {
    name: "(b) a changed node_modules/typescript/lib/tsserver.js",
    plant: plantTsserver,
    ran: "Type 'string' is not assignable to type 'number'.",
  },
];

const EDIT: FakeToolCall[] = [
  { name: "read", arguments: { path: "src/a.ts" } },
  { name: "edit", arguments: { path: "src/a.ts", old_string: "export const a = 1;", new_string: 'export const a: number = "one";' } },
];

/** What landed of the payload's three effects. */
async function landed(s: Stage): Promise<string[]> {
  const found: string[] = [];
  if (existsSync(path.join(s.home, MARKER))) found.push("the marker outside the workspace");
  if (existsSync(path.join(s.ws, PLANT))) found.push("the file in the workspace");
  if (s.received.length) found.push("the listener");
  return found;
}

/** Servers need a moment to start on a loaded machine; the edit's wait ends at their answer. */
const env = (s: Stage) => ({ PATH: `${BIN}${path.delimiter}${process.env.PATH ?? ""}`, TOOLHOST_LSP_WAIT_MS: "60000", HOME: s.home });

/** The launch as it is, as the stage's user: the unsandboxed path the control takes. */
const unsandboxed = (user: RunAs) => ({
  launch: async (launch: LspLaunch) =>
    user.uid === undefined
      ? launch
      : {
          ...launch,
          file: "setpriv",
          args: [`--reuid=${user.uid}`, `--regid=${user.uid}`, "--clear-groups", "--", launch.file, ...launch.args],
        },
});

// One at a time: each starts a tsserver, and the machine may be loaded.
describe.each(USERS)("issue 33, language servers, as $name", { timeout: 180_000 }, (user) => {
  it.skipIf(!bwrapInstalled()).each(PLANTS)("$name, in a trusted project: runs, sandboxed, and nothing lands", async ({ plant, ran }) => {
    const s = await stage(user);
    try {
      await plant(s);
      const trusted = await runCliAs(s, ["trust", s.ws], stageEnv(s, undefined, env(s)));
      expect(trusted.code, trusted.stderr).toBe(0);
      const result = await attack(s, EDIT, { env: env(s) });
      expect(result.code, result.stderr).toBe(0);
      // The server ran: the edit's result carries what it said.
      expect(toolResults(result).join("\n")).toContain(ran);
      expect(await landed(s)).toEqual([]);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it.each(PLANTS)("control: $name, launched as it is (the old trusted path), lands everything", async ({ plant }) => {
    const s = await stage(user);
    const lsp = new LspManager({
      workspace: s.ws,
      config: undefined,
      sandbox: unsandboxed(user),
      read: (abs) => fsp.readFile(abs, "utf8"),
      env: { ...env(s) },
      lookupEnv: env(s),
      waitMs: 60_000,
    });
    try {
      await plant(s);
      const file = path.join(s.ws, "src/a.ts");
      const pending = await lsp.beginEdit([file]);
      await fsp.writeFile(file, 'export const a: number = "one";\n');
      await pending?.after();
      await until(async () => (await landed(s)).length === 3, 30_000).catch(() => undefined);
      expect(await landed(s)).toEqual(["the marker outside the workspace", "the file in the workspace", "the listener"]);
    } finally {
      await lsp.close();
      await s.close();
    }
  });
});
