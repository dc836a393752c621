import * as z from "zod";
import type { PlanEntry } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";

const TodoItem = z.object({
  content: z.string().min(1).describe('What is to be done, in the imperative ("Run the tests")'),
  activeForm: z.string().min(1).optional().describe('The same step in the progressive ("Running the tests")'),
  status: z.enum(["pending", "in_progress", "completed"]),
  priority: z.enum(["high", "medium", "low"]).optional().describe("Default medium"),
});

const parameters = z.object({
  todos: z.array(TodoItem).describe("The complete list: it replaces the previous one"),
});

export const TODO_STORE_KEY = "todo.entries";

/** todo: the session's plan, replaced whole on every call; the editor shows it as an ACP plan. */
export default defineTool({
  id: "todo",
  kind: "think",
  description: [
    "Write the session's todo list, to plan and track multi-step work. Pass the COMPLETE list every",
    "time: it replaces the previous one. Keep exactly one item in_progress while working, mark items",
    "completed as soon as they are done, and add items you discover. Skip it for one-step tasks.",
  ].join(" "),
  parameters,
  requires: {},
  output: { maxBytes: 50 * 1024 },
  title: (args) => `Update plan (${args.todos.length} item${args.todos.length === 1 ? "" : "s"})`,
  async execute(args, ctx) {
    const active = args.todos.filter((t) => t.status === "in_progress");
    if (active.length > 1) {
      throw new ToolError(
        "invalid_arguments",
        `At most one todo may be in_progress; ${active.length} are: ${active.map((t) => JSON.stringify(t.content)).join(", ")}`,
      );
    }
    const entries: PlanEntry[] = args.todos.map((t) => ({
      content: t.content,
      ...(t.activeForm ? { activeForm: t.activeForm } : {}),
      status: t.status,
      priority: t.priority ?? "medium",
    }));
    ctx.session.store.set(TODO_STORE_KEY, entries);
    ctx.emit({ type: "plan", entries });
    const count = (s: PlanEntry["status"]) => entries.filter((e) => e.status === s).length;
    return {
      todos: entries,
      summary: `${entries.length} todos: ${count("completed")} completed, ${count("in_progress")} in progress, ${count("pending")} pending`,
    };
  },
  display: (data) => ({ text: data.summary }),
});
