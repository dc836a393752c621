#!/usr/bin/env node
// A minimal headless ACP client: starts toolhost, opens a session in the current directory,
// sends each argument as a prompt, and prints what the agent streams back.
//   node examples/acp-try.mjs "/grep TODO" "/read README.md:1-20"
//   node examples/acp-try.mjs --yes "/bash git status"     (answers approvals with "allow once")
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";

const args = process.argv.slice(2);
const yes = args.includes("--yes");
const prompts = args.filter((a) => a !== "--yes");
if (!prompts.length) {
  console.error('usage: node examples/acp-try.mjs [--yes] "/grep TODO" ["/read src/cli.ts"] …');
  process.exit(2);
}

const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
const agentProcess = spawn(process.execPath, [cli], { stdio: ["pipe", "pipe", "inherit"] });

// Model answers stream in chunks: keep them on one line, and start a new one for anything else.
let midLine = false;
const line = (text) => {
  if (midLine) process.stdout.write("\n");
  midLine = false;
  console.log(text);
};

const show = (update) => {
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
    case "agent_thought_chunk":
      if (update.content.type !== "text") break;
      process.stdout.write(update.sessionUpdate === "agent_thought_chunk" ? `\x1b[2m${update.content.text}\x1b[0m` : update.content.text);
      midLine = !update.content.text.endsWith("\n");
      break;
    case "tool_call":
      line(`▶ [${update.kind}] ${update.title}`);
      break;
    case "usage_update":
      line(
        `(context: ${update.used} of ${update.size} tokens${update.cost ? `, ${update.cost.amount.toFixed(4)} ${update.cost.currency}` : ""})`,
      );
      break;
    case "tool_call_update":
      for (const c of update.content ?? []) {
        if (c.type === "content" && c.content.type === "text") line(c.content.text);
        if (c.type === "diff") line(`(diff of ${c.path})`);
      }
      if (update.status === "completed" || update.status === "failed") line(`■ ${update.status}`);
      break;
    case "plan":
      for (const e of update.entries) line(`  [${e.status}] ${e.content}`);
      break;
  }
};

const app = client({ name: "acp-try" })
  .onNotification("session/update", ({ params }) => show(params.update))
  .onRequest("session/request_permission", ({ params }) => {
    const answer = yes ? "allow_once" : "reject_once";
    line(`? ${params.toolCall.title} — answering ${answer}${yes ? "" : " (pass --yes to allow)"}`);
    return { outcome: { outcome: "selected", optionId: answer } };
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout)));
const agent = connection.agent;
await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "acp-try", version: "1" } });
const { sessionId } = await agent.request("session/new", { cwd: process.cwd(), mcpServers: [] });
for (const text of prompts) {
  const { stopReason } = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  line(`(turn ended: ${stopReason})`);
}
agentProcess.stdin.end();
