import { describe, expect, it } from "vitest";
import todo, { TODO_STORE_KEY } from "../../src/tools/todo.js";
import { call, errorOf, memoryWorkspace, output, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

describe("todo", () => {
  it("replaces the whole list and emits a plan with every entry", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    await call(todo, { todos: [{ content: "Old", status: "pending" }] }, ws.session);
    const { envelope, events } = await call(
      todo,
      {
        todos: [
          { content: "Read the code", status: "completed", priority: "high" },
          { content: "Fix the bug", activeForm: "Fixing the bug", status: "in_progress" },
          { content: "Run the tests", status: "pending", priority: "low" },
        ],
      },
      ws.session,
    );
    const data = output<{ summary: string }>(envelope);
    expect(data.summary).toBe("3 todos: 1 completed, 1 in progress, 1 pending");
    expect(events).toEqual([
      {
        type: "plan",
        entries: [
          { content: "Read the code", status: "completed", priority: "high" },
          { content: "Fix the bug", activeForm: "Fixing the bug", status: "in_progress", priority: "medium" },
          { content: "Run the tests", status: "pending", priority: "low" },
        ],
      },
    ]);
    expect((ws.session.store.get(TODO_STORE_KEY) as unknown[]).length).toBe(3);
  });

  it("allows at most one item in progress", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const { envelope, events } = await call(
      todo,
      {
        todos: [
          { content: "A", status: "in_progress" },
          { content: "B", status: "in_progress" },
        ],
      },
      ws.session,
    );
    expect(errorOf(envelope, "invalid_arguments")).toMatch(/At most one/);
    expect(events).toEqual([]);
  });

  it("rejects unknown statuses as an error envelope", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const { envelope } = await call(todo, { todos: [{ content: "A", status: "done" }] }, ws.session);
    expect(errorOf(envelope, "invalid_arguments")).toMatch(/status/);
  });

  it("accepts an empty list (clears the plan)", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const { events } = await call(todo, { todos: [] }, ws.session);
    expect(events).toEqual([{ type: "plan", entries: [] }]);
  });
});
