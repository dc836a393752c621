import * as fsp from "node:fs/promises";
import path from "node:path";
import type { AgentContext } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { EditorFs } from "../../src/acp/editor-fs.js";
import { NodeFs } from "../../src/runtime/fs/node.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { isInside } from "../../src/tool/paths.js";
import edit, { type EditResult } from "../../src/tools/edit.js";
import read from "../../src/tools/read.js";
import write, { type WriteResult } from "../../src/tools/write.js";
import { call, output, tempDir, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

/**
 * An editor client for EditorFs: unsaved buffers over the real disk, every fs request counted,
 * and a `save` hook for what the editor does to a text it is asked to write.
 */
class FakeEditor {
  readonly buffers = new Map<string, string>();
  readonly requests: { method: string; path: string }[] = [];
  save = (text: string) => text;
  /** Reads of a file fail once it was written (an editor that closed the buffer, a dropped request). */
  failReadsAfterWrite = false;
  /** Gives a buffer without its final newline, as agentic.nvim does. */
  dropFinalNewline = false;
  private readonly written = new Set<string>();
  readonly client = {
    request: async (method: string, params: { path: string; content?: string }) => {
      this.requests.push({ method, path: params.path });
      if (method === "fs/read_text_file" && this.failReadsAfterWrite && this.written.has(params.path)) throw new Error("buffer closed");
      if (method === "fs/read_text_file") {
        const content = this.buffers.get(params.path) ?? (await fsp.readFile(params.path, "utf8"));
        return { content: this.dropFinalNewline ? content.replace(/\r?\n$/, "") : content };
      }
      if (method === "fs/write_text_file") {
        const saved = this.save(params.content ?? "");
        this.written.add(params.path);
        this.buffers.delete(params.path);
        await fsp.writeFile(params.path, saved);
        return {};
      }
      throw new Error(`unexpected ${method}`);
    },
  } as unknown as AgentContext;
  count(method: string): number {
    return this.requests.filter((r) => r.method === method).length;
  }
}

async function editorWorkspace(files: Record<string, string>, maxTextBytes?: number) {
  const root = await tempDir(files);
  const editor = new FakeEditor();
  const local = new NodeFs();
  const fs = new EditorFs({ client: editor.client, sessionId: "s", local, canRead: true, canWrite: true, maxTextBytes });
  const session = new RuntimeSession({ workspace: root, fs: local, route: (abs, fallback) => (isInside(abs, root) ? fs : fallback) });
  await workspaces.use({
    backend: "node",
    root,
    session,
    text: (rel) => fsp.readFile(path.join(root, rel), "utf8").catch(() => undefined),
    bytes: (rel) => fsp.readFile(path.join(root, rel)).catch(() => undefined),
    cleanup: async () => {
      await session.close();
      await fsp.rm(root, { recursive: true, force: true });
    },
  });
  return { root, editor, session };
}

describe("file tools through the editor's fs", () => {
  it("reads a file through fs/read_text_file once per read call", async () => {
    const { editor, session } = await editorWorkspace({ "a.ts": "one\ntwo\n" });
    editor.buffers.set(path.join(session.workspace, "a.ts"), "unsaved\n");
    const data = output<{ content: string }>((await call(read, { path: "a.ts" }, session)).envelope);
    expect(data.content).toBe("1\tunsaved");
    expect(editor.count("fs/read_text_file")).toBe(1);
    // A second call reads again: nothing is cached across calls.
    await call(read, { path: "a.ts", offset: 1, limit: 1 }, session);
    expect(editor.count("fs/read_text_file")).toBe(2);
  });

  it("reads once for the preview, once after approval, once to check what landed, and writes once", async () => {
    const { editor, session, root } = await editorWorkspace({ "a.ts": "const a = 1;\n" });
    const data = output<EditResult>((await call(edit, { path: "a.ts", old_string: "1", new_string: "2" }, session)).envelope);
    expect(data.notice).toBeUndefined();
    expect(await fsp.readFile(path.join(root, "a.ts"), "utf8")).toBe("const a = 2;\n");
    expect(editor.count("fs/write_text_file")).toBe(1);
    expect(editor.count("fs/read_text_file")).toBe(3);
  });

  it("keeps the file's final newline when the editor's text lacks only that (agentic.nvim)", async () => {
    const { editor, session, root } = await editorWorkspace({ "a.ts": "one\ntwo\n", "b.ts": "one\r\ntwo\r\n", "c.ts": "one\ntwo\n" });
    editor.dropFinalNewline = true;
    await call(edit, { path: "a.ts", old_string: "one", new_string: "uno" }, session);
    expect(await fsp.readFile(path.join(root, "a.ts"), "utf8")).toBe("uno\ntwo\n");
    await call(edit, { path: "b.ts", old_string: "two", new_string: "dos" }, session);
    expect(await fsp.readFile(path.join(root, "b.ts"), "utf8")).toBe("one\r\ndos\r\n");
    // An unsaved buffer that differs in more than its ending is the editor's, as it is.
    editor.dropFinalNewline = false;
    editor.buffers.set(path.join(root, "c.ts"), "one\nthree");
    await call(edit, { path: "c.ts", old_string: "one", new_string: "uno" }, session);
    expect(await fsp.readFile(path.join(root, "c.ts"), "utf8")).toBe("uno\nthree");
  });

  it("sees a buffer changed while the approval was pending", async () => {
    const { editor, session, root } = await editorWorkspace({ "a.ts": "const a = 1;\nconst b = 1;\n" });
    const abs = path.join(root, "a.ts");
    const data = output<EditResult>(
      (
        await call(edit, { path: "a.ts", old_string: "const a = 1;", new_string: "const a = 2;" }, session, {
          authorize: async () => {
            editor.buffers.set(abs, "// the user typed this\nconst a = 1;\nconst b = 1;\n");
            return { outcome: "allow" };
          },
        })
      ).envelope,
    );
    expect(data.first_changed_line).toBe(2);
    expect(await fsp.readFile(abs, "utf8")).toBe("// the user typed this\nconst a = 2;\nconst b = 1;\n");
  });

  it("reports what landed when the editor changes the text it was given (write)", async () => {
    const { editor, session, root } = await editorWorkspace({ "a.txt": "old\n" });
    editor.save = (text) => (text.endsWith("\n") ? text : `${text}\n`);
    const { envelope, events } = await call(write, { path: "a.txt", content: "one\ntwo" }, session);
    const data = output<WriteResult>(envelope);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("one\ntwo\n");
    expect(data).toMatchObject({ bytes: 8, lines: 2 });
    expect(data.notice).toMatch(/editor changed/);
    expect(events.at(-1)).toEqual({ type: "diff", path: path.join(root, "a.txt"), oldText: "old\n", newText: "one\ntwo\n" });
    // The stamp is of what landed: an edit right after is not refused as stale.
    output((await call(edit, { path: "a.txt", old_string: "two", new_string: "three" }, session)).envelope);
  });

  it("reports what landed when the editor changes the text it was given (edit)", async () => {
    const { editor, session, root } = await editorWorkspace({ "a.txt": "alpha\nbeta" });
    editor.save = (text) => (text.endsWith("\n") ? text : `${text}\n`);
    const { envelope, events } = await call(edit, { path: "a.txt", old_string: "alpha", new_string: "gamma" }, session);
    const data = output<EditResult>(envelope);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("gamma\nbeta\n");
    expect(data.notice).toMatch(/editor changed/);
    expect(data.diff).toContain("+beta\n");
    expect(data.diff).toContain("\\ No newline at end of file");
    expect(events.at(-1)).toEqual({ type: "diff", path: path.join(root, "a.txt"), oldText: "alpha\nbeta", newText: "gamma\nbeta\n" });
  });

  it("never reports a failure once the file has changed", async () => {
    const { editor, session, root } = await editorWorkspace({ "a.txt": "one\n", "b.txt": "two\n" });
    editor.failReadsAfterWrite = true;
    const wrote = output<WriteResult>((await call(write, { path: "a.txt", content: "uno\n" }, session)).envelope);
    expect(wrote.additions).toBe(1);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("uno\n");
    output((await call(edit, { path: "b.txt", old_string: "two", new_string: "dos" }, session)).envelope);
    expect(await fsp.readFile(path.join(root, "b.txt"), "utf8")).toBe("dos\n");
  });

  it("writes a file over the editor's size limit to disk, as it reads one", async () => {
    const { editor, session, root } = await editorWorkspace({ "small.txt": "s\n" }, 1024);
    const big = "x".repeat(2000);
    output<WriteResult>((await call(write, { path: "big.txt", content: big }, session)).envelope);
    output<WriteResult>((await call(write, { path: "small.txt", content: "t\n" }, session)).envelope);
    expect(await fsp.readFile(path.join(root, "big.txt"), "utf8")).toBe(big);
    expect(editor.requests.filter((r) => r.method === "fs/write_text_file").map((r) => path.basename(r.path))).toEqual(["small.txt"]);
  });
});
