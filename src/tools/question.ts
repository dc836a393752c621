import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import type { Question } from "../tool/services.js";

const Option = z.object({
  label: z.string().trim().min(1).max(200).describe("1-5 words; the answer is this label"),
  description: z.string().max(1000).optional(),
});

const QuestionItem = z
  .object({
    question: z.string().trim().min(1).max(2000),
    header: z.string().trim().min(1).max(60).optional().describe('A short label ("Database")'),
    options: z.array(Option).max(20).optional().describe("2-4 choices; omit for a free-text answer"),
    multi_select: z.boolean().optional(),
  })
  .superRefine((q, ctx) => {
    const labels = (q.options ?? []).map((o) => o.label);
    const dup = labels.find((l, i) => labels.indexOf(l) !== i);
    if (dup !== undefined)
      ctx.addIssue({ code: "custom", path: ["options"], message: `Option labels must differ: "${dup}" appears twice` });
  });

const parameters = z.object({
  questions: z.array(QuestionItem).min(1).max(8),
});

/** The refusal where nobody can answer (RFC: headless hosts treat the question tool as an error with a fixed message). */
export const NO_ONE_TO_ASK =
  "No user can answer questions here (headless run, or a client that cannot show them). Do not ask again: continue with your best guess and state the assumptions you made.";

const DECLINED =
  "The user skipped the question without answering. Do not ask it again: continue with your best judgement, or stop and say what you need.";

function truncateTitle(text: string, max = 80): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** question: asks the user one or more structured questions and waits for the answers. */
export default defineTool({
  id: "question",
  kind: "other",
  description: [
    "Ask the user questions and wait for the answers, when a decision is theirs and a wrong guess would waste work",
    "(unclear requirements, a choice between approaches, preferences). Not for what you can look up, nor to ask permission for a call.",
    "Offer 2-4 short options when answers are predictable (the user can always write their own); multi_select when several apply.",
    "Returns { answers }: one array of strings per question (chosen labels or the user's text; empty if unanswered).",
  ].join(" "),
  parameters,
  requires: {},
  output: { maxBytes: 50 * 1024 },
  title: (args) => {
    const [first] = args.questions;
    if (args.questions.length > 1) return `Ask ${args.questions.length} questions`;
    return `Ask: ${truncateTitle(first?.header ? `${first.header}: ${first.question}` : (first?.question ?? ""))}`;
  },
  async execute(args, ctx) {
    const questions: Question[] = args.questions.map((q) => ({
      question: q.question,
      ...(q.header !== undefined ? { header: q.header } : {}),
      ...(q.options?.length
        ? { options: q.options.map((o) => ({ label: o.label, ...(o.description ? { description: o.description } : {}) })) }
        : {}),
      ...(q.multi_select ? { multiSelect: true } : {}),
    }));
    const asker = ctx.host.questions;
    if (!asker) throw new ToolError("unavailable", NO_ONE_TO_ASK);
    const title = args.questions.length > 1 ? `Ask ${args.questions.length} questions` : truncateTitle(args.questions[0]!.question);
    const result = await asker.ask({ callId: ctx.callId, title, questions }, ctx.signal);
    switch (result.outcome) {
      case "answered":
        return { answers: questions.map((_, i) => result.answers[i] ?? []) };
      case "declined":
        return { answers: questions.map(() => []), skipped: true, note: DECLINED };
      case "cancelled":
        throw new ToolError("aborted", "The user cancelled the question, and with it the turn.");
      case "unsupported":
        throw new ToolError("unavailable", NO_ONE_TO_ASK);
    }
  },
  display: (data, args) => {
    if ("skipped" in data) return { text: "The user skipped the question." };
    const lines = args.questions.map((q, i) => {
      const answer = data.answers[i] ?? [];
      return `**${q.header ?? q.question}** ${answer.length ? answer.join(", ") : "(no answer)"}`;
    });
    return { text: lines.join("\n\n"), markdown: true };
  },
});
