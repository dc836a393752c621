import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";

const parameters = z.object({
  description: z.string().min(1).describe("A short (3-7 words) label for the task, shown to the user"),
  prompt: z
    .string()
    .min(1)
    .describe("The whole task for the subagent: it sees nothing of this conversation, so say what to do, where, and what to report back"),
  agent: z.string().min(1).optional().describe("Which agent runs it (default general-purpose)"),
  task_id: z.string().min(1).optional().describe("An earlier task's task_id: continues that subagent's conversation"),
});

const DESCRIPTION = [
  "Delegate a self-contained task to a subagent: a fresh agent with its own conversation that works",
  "with the same files and permissions and returns one final answer (plus a task_id to continue it).",
  "Use it for broad searches, research or independent pieces of work that would fill your context;",
  "start several in one step to run them in parallel. Give a complete prompt: the subagent does not",
  "see this conversation. Do not use it for a single file read or search you can do yourself.",
].join(" ");

/** task: runs a subagent (a child session) and returns its final answer and its task id. */
export default defineTool({
  id: "task",
  kind: "think",
  // A subagent may edit files and run commands.
  sideEffect: true,
  idempotent: false,
  description: DESCRIPTION,
  parameters,
  requires: {},
  output: { maxBytes: 50 * 1024 },
  title: (args) => args.description,
  describe: ({ host }) => {
    const agents = host.subagents?.agents() ?? [];
    if (!agents.length) return DESCRIPTION;
    return `${DESCRIPTION}\n\nAgents:\n${agents.map((a) => `- ${a.name}: ${a.description}`).join("\n")}`;
  },
  async execute(args, ctx) {
    const subagents = ctx.host.subagents;
    if (!subagents) throw new ToolError("unavailable", "Subagents are not available here (too deeply nested, or this host runs none).");
    const result = await subagents.run(
      {
        prompt: args.prompt,
        description: args.description,
        ...(args.task_id ? { taskId: args.task_id } : { agent: args.agent ?? "general-purpose" }),
        parentCallId: ctx.callId,
        progress: (lines) => ctx.emit({ type: "progress", lines }),
      },
      ctx.signal,
    );
    if (result.stopReason === "cancelled") throw new ToolError("aborted", "The task was cancelled.");
    if (result.error) throw new ToolError("execution_failed", `The subagent failed: ${result.error} (task_id: ${result.taskId})`);
    const note = result.stopReason === "end_turn" ? "" : ` (it stopped early: ${result.stopReason})`;
    // The id first: a cap keeps the head, so the way to continue the task is never cut.
    return `task_id: ${result.taskId}${note}\n\n${result.text || "(The subagent gave no answer.)"}`;
  },
  display: (data) => ({ text: data.replace(/^task_id: .*\n\n/, ""), markdown: true }),
});
