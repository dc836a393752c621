#!/usr/bin/env node
// The model of the end-to-end trial: toolhost's fake OpenAI-compatible server on 127.0.0.1:<port>,
// answering each conversation by how far it got: write hello.txt, run one bash command that shows
// whether it was sandboxed, then a last answer. Fixed usage numbers, so Harbor's token counts can be
// checked: 3 requests, 3600 input tokens (900 of them cache reads), 60 output tokens.
//
//   node fake-model.mjs <port>
import { startFakeOpenAI } from "../../../test/fixtures/fake-openai.mjs";

const REPLIES = [
  {
    text: "Writing hello.txt.",
    toolCalls: [{ name: "write", arguments: { path: "hello.txt", content: "Hello, world!" } }],
    usage: { prompt_tokens: 1000, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 0 } },
  },
  {
    text: "Checking it, and where commands run.",
    toolCalls: [{ name: "bash", arguments: { command: "cat hello.txt; echo; id -u; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status" } }],
    usage: { prompt_tokens: 1200, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 400 } },
  },
  {
    text: "hello.txt holds Hello, world!",
    usage: { prompt_tokens: 1400, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 500 } },
  },
];

const port = Number(process.argv[2] ?? 0);
const fake = await startFakeOpenAI({
  port,
  fallback: (body) => {
    const messages = body.messages ?? [];
    const lastUser = messages.map((m) => m.role).lastIndexOf("user");
    const results = messages.slice(lastUser + 1).filter((m) => m.role === "tool").length;
    return REPLIES[Math.min(results, REPLIES.length - 1)];
  },
});
process.stdout.write(`${fake.url}\n`);
