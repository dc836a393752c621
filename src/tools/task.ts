import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";

const parameters = z.object({
  description: z.string().min(1).optional().describe("A short (3-7 words) label for the task, shown to the user"),
  prompt: z
    .string()
    .min(1)
    .optional()
    .describe("The whole task for the subagent: it sees nothing of this conversation, so say what to do, where, and what to report back"),
  agent: z.string().min(1).optional().describe("Which agent runs it (default general-purpose)"),
  task_id: z.string().min(1).optional().describe("An earlier task's task_id: continues that subagent's conversation"),
  background: z.boolean().optional().describe("Return the task_id at once; the answer comes later"),
  action: z.enum(["status", "cancel"]).optional().describe("With task_id: check on or end a background task"),
});

const DESCRIPTION = [
  "Delegate a self-contained task to a subagent: a fresh agent with its own conversation that works",
  "with the same files and permissions and returns one final answer (plus a task_id to continue it).",
  "Use it for broad searches, research or independent pieces of work that would fill your context;",
  "start several in one step to run them in parallel. Give a complete prompt: the subagent does not",
  "see this conversation. Do not use it for a single file read or search you can do yourself.",
  "With background: true it runs while you go on.",
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
  title: (args) => args.description ?? `${args.action === "cancel" ? "Cancel" : "Check"} task ${args.task_id ?? ""}`.trim(),
  describe: ({ host }) => {
    const agents = host.subagents?.agents() ?? [];
    if (!agents.length) return DESCRIPTION;
    return `${DESCRIPTION}\n\nAgents:\n${agents.map((a) => `- ${a.name}: ${a.description}`).join("\n")}`;
  },
  async execute(args, ctx) {
    const subagents = ctx.host.subagents;
    if (!subagents) throw new ToolError("unavailable", "Subagents are not available here (too deeply nested, or this host runs none).");
    if (args.action) {
      if (!args.task_id) throw new ToolError("invalid_arguments", `The action "${args.action}" needs the task_id of the task.`);
      return args.action === "status" ? subagents.status(args.task_id) : subagents.cancel(args.task_id);
    }
    if (!args.description || !args.prompt)
      throw new ToolError("invalid_arguments", "A task needs a description and a prompt (or task_id with an action).");
    const request = {
      prompt: args.prompt,
      description: args.description,
      ...(args.task_id ? { taskId: args.task_id } : { agent: args.agent ?? "general-purpose" }),
      parentCallId: ctx.callId,
    };
    if (args.background) {
      const { taskId } = subagents.start(request);
      return `task_id: ${taskId}\n\nThe task runs in the background. Its answer comes to you as a message when it ends; go on with other work meanwhile (task_id with action "status" or "cancel" checks on it or ends it).`;
    }
    const progress = (lines: string[]) => ctx.emit({ type: "progress", lines });
    const result = await subagents.run({ ...request, progress }, ctx.signal);
    if (result.stopReason === "cancelled") throw new ToolError("aborted", "The task was cancelled.");
    if (result.error) throw new ToolError("execution_failed", `The subagent failed: ${result.error} (task_id: ${result.taskId})`);
    const note = result.stopReason === "end_turn" ? "" : ` (it stopped early: ${result.stopReason})`;
    // The id first: a cap keeps the head, so the way to continue the task is never cut.
    return `task_id: ${result.taskId}${note}\n\n${result.text || "(The subagent gave no answer.)"}`;
  },
  display: (data) => ({ text: data.replace(/^task_id: .*\n\n/, ""), markdown: true }),
});
