import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/host/builtins.js";
import { invoke } from "../../src/host/invoke.js";
import { sessionAuthorizer, type ApprovalAnswer, type ApprovalRequest } from "../../src/policy/authorizer.js";
import type { ModeId } from "../../src/policy/modes.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import { builtinWatchdog } from "../../src/policy/watchdog/builtin.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { diskWorkspace, type Workspace } from "../helpers.js";

// Issue 20, class 2 (the watchdog's part): write and edit of a file that another program later
// runs as code (tool/project-control.ts) ask in every mode, `full` and `accept-edits` included,
// with a reason naming that program; headless they are refused. Through the real tools, so the
// targets are the paths the runtime resolved.

let ws: Workspace;
let asked: ApprovalRequest[];
let answers: ApprovalAnswer[];
const registry = builtinRegistry();

beforeEach(async () => {
  ws = await diskWorkspace({ "src/a.ts": "export const a = 1;\n", ".envrc": "export A=1\n", ".git/HEAD": "ref: refs/heads/main\n" });
  await fsp.mkdir(path.join(ws.root, ".git", "hooks"), { recursive: true });
  await fsp.mkdir(path.join(ws.root, ".vscode"), { recursive: true });
  await fsp.symlink(path.join(ws.root, ".git", "hooks"), path.join(ws.root, "innocent"));
  await fsp.symlink(path.join(ws.root, ".vscode"), path.join(ws.root, "editor"));
  asked = [];
  answers = [];
});
afterEach(() => ws.cleanup());

function run(toolId: string, args: Record<string, unknown>, mode: ModeId, headless = false): Promise<Envelope> {
  const authorize = sessionAuthorizer({
    roots: ws.session.roots,
    mode: () => mode,
    rules: new SessionRules(),
    ask: headless
      ? undefined
      : async (request) => {
          asked.push(request);
          return answers.shift() ?? "reject_once";
        },
    watchdog: builtinWatchdog(),
  });
  return invoke(registry, toolId, args, { session: ws.session, authorize });
}

const code = (e: Envelope) => (e.type === "output" ? "ran" : e.metadata.error_code);
const text = (e: Envelope) => (e.type === "error" ? e.error_text : "");
const write = (file: string) => ({ path: file, content: "echo planted\n" });

const ASKED: [string, RegExp][] = [
  [".toolhost/config.json", /toolhost loads/],
  [".mcp.json", /MCP servers/],
  [".vscode/tasks.json", /VS Code/],
  [".envrc", /direnv runs/],
  [".husky/pre-commit", /git runs as hooks/],
  [".pre-commit-config.yaml", /pre-commit/],
  ["editor/tasks.json", /VS Code/], // a symlink to .vscode
];
/** Inside a repository's .git/ (lexically or through a symlink) the git-internals check refuses outright, which is stronger. */
const REFUSED = [".git/hooks/pre-commit", ".git/config", "sub/.git/hooks/x", "innocent/pre-commit"];

describe("project-config", () => {
  for (const mode of ["full", "accept-edits"] as const) {
    it(`write asks in ${mode} mode, naming the program that runs the file later; rejected, nothing is written`, async () => {
      for (const [file, program] of ASKED) {
        asked = [];
        const envelope = await run("write", write(file), mode);
        expect([file, code(envelope)]).toEqual([file, "rejected"]);
        expect(asked).toHaveLength(1);
        expect(asked[0]?.why).toMatch(/^watchdog: project-config: write writes /);
        expect(asked[0]?.why).toMatch(program);
        expect(asked[0]?.why).toMatch(/outside the sandbox$/);
        if (file !== ".envrc") expect(await ws.text(file)).toBeUndefined();
      }
      expect(await ws.text(".envrc")).toBe("export A=1\n");
    });

    it(`write into .git/ (or through a symlink into it) never runs in ${mode} mode`, async () => {
      for (const file of REFUSED) {
        const envelope = await run("write", write(file), mode);
        expect([file, code(envelope)]).toEqual([file, "permission_denied"]);
        expect(text(envelope)).toMatch(/git-internals: .*inside \.git\//);
      }
      expect(asked).toHaveLength(0);
      expect(await ws.text(".git/hooks/pre-commit")).toBeUndefined();
    });
  }

  for (const mode of ["full", "accept-edits"] as const) {
    it(`in ${mode} mode, the write that makes a folder a bare repository's own asks, and so does one into it`, async () => {
      // Not a repository yet: objects/ and refs/ alone are ordinary folders.
      expect(code(await run("write", write("bare/objects/a"), mode))).toBe("ran");
      expect(code(await run("write", write("bare/refs/a"), mode))).toBe("ran");
      expect(asked).toHaveLength(0);
      // HEAD beside them makes it one: asked as .git is, and rejected here, nothing written.
      expect(code(await run("write", { path: "bare/HEAD", content: "ref: refs/heads/main\n" }, mode))).toBe("rejected");
      expect(asked[0]?.why).toMatch(/project-config: write writes bare\/HEAD, which git runs later/);
      expect(await ws.text("bare/HEAD")).toBeUndefined();
      // Once it is one (HEAD there), its config asks, as does a worktree's layout (HEAD and commondir).
      await fsp.writeFile(path.join(ws.root, "bare/HEAD"), "ref: refs/heads/main\n");
      expect(code(await run("write", { path: "bare/config", content: "[core]\n\tfsmonitor = x\n" }, mode))).toBe("rejected");
      await fsp.mkdir(path.join(ws.root, "wt"));
      await fsp.writeFile(path.join(ws.root, "wt/commondir"), "../bare\n");
      expect(code(await run("write", { path: "wt/HEAD", content: "ref: refs/heads/main\n" }, mode))).toBe("rejected");
      expect(asked).toHaveLength(3);
      expect(await ws.text("bare/config")).toBeUndefined();
    });
  }

  it("edit asks too, and runs once approved", async () => {
    answers = ["allow_once"];
    const envelope = await run("edit", { path: ".envrc", old_string: "A=1", new_string: "A=2" }, "full");
    expect(code(envelope)).toBe("ran");
    expect(asked[0]?.why).toMatch(/project-config: edit writes \.envrc, which direnv runs/);
    expect(await ws.text(".envrc")).toBe("export A=2\n");
  });

  it("headless in full mode, it is refused with the reason", async () => {
    const envelope = await run("write", write(".vscode/tasks.json"), "full", true);
    expect(code(envelope)).toBe("permission_denied");
    expect(text(envelope)).toMatch(/needs approval .*watchdog: project-config: write writes \.vscode\/tasks\.json, which VS Code/);
    expect(await ws.text(".vscode/tasks.json")).toBeUndefined();
  });

  it("an ordinary file is written in full and accept-edits mode without a question", async () => {
    expect(code(await run("write", write("src/b.ts"), "full"))).toBe("ran");
    expect(code(await run("edit", { path: "src/a.ts", old_string: "1", new_string: "2" }, "accept-edits"))).toBe("ran");
    expect(code(await run("write", write("docs/.github-notes.md"), "full"))).toBe("ran");
    expect(asked).toHaveLength(0);
  });
});
