import type { CreateElicitationResponse } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { formAnswers } from "../../src/acp/questions.js";
import { NO_ONE_TO_ASK } from "../../src/tools/question.js";
import { startFakeOpenAI, type FakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, selected, type HarnessOptions, useAcpTest, prompt } from "./harness.js";
import { WireChecker } from "./wire.js";

// The question tool over real stdio: the model (a local OpenAI-compatible server) asks, the
// test client answers through elicitation/create or session/request_permission, and the answer
// reaches the model's next request. Every line is checked against the ACP schema.

const t = useAcpTest({ "README.md": "# demo\n" });

const FORMS = { elicitation: { form: {} } };

async function start(script: FakeReply[], options: HarnessOptions = {}) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({ ...options, env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, ...options.env } });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  return { h: t.h, fake: t.fake, sessionId };
}

const THREE = {
  questions: [
    {
      question: "Which database should the service use?",
      header: "Database",
      options: [{ label: "Postgres" }, { label: "SQLite", description: "One file, no server" }],
    },
    {
      question: "Which features go in the first release?",
      header: "Features",
      options: [{ label: "auth" }, { label: "search" }, { label: "billing" }],
      multi_select: true,
    },
    { question: "What is the project called?" },
  ],
};

const ONE = {
  questions: [
    { question: "Which database?", header: "Database", options: [{ label: "Postgres" }, { label: "SQLite", description: "One file" }] },
  ],
};

const asks = (args: unknown): FakeReply => ({ toolCalls: [{ id: "call_q", name: "question", arguments: args }] });

/** What the model was told about its question, in the request after it. */
function toolResult(fake: FakeOpenAI, request = 1): string {
  const message = fake.requests[request]?.body.messages?.find((m) => m.role === "tool" && m.tool_call_id === "call_q");
  return String(message?.content ?? "");
}

/** The ACP id of the question's call (the first tool call of the session). */
function questionCallId(h: Harness, sessionId: string): string {
  return h.updatesOf(sessionId, "tool_call")[0]!.toolCallId;
}

