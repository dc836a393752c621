import type {
  AgentContext,
  ClientCapabilities,
  CreateElicitationResponse,
  ElicitationPropertySchema,
  EnumOption,
  PermissionOption,
} from "@agentclientprotocol/sdk";
import type { Question, QuestionsOutcome, QuestionsRequest, UserQuestions } from "../tool/services.js";
import { textContent } from "./content.js";
import { askClient } from "./permission.js";

/** Without elicitation, a question goes through session/request_permission only when it is one choice among this many. */
const MAX_PERMISSION_CHOICES = 4;

/** The form's field of question `i` (0-based), and of its free-text "Other" answer. */
const field = (i: number) => `question_${i + 1}`;
const otherField = (i: number) => `question_${i + 1}_other`;

function enumOptions(q: Question): EnumOption[] {
  return (q.options ?? []).map((o) => ({ const: o.label, title: o.label, ...(o.description ? { description: o.description } : {}) }));
}

/**
 * One elicitation form for all the questions: per question a single- or multi-select of its
 * options plus an "Other" free-text field, or one text field when it has no options. Nothing is
 * required: a field left empty is a question left unanswered.
 */
export function questionForm(questions: readonly Question[]): { message: string; properties: Record<string, ElicitationPropertySchema> } {
  const properties: Record<string, ElicitationPropertySchema> = {};
  questions.forEach((q, i) => {
    const title = q.header ?? (questions.length > 1 ? `Question ${i + 1}` : "Answer");
    if (!q.options?.length) {
      properties[field(i)] = { type: "string", title, description: q.question };
      return;
    }
    properties[field(i)] = q.multiSelect
      ? { type: "array", title, description: `${q.question} (pick any)`, items: { anyOf: enumOptions(q) } }
      : { type: "string", title, description: q.question, oneOf: enumOptions(q) };
    properties[otherField(i)] = {
      type: "string",
      title: "Other",
      description: q.multiSelect ? "Your own answer, besides the choices" : "Your own answer, instead of the choices",
    };
  });
  const message = questions.length === 1 ? questions[0]!.question : `The agent has ${questions.length} questions for you.`;
  return { message, properties };
}

/** The accepted form's answers, one array per question: only offered labels count, then the "Other" text. */
export function formAnswers(questions: readonly Question[], content: Record<string, unknown> | null | undefined): string[][] {
  const values = content ?? {};
  return questions.map((q, i) => {
    const labels = new Set((q.options ?? []).map((o) => o.label));
    const picked = values[field(i)];
    const answers: string[] = [];
    if (!labels.size) {
      if (typeof picked === "string" && picked.trim()) answers.push(picked.trim());
      return answers;
    }
    const chosen = Array.isArray(picked) ? picked : [picked];
    for (const value of chosen) if (typeof value === "string" && labels.has(value) && !answers.includes(value)) answers.push(value);
    const other = values[otherField(i)];
    if (typeof other === "string" && other.trim()) answers.push(other.trim());
    return answers;
  });
}

/** A question session/request_permission can ask: one question, one choice among a few options. */
function fitsPermission(questions: readonly Question[]): boolean {
  const [q] = questions;
  const count = q?.options?.length ?? 0;
  return questions.length === 1 && !q!.multiSelect && count >= 1 && count <= MAX_PERMISSION_CHOICES;
}

/**
 * The questions of a session, asked through the editor: one `elicitation/create` form when the
 * client advertises form elicitation, else `session/request_permission` for one single-choice
 * question of a few options; anything else is `unsupported` (the tool's headless refusal).
 * A form the user cancels cancels the turn (`cancelTurn`).
 */
export function acpQuestions(
  client: AgentContext,
  sessionId: string,
  capabilities: ClientCapabilities,
  cancelTurn: () => void,
): UserQuestions {
  const forms = capabilities.elicitation?.form != null;
  return {
    async ask(request, signal) {
      if (signal.aborted) return { outcome: "cancelled" };
      if (forms) return askForm(client, sessionId, request, signal, cancelTurn);
      if (fitsPermission(request.questions)) return askPermission(client, sessionId, request, signal);
      return { outcome: "unsupported" };
    },
  };
}

async function askForm(
  client: AgentContext,
  sessionId: string,
  request: QuestionsRequest,
  signal: AbortSignal,
  cancelTurn: () => void,
): Promise<QuestionsOutcome> {
  const { message, properties } = questionForm(request.questions);
  let response: CreateElicitationResponse;
  try {
    // The turn waits for the user as long as the form is open; session/cancel withdraws it.
    response = await client.request(
      "elicitation/create",
      { sessionId, toolCallId: request.callId, mode: "form", message, requestedSchema: { type: "object", properties } },
      { cancellationSignal: signal, stopWaitingOnCancel: true },
    );
  } catch {
    return signal.aborted ? { outcome: "cancelled" } : { outcome: "unsupported" };
  }
  if (signal.aborted) return { outcome: "cancelled" };
  switch (response.action) {
    case "accept":
      return { outcome: "answered", answers: formAnswers(request.questions, response.content as Record<string, unknown> | undefined) };
    case "cancel":
      cancelTurn();
      return { outcome: "cancelled" };
    default:
      // "decline", or an action this agent does not know: the user did not answer.
      return { outcome: "declined" };
  }
}

async function askPermission(
  client: AgentContext,
  sessionId: string,
  request: QuestionsRequest,
  signal: AbortSignal,
): Promise<QuestionsOutcome> {
  const q = request.questions[0]!;
  const options = q.options ?? [];
  const choices: PermissionOption[] = [
    ...options.map((o, i): PermissionOption => ({ optionId: `answer_${i + 1}`, name: o.label, kind: "allow_once" })),
    { optionId: "skip", name: "Skip the question", kind: "reject_once" },
  ];
  const described = options.filter((o) => o.description).map((o) => `- **${o.label}**: ${o.description}`);
  const text = [q.header ? `**${q.header}**` : null, q.question, described.length ? described.join("\n") : null]
    .filter(Boolean)
    .join("\n\n");
  const choice = await askClient(
    client,
    sessionId,
    { toolCallId: request.callId, title: q.question, kind: "other", status: "pending", content: [textContent(text)] },
    choices,
    signal,
  );
  if (signal.aborted) return { outcome: "cancelled" };
  const index = choice?.startsWith("answer_") ? Number(choice.slice("answer_".length)) - 1 : -1;
  const picked = options[index];
  return picked ? { outcome: "answered", answers: [[picked.label]] } : { outcome: "declined" };
}
