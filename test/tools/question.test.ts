import { describe, expect, it } from "vitest";
import type { QuestionsOutcome, QuestionsRequest, UserQuestions } from "../../src/tool/services.js";
import question, { NO_ONE_TO_ASK } from "../../src/tools/question.js";
import { call, errorOf, memoryWorkspace, output, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

/** A user who answers every request with `outcome`, and remembers what was asked. */
function user(outcome: QuestionsOutcome): UserQuestions & { asked: QuestionsRequest[] } {
  const asked: QuestionsRequest[] = [];
  return {
    asked,
    ask: async (request) => {
      asked.push(request);
      return outcome;
    },
  };
}

const ARGS = {
  questions: [
    { question: "Which database?", header: "Database", options: [{ label: "Postgres" }, { label: "SQLite", description: "One file" }] },
    { question: "Which features?", options: [{ label: "auth" }, { label: "search" }], multi_select: true },
    { question: "What is it called?" },
  ],
};

describe("question", () => {
  it("hands the questions to the host's asker and returns one answer array per question", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const asker = user({ outcome: "answered", answers: [["SQLite"], ["auth", "search"], ["acme"]] });
    const { envelope } = await call(question, ARGS, ws.session, { host: { questions: asker } });
    expect(output(envelope)).toEqual({ answers: [["SQLite"], ["auth", "search"], ["acme"]] });
    expect(asker.asked).toEqual([
      {
        callId: expect.any(String),
        title: "Ask 3 questions",
        questions: [
          {
            question: "Which database?",
            header: "Database",
            options: [{ label: "Postgres" }, { label: "SQLite", description: "One file" }],
          },
          { question: "Which features?", options: [{ label: "auth" }, { label: "search" }], multiSelect: true },
          { question: "What is it called?" },
        ],
      },
    ]);
  });

  it("an answer missing for a question is an empty array", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const { envelope } = await call(question, ARGS, ws.session, {
      host: { questions: user({ outcome: "answered", answers: [["Postgres"]] }) },
    });
    expect(output(envelope)).toEqual({ answers: [["Postgres"], [], []] });
  });

  it("a declined question is a normal result telling the model the user skipped it", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const { envelope } = await call(question, ARGS, ws.session, { host: { questions: user({ outcome: "declined" }) } });
    expect(output(envelope)).toMatchObject({ answers: [[], [], []], skipped: true, note: expect.stringContaining("skipped") });
  });

  it("a cancelled question fails the call as aborted", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const { envelope } = await call(question, ARGS, ws.session, { host: { questions: user({ outcome: "cancelled" }) } });
    expect(errorOf(envelope, "aborted")).toMatch(/cancelled/);
  });

  it("headless (no asker) and a front end that cannot show the questions give the one fixed refusal", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    expect(errorOf((await call(question, ARGS, ws.session, { host: {} })).envelope, "unavailable")).toBe(NO_ONE_TO_ASK);
    const unsupported = { host: { questions: user({ outcome: "unsupported" }) } };
    expect(errorOf((await call(question, ARGS, ws.session, unsupported)).envelope, "unavailable")).toBe(NO_ONE_TO_ASK);
  });

  it("refuses an empty list and duplicate option labels", async () => {
    const ws = await workspaces.use(memoryWorkspace());
    const host = { host: { questions: user({ outcome: "declined" }) } };
    errorOf((await call(question, { questions: [] }, ws.session, host)).envelope, "invalid_arguments");
    const dup = { questions: [{ question: "Which?", options: [{ label: "A" }, { label: "A" }] }] };
    expect(errorOf((await call(question, dup, ws.session, host)).envelope, "invalid_arguments")).toMatch(/"A" appears twice/);
  });

  it("titles the call with the question, and shows the answers", () => {
    expect(question.title!({ questions: [{ question: "Which database?", header: "Database" }] })).toBe("Ask: Database: Which database?");
    expect(question.title!(ARGS)).toBe("Ask 3 questions");
    expect(question.display!({ answers: [["SQLite"], [], ["acme"]] }, ARGS)).toEqual({
      text: "**Database** SQLite\n\n**Which features?** (no answer)\n\n**What is it called?** acme",
      markdown: true,
    });
  });
});