describe("question through a client with form elicitation", () => {
  it("sends one form (select, multi-select with Other, text) and the answers reach the model's next request", async () => {
    const answer: CreateElicitationResponse = {
      action: "accept",
      content: { question_1: "SQLite", question_2: ["auth", "billing"], question_2_other: "export", question_3: "  acme  " },
    };
    const { h, fake, sessionId } = await start([asks(THREE), { text: "SQLite it is." }], {
      capabilities: FORMS,
      elicitation: () => answer,
    });
    expect((await prompt(h, sessionId, "Set up the service")).stopReason).toBe("end_turn");

    expect(h.elicitationRequests).toHaveLength(1);
    const request = h.elicitationRequests[0]!;
    expect(request).toMatchObject({ sessionId, toolCallId: questionCallId(h, sessionId), mode: "form" });
    expect(request.message).toBe("The agent has 3 questions for you.");
    const schema = (request as { requestedSchema: { type: string; properties: Record<string, unknown> } }).requestedSchema;
    expect(schema.type).toBe("object");
    expect(schema.properties).toEqual({
      question_1: {
        type: "string",
        title: "Database",
        description: "Which database should the service use?",
        oneOf: [
          { const: "Postgres", title: "Postgres" },
          { const: "SQLite", title: "SQLite", description: "One file, no server" },
        ],
      },
      question_1_other: { type: "string", title: "Other", description: "Your own answer, instead of the choices" },
      question_2: {
        type: "array",
        title: "Features",
        description: "Which features go in the first release? (pick any)",
        items: {
          anyOf: [
            { const: "auth", title: "auth" },
            { const: "search", title: "search" },
            { const: "billing", title: "billing" },
          ],
        },
      },
      question_2_other: { type: "string", title: "Other", description: "Your own answer, besides the choices" },
      question_3: { type: "string", title: "Question 3", description: "What is the project called?" },
    });

    expect(h.checker.seenMethods).toContain("elicitation/create");
    // No approval first: asking is the question tool's whole job, in ask mode too.
    expect(h.permissionRequests).toEqual([]);
    expect(h.updatesOf(sessionId, "tool_call")[0]).toMatchObject({ kind: "other" });
    expect(lastUpdate(h, sessionId, questionCallId(h, sessionId)).status).toBe("completed");

    // One line per question, in order (answers: string[][] as the host writes a result for a model).
    expect(toolResult(fake)).toBe('answers:\n["SQLite"]\n["auth","billing","export"]\n["acme"]');
  });

  it("decline: the model is told the user skipped the question, and the turn goes on", async () => {
    const { h, fake, sessionId } = await start([asks(ONE), { text: "I will pick Postgres." }], {
      capabilities: FORMS,
      elicitation: () => ({ action: "decline" }),
    });
    expect((await prompt(h, sessionId, "Set up the service")).stopReason).toBe("end_turn");
    expect(h.elicitationRequests[0]!.message).toBe("Which database?");
    expect(toolResult(fake)).toContain("The user skipped the question");
    expect(lastUpdate(h, sessionId, questionCallId(h, sessionId)).status).toBe("completed");
  });

  it("cancel: the turn ends cancelled, and the model is not asked again", async () => {
    const { h, fake, sessionId } = await start([asks(ONE), { text: "never sent" }], {
      capabilities: FORMS,
      elicitation: () => ({ action: "cancel" }),
    });
    expect((await prompt(h, sessionId, "Set up the service")).stopReason).toBe("cancelled");
    expect(fake.requests).toHaveLength(1);
    expect(lastUpdate(h, sessionId, questionCallId(h, sessionId)).status).toBe("failed");
  });

  it("the turn waits while the form is open, and session/cancel ends it", async () => {
    let release: (r: CreateElicitationResponse) => void = () => {};
    const { h, fake, sessionId } = await start([asks(ONE), { text: "never sent" }], {
      capabilities: FORMS,
      elicitation: () => new Promise<CreateElicitationResponse>((resolve) => (release = resolve)),
    });
    let settled = false;
    const turn = prompt(h, sessionId, "Set up the service").finally(() => (settled = true));
    await h.waitFor(() => h.elicitationRequests.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    await h.agent.notify("session/cancel", { sessionId });
    expect((await turn).stopReason).toBe("cancelled");
    expect(fake.requests).toHaveLength(1);
    // The agent withdrew its request ($/cancel_request); a late answer changes nothing.
    expect(h.checker.messages.some((m) => m.direction === "agent->client" && m.json.method === "$/cancel_request")).toBe(true);
    release({ action: "accept", content: { question_1: "Postgres" } });
  });
});

describe("question through a client without elicitation", () => {
  it("one single-choice question of at most four options goes through session/request_permission", async () => {
    const { h, fake, sessionId } = await start([asks(ONE), { text: "SQLite it is." }], { permission: () => selected("answer_2") });
    expect((await prompt(h, sessionId, "Set up the service")).stopReason).toBe("end_turn");
    expect(h.elicitationRequests).toEqual([]);
    expect(h.permissionRequests).toHaveLength(1);
    const request = h.permissionRequests[0]!;
    expect(request.toolCall).toMatchObject({ toolCallId: questionCallId(h, sessionId), title: "Which database?", kind: "other" });
    expect(JSON.stringify(request.toolCall.content)).toContain("**SQLite**: One file");
    expect(request.options.map((o) => [o.optionId, o.name, o.kind])).toEqual([
      ["answer_1", "Postgres", "allow_once"],
      ["answer_2", "SQLite", "allow_once"],
      ["skip", "Skip the question", "reject_once"],
    ]);
    expect(toolResult(fake)).toBe('answers:\n["SQLite"]');
  });

  it("skip is a declined question", async () => {
    const { h, fake, sessionId } = await start([asks(ONE), { text: "Postgres then." }], { permission: () => selected("skip") });
    expect((await prompt(h, sessionId, "Set up the service")).stopReason).toBe("end_turn");
    expect(toolResult(fake)).toContain("The user skipped the question");
  });

  it("anything else (several questions, multi-select, free text) gets the headless refusal, without asking", async () => {
    const { h, fake, sessionId } = await start([asks(THREE), { text: "Guessing." }]);
    expect((await prompt(h, sessionId, "Set up the service")).stopReason).toBe("end_turn");
    expect(h.permissionRequests).toEqual([]);
    expect(h.elicitationRequests).toEqual([]);
    expect(toolResult(fake)).toContain(NO_ONE_TO_ASK);
    expect(lastUpdate(h, sessionId, questionCallId(h, sessionId)).status).toBe("failed");
  });
});

describe("the elicitation form's answers", () => {
  const questions = [
    { question: "Which?", options: [{ label: "A" }, { label: "B" }] },
    { question: "Which ones?", options: [{ label: "x" }, { label: "y" }], multiSelect: true },
    { question: "Name?" },
  ];

  it("keeps only offered labels, once each, then the Other text", () => {
    expect(
      formAnswers(questions, {
        question_1: "C",
        question_1_other: " mine ",
        question_2: ["y", "y", "z", "x"],
        question_3: "",
      }),
    ).toEqual([["mine"], ["y", "x"], []]);
    expect(formAnswers(questions, undefined)).toEqual([[], [], []]);
  });
});

describe("the wire check of elicitation/create", () => {
  it("is checked against the schema's CreateElicitationRequest: a form without its message is a problem", () => {
    const checker = new WireChecker();
    const params = { sessionId: "s", mode: "form", requestedSchema: { type: "object", properties: { q: { type: "string" } } } };
    checker.record("agent->client", JSON.stringify({ jsonrpc: "2.0", id: 9, method: "elicitation/create", params }));
    expect(checker.problems).toEqual([expect.stringContaining("does not match CreateElicitationRequest")]);
    checker.record(
      "agent->client",
      JSON.stringify({ jsonrpc: "2.0", id: 10, method: "elicitation/create", params: { ...params, message: "m" } }),
    );
    expect(checker.problems).toHaveLength(1);
  });
});
