import { Worker } from "node:worker_threads";
import { ToolError, type ErrorCode } from "../tool/errors.js";
import type { Extracted } from "./web-extract.js";
import { workerFile } from "../tool/worker-file.js";

// web_fetch's extraction off the agent's thread. Parsing, Readability and turndown are
// synchronous, and some pages take minutes (a deeply nested one: Readability is cubic in the
// depth); on the agent's thread that would hold every session, cancel and signal meanwhile. Here
// a worker thread runs it with a deadline, and is terminated on the deadline or the call's
// cancel. One worker stays for the process (started on the first HTML page, ~25 ms; unref'd
// while idle, so it keeps no process alive); a call that finds it busy gets a worker of its own,
// ended after its call.

export interface ExtractRequest {
  id: number;
  html: string;
  url: string;
  format: "markdown" | "text";
}

export type ExtractReply = { id: number; result: Extracted } | { id: number; error: { code?: ErrorCode; message: string } };

let idle: Worker | undefined;
let nextId = 1;

function take(): Worker {
  const worker = idle ?? new Worker(workerFile(import.meta.url, "web-extract-worker.js"));
  idle = undefined;
  worker.ref();
  return worker;
}

/** A worker that finished a job cleanly: kept if none is, ended otherwise. */
function release(worker: Worker): void {
  worker.removeAllListeners("message");
  worker.removeAllListeners("error");
  worker.removeAllListeners("exit");
  if (idle) return void worker.terminate();
  worker.unref();
  // An idle worker that dies (out of memory) is simply replaced next time.
  worker.once("exit", () => {
    if (idle === worker) idle = undefined;
  });
  idle = worker;
}

export interface ExtractOptions {
  /** The extraction's deadline: it fails `timeout` past it. */
  timeoutMs: number;
  signal: AbortSignal;
}

/** The page's main content, extracted in a worker thread within `timeoutMs`, stopped on `signal`. */
export function extractInWorker(html: string, url: string, format: "markdown" | "text", options: ExtractOptions): Promise<Extracted> {
  if (options.signal.aborted) return Promise.reject(new ToolError("aborted", `Fetching ${url} was cancelled`));
  const worker = take();
  const id = nextId++;
  return new Promise<Extracted>((resolve, reject) => {
    let settled = false;
    const finish = (keep: boolean) => {
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      if (keep) release(worker);
      else void worker.terminate();
    };
    const fail = (error: ToolError) => {
      if (settled) return;
      finish(false);
      reject(error);
    };
    const timer = setTimeout(
      () =>
        fail(
          new ToolError(
            "timeout",
            `Extracting the main content of ${url} took longer than ${options.timeoutMs} ms (what was left of the call's timeout_ms), so it was stopped: the page is too complex to reduce in time. format "html" returns it as it is.`,
          ),
        ),
      options.timeoutMs,
    );
    const onAbort = () => fail(new ToolError("aborted", `Fetching ${url} was cancelled`));
    options.signal.addEventListener("abort", onAbort, { once: true });
    worker.on("message", (reply: ExtractReply) => {
      if (settled || reply.id !== id) return;
      finish(true);
      if ("result" in reply) resolve(reply.result);
      else reject(new ToolError(reply.error.code ?? "execution_failed", reply.error.message));
    });
    worker.on("error", (err) =>
      fail(
        new ToolError(
          "execution_failed",
          `Extracting the main content of ${url} failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
      ),
    );
    worker.on("exit", (code) =>
      fail(new ToolError("execution_failed", `Extracting the main content of ${url} failed: its worker thread ended (exit code ${code})`)),
    );
    worker.postMessage({ id, html, url, format } satisfies ExtractRequest);
  });
}
