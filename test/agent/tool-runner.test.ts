import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { runToolCall, type ToolCallObserver, type ToolRunContext } from "../../src/agent/turn/tool-runner.js";
import { builtinRegistry } from "../../src/host/builtins.js";
import type { ToolRegistry } from "../../src/host/registry.js";
import { allowAll, type Authorize } from "../../src/policy/call.js";
import type { ToolEvent } from "../../src/tool/context.js";
import { defineTool } from "../../src/tool/define.js";
import { memoryWorkspace, type Workspace } from "../helpers.js";

// One call's life through the prepared-call pipeline: looked up and validated once, the
// preview's plan carried to execute, every step reported in order.

let ws: Workspace;
let registry: ToolRegistry;
beforeEach(async () => {
  ws = await memoryWorkspace({ "a.txt": "one\ntwo\n" });
  registry = builtinRegistry();
});
afterEach(() => ws.cleanup());

function observer() {
  const log: string[] = [];
  const events: ToolEvent[] = [];
  const o: ToolCallObserver = {
    pending: (info) => void log.push(`pending ${info.title}`),
    describe: (info) => void log.push(`describe ${info.title}`),
    event: (_id, e) => {
      events.push(e);
      log.push(`event ${e.type}`);
    },
    running: () => void log.push("running"),
    done: (_id, envelope, _info, display) => void log.push(`done ${envelope.type} ${display ? "display" : "-"}`),
  };
  return { o, log, events };
}

const context = (authorize: Authorize = allowAll, signal = new AbortController().signal): ToolRunContext => ({
  registry,
  session: ws.session,
  authorize,
  signal,
});

describe("runToolCall", () => {
  it("validates a call once and reports pending → preview → approval → running → done", async () => {
    let parses = 0;
    registry.register(
      defineTool({
        id: "counted",
        kind: "edit",
        description: "counts how often its arguments are parsed",
        parameters: z.preprocess(
          (v) => {
            parses += 1;
            return v;
          },
          z.object({ n: z.number() }),
        ),
        requires: {},
        title: (args) => `Counted ${args.n}`,
        preview: async () => [{ type: "diff", path: "/ws/x", oldText: null, newText: "x" }],
        execute: async (args) => args.n * 2,
      }),
    );
    const { o, log } = observer();
    const asked: string[] = [];
    const envelope = await runToolCall(
      context(async (call) => {
        asked.push(`${call.title} ${call.preview.length}`);
        return { outcome: "allow" };
      }),
      { callId: "c1", toolId: "counted", args: { n: 21 } },
      o,
    );
    expect(envelope).toMatchObject({ type: "output", data: 42 });
    expect(parses).toBe(1);
    expect(asked).toEqual(["Counted 21 1"]);
    expect(log).toEqual(["pending Counted 21", "event diff", "running", "done output display"]);
  });

  it("reports an unknown tool and invalid arguments without running anything", async () => {
    const { o, log } = observer();
    const unknown = await runToolCall(context(), { callId: "c1", toolId: "nope", args: {} }, o);
    const invalid = await runToolCall(context(), { callId: "c2", toolId: "read", args: { path: 5 } }, o);
    expect(unknown.type === "error" && unknown.metadata.error_code).toBe("unknown_tool");
    expect(invalid.type === "error" && invalid.metadata.error_code).toBe("invalid_arguments");
    // Shown by their labels, never the bare id.
    expect(log).toEqual(["pending Nope", "done error -", "pending Read", "done error -"]);
  });

  it("carries the edit preview's plan to execute: one diff when the file did not change", async () => {
    const { o, events } = observer();
    const envelope = await runToolCall(
      context(),
      { callId: "c1", toolId: "edit", args: { path: "a.txt", old_string: "two", new_string: "2" } },
      o,
    );
    expect(envelope.type).toBe("output");
    expect(events.filter((e) => e.type === "diff")).toHaveLength(1);
    expect(await ws.text("a.txt")).toBe("one\n2\n");
  });

  it("plans again when the file changed between the approval and execute, and shows the new diff", async () => {
    const { o, events } = observer();
    const changeFirst: Authorize = async () => {
      await ws.session.fs.writeFileAtomic(path.join(ws.root, "a.txt"), new TextEncoder().encode("zero\none\ntwo\n"));
      return { outcome: "allow" };
    };
    const envelope = await runToolCall(
      context(changeFirst),
      { callId: "c1", toolId: "write", args: { path: "a.txt", content: "new\n" } },
      o,
    );
    expect(envelope.type).toBe("output");
    const diffs = events.filter((e): e is Extract<ToolEvent, { type: "diff" }> => e.type === "diff");
    expect(diffs.map((d) => d.oldText)).toEqual(["one\ntwo\n", "zero\none\ntwo\n"]);
    expect(await ws.text("a.txt")).toBe("new\n");
  });

  it("awaits beforeChange before a call that may change files runs, never for a read-only one or a refused one", async () => {
    const log: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => {};
    const waiting = new Promise<void>((resolve) => (entered = resolve));
    const ctx = (authorize: Authorize = allowAll): ToolRunContext => ({
      ...context(authorize),
      beforeChange: async () => {
        log.push("beforeChange");
        entered();
        await gate;
        log.push("snapshot taken");
      },
    });
    const { o } = observer();
    // A read-only call: no snapshot.
    expect((await runToolCall(ctx(), { callId: "r", toolId: "read", args: { path: "a.txt" } }, o)).type).toBe("output");
    expect(log).toEqual([]);
    // A refused write: nothing runs, so no snapshot.
    const deny: Authorize = async () => ({ outcome: "deny", reason: "no" });
    expect((await runToolCall(ctx(deny), { callId: "d", toolId: "write", args: { path: "a.txt", content: "x" } }, o)).type).toBe("error");
    expect(log).toEqual([]);
    // An allowed write waits for the snapshot: the file is unchanged until it is taken.
    const running = runToolCall(ctx(), { callId: "w", toolId: "write", args: { path: "a.txt", content: "written\n" } }, o);
    await waiting;
    expect(log).toEqual(["beforeChange"]);
    expect(await ws.text("a.txt")).toBe("one\ntwo\n");
    release();
    expect((await running).type).toBe("output");
    expect(log).toEqual(["beforeChange", "snapshot taken"]);
    expect(await ws.text("a.txt")).toBe("written\n");
  });
});
