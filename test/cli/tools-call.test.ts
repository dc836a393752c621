import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { NO_ONE_TO_ASK } from "../../src/tools/question.js";
import { runCli } from "./harness.js";
import { CLI_PATH, useAgentEnv } from "../helpers.js";

// A fresh TOOLHOST_HOME: a developer's own ~/.toolhost (profiles, tools, trust) must not leak in.
const t = useAgentEnv({
  shared: true,
  files: {
    "src/a.ts": "export const a = 1; // TODO: rename\n",
    "src/b.ts": "import { a } from './a';\nconsole.log(a);\n",
    "README.md": "# demo\n",
  },
});
function toolhost(args: string[], cwd?: string) {
  return runCli(args, { cwd, env: t.env() });
}

beforeAll(async () => {
  await fsp.access(CLI_PATH).catch(() => {
    throw new Error("dist/cli.js is missing: run `npm run build` (npm test does) before these tests");
  });
});

describe("toolhost tools", () => {
  it("lists the local locked tools with kinds and JSON Schemas", async () => {
    const { code, stdout } = await toolhost(["tools", "--json"]);
    expect(code).toBe(0);
    const { tools } = JSON.parse(stdout) as { tools: { id: string; kind: string; source: string; parameters: { type: string } }[] };
    expect(tools.map((t) => [t.id, t.kind])).toEqual([
      ["read", "read"],
      ["write", "edit"],
      ["edit", "edit"],
      ["glob", "search"],
      ["grep", "search"],
      ["bash", "execute"],
      ["todo", "think"],
      ["task", "think"],
      ["question", "other"],
      ["web_fetch", "fetch"],
      ["skill", "read"],
      ["tool_search", "search"],
      ["process", "execute"],
      ["lsp", "read"],
    ]);
    for (const t of tools) {
      expect(t.parameters.type).toBe("object");
      expect(t.source).toBe("builtin");
    }
  });

  it("prints a readable table without --json", async () => {
    const { code, stdout } = await toolhost(["tools"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^read\s+read\s+/m);
    expect(stdout).toMatch(/^bash\s+execute\s+/m);
  });
});

describe("toolhost call", () => {
  it("runs each tool through invoke and prints the envelope", async () => {
    // The envelope's data as JSON gives it: each case reads the fields of its own tool.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const cases: [string, unknown, (data: any) => void][] = [
      ["read", { path: "src/a.ts" }, (d) => expect(d.content).toContain("export const a = 1")],
      ["grep", { pattern: "TODO" }, (d) => expect(d.matches[0]).toMatchObject({ path: "src/a.ts", line: 1 })],
      ["glob", { pattern: "src/*.ts" }, (d) => expect(d.files).toEqual(["src/a.ts", "src/b.ts"])],
      [
        "bash",
        { command: "echo hello; echo err >&2; exit 3" },
        (d) => expect(d).toMatchObject({ stdout: "hello\n", stderr: "err\n", exit_code: 3 }),
      ],
      ["write", { path: "notes/new.md", content: "hi\n" }, (d) => expect(d.created).toBe(true)],
      ["edit", { path: "notes/new.md", old_string: "hi", new_string: "hello" }, (d) => expect(d.replacements).toBe(1)],
      ["todo", { todos: [{ content: "Ship it", status: "in_progress" }] }, (d) => expect(d.todos).toHaveLength(1)],
    ];
    for (const [id, args, check] of cases) {
      const { code, stdout } = await toolhost(["call", id, JSON.stringify(args), "--cwd", t.ws]);
      const envelope = JSON.parse(stdout);
      expect({ id, code, type: envelope.type }).toEqual({ id, code: 0, type: "output" });
      expect(envelope.metadata.duration_ms).toBeTypeOf("number");
      check(envelope.data);
    }
    expect(await fsp.readFile(path.join(t.ws, "notes/new.md"), "utf8")).toBe("hello\n");
  });

  it("goes through the session's policy: full by default, --mode to choose, an unanswerable ask is a deny", async () => {
    const touch = (name: string, ...flags: string[]) =>
      toolhost(["call", "bash", JSON.stringify({ command: `touch ${name}` }), "--cwd", t.ws, ...flags]);
    const made = (name: string) =>
      fsp.access(path.join(t.ws, name)).then(
        () => true,
        () => false,
      );

    expect((await touch("by-default")).code).toBe(0);
    expect(await made("by-default")).toBe(true);

    for (const mode of ["ask", "accept-edits", "read-only"]) {
      const refused = await touch(`in-${mode}`, "--mode", mode);
      expect({ mode, code: refused.code }).toEqual({ mode, code: 1 });
      expect(JSON.parse(refused.stdout).metadata.error_code).toBe("permission_denied");
      expect(await made(`in-${mode}`)).toBe(false);
    }
    // accept-edits lets an edit inside the workspace run without asking.
    const edited = await toolhost([
      "call",
      "write",
      JSON.stringify({ path: "notes/mode.md", content: "x\n" }),
      "--cwd",
      t.ws,
      "--mode",
      "accept-edits",
    ]);
    expect(edited.code).toBe(0);
    expect((await toolhost(["call", "read", '{"path":"src/a.ts"}', "--cwd", t.ws, "--mode", "read-only"])).code).toBe(0);
    expect((await toolhost(["call", "read", '{"path":"src/a.ts"}', "--cwd", t.ws, "--mode", "sideways"])).code).toBe(2);
  });

  it("exits 1 with an error envelope, 2 on bad usage", async () => {
    const missing = await toolhost(["call", "read", '{"path":"nope.ts"}', "--cwd", t.ws]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ type: "error", metadata: { error_code: "not_found" } });

    const invalid = await toolhost(["call", "read", '{"path":5}', "--cwd", t.ws]);
    expect(invalid.code).toBe(1);
    expect(JSON.parse(invalid.stdout).metadata.error_code).toBe("invalid_arguments");

    for (const args of [["call"], ["call", "read", "{not json"], ["frobnicate"], ["tools", "--nope"]]) {
      const bad = await toolhost(args);
      expect(bad.code).toBe(2);
      expect(bad.stdout).toBe("");
      // The subcommand's usage, or for an unknown command the list of commands.
      expect(bad.stderr).toMatch(/Usage|commands: /);
    }
  });

  it("question is headless here: one fixed refusal, in every mode (asking needs no approval)", async () => {
    const args = JSON.stringify({ questions: [{ question: "Which database?", options: [{ label: "Postgres" }, { label: "SQLite" }] }] });
    for (const mode of ["full", "ask", "read-only"]) {
      const { code, stdout } = await toolhost(["call", "question", args, "--cwd", t.ws, "--mode", mode]);
      expect(code).toBe(1);
      expect(JSON.parse(stdout)).toMatchObject({
        type: "error",
        error_text: NO_ONE_TO_ASK,
        metadata: { error_code: "unavailable" },
      });
    }
  });
});
