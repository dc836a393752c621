import { parentPort } from "node:worker_threads";
import { isToolError } from "../tool/errors.js";
import { extractHtml } from "./web-extract.js";
import type { ExtractReply, ExtractRequest } from "./web-extract-pool.js";

// The worker thread that runs web_fetch's extraction (linkedom + Readability + turndown), so a
// page that takes long to reduce holds this thread, not the agent's, and can be stopped
// (tools/web-extract-pool.ts terminates it on the call's deadline or cancel). One request at a time.

parentPort?.on("message", (request: ExtractRequest) => {
  let reply: ExtractReply;
  try {
    reply = { id: request.id, result: extractHtml(request.html, request.url, request.format) };
  } catch (err) {
    reply = {
      id: request.id,
      error: { ...(isToolError(err) ? { code: err.code } : {}), message: err instanceof Error ? err.message : String(err) },
    };
  }
  parentPort?.postMessage(reply);
});
