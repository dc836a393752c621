import { ndJsonStream } from "@agentclientprotocol/sdk";
import { sweepStale } from "../runtime/sidecars.js";
import { batchedRequests } from "./batch.js";
import { concat, MAX_MESSAGE_BYTES } from "./line-guard.js";
import { createAgent, type EarlyState } from "./server.js";

// The stdio connection once the SDK has loaded (stdio.ts hands over to it): the early reader's
// `initialize` replayed to the SDK, the batched output, the v1/v2 router, the sweep, the exit.

const REPLAY_ID = "toolhost-early-initialize";

/**
 * The SDK answers nothing but `initialize` until it has answered an `initialize` itself. When the
 * early reader answered it, the same request is replayed to the SDK first (validated and handled
 * as usual) and its second answer is kept from the client. `holdRest`: the lines after it wait
 * until that answer came (the v2 side refuses a request that arrives before its initialize ended,
 * where v1's waits for it).
 */
function replayInitialize(input: ReadableStream<Uint8Array>, params: unknown, holdRest: boolean) {
  const line = new TextEncoder().encode(`${JSON.stringify({ jsonrpc: "2.0", id: REPLAY_ID, method: "initialize", params })}\n`);
  const reader = input.getReader();
  let answered = () => {};
  const initialized = holdRest ? new Promise<void>((resolve) => (answered = resolve)) : Promise.resolve();
  const replayed = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(line);
    },
    async pull(controller) {
      await initialized;
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  const decoder = new TextDecoder();
  // Once the replay's answer is dropped, every chunk passes as it is.
  let dropped = false;
  const filter =
    (out: (chunk: Uint8Array) => Promise<void>) =>
    async (chunk: Uint8Array): Promise<void> => {
      if (dropped) return out(chunk);
      const text = decoder.decode(chunk);
      if (!text.includes(REPLAY_ID)) return out(chunk);
      // Keep every line but the replay's answer (a chunk may carry several messages).
      const kept = text.split("\n").filter((line) => {
        if (!line.includes(REPLAY_ID)) return true;
        try {
          const answer = JSON.parse(line) as { id?: unknown; error?: { message?: string } };
          if (answer.id !== REPLAY_ID) return true;
          if (answer.error) process.stderr.write(`toolhost: the SDK refused the early initialize: ${answer.error.message ?? ""}\n`);
          dropped = true;
          answered();
          return false;
        } catch {
          return true;
        }
      });
      const rest = kept.join("\n");
      if (rest !== "") await out(new TextEncoder().encode(rest));
    };
  return { input: replayed, filter };
}

/** Past this many bytes waiting, a write waits for the batch to be handed to the OS (backpressure). */
const BATCH_BYTES = 1024 * 1024;

/**
 * The connection's output, written in batches: what the SDK writes in one burst goes out as one
 * write. The SDK writes each message alone and waits for it; a session/load replays thousands of
 * notifications, and a stdout write per message (the syscall, its callbacks and the stream's
 * bookkeeping) was most of the load's time. A write resolves at once, in order, while under
 * BATCH_BYTES wait; the batch goes out on the next turn of the event loop. `flush()` resolves once
 * everything written so far is out (before the process exits).
 */
export function batchedOutput(out: (chunk: Uint8Array) => Promise<void>): {
  write(chunk: Uint8Array): Promise<void>;
  flush(): Promise<void>;
} {
  let waiting: Uint8Array[] = [];
  let waitingBytes = 0;
  let sent: Promise<void> = Promise.resolve();
  let scheduled: Promise<void> | null = null;
  let failure: { error: unknown } | undefined;
  const send = () => {
    scheduled = null;
    const chunk = concat(waiting, waitingBytes);
    waiting = [];
    waitingBytes = 0;
    sent = sent.then(() => (failure ? undefined : out(chunk))).catch((error: unknown) => void (failure ??= { error }));
    return sent;
  };
  return {
    write(chunk) {
      if (failure) return Promise.reject(failure.error as Error);
      waiting.push(chunk);
      waitingBytes += chunk.byteLength;
      scheduled ??= new Promise<void>((resolve) => setImmediate(resolve)).then(send);
      return waitingBytes >= BATCH_BYTES ? scheduled : Promise.resolve();
    },
    async flush() {
      await scheduled;
      await sent;
    },
  };
}

/**
 * Serves ACP on `input` (stdin's lines, guarded and after the early answers) until it closes or
 * SIGTERM; then kills what it started and exits 0. `out` writes to the real stdout: the CLI has
 * sent every other write to stdout (an extension's console.log) to stderr.
 */
export async function serveConnection(
  input: ReadableStream<Uint8Array>,
  out: (chunk: Uint8Array) => Promise<void>,
  early: EarlyState,
): Promise<void> {
  const output = batchedOutput(out);
  const encoder = new TextEncoder();
  // A load's replay, written beside the SDK (see AcpSession.replay).
  const { app, shutdown, adoptEarly, sessionStore } = createAgent(early, (lines) => output.write(encoder.encode(lines)));
  // JSON-RPC batches are split before the SDK (which refuses arrays) and their answers joined after it.
  const batches = batchedRequests(input);
  const replay = early.initializeParams === undefined ? null : replayInitialize(batches.input, early.initializeParams, early.v2 === true);
  const batchedWrite = batches.filter(output.write);
  const write = replay ? replay.filter(batchedWrite) : batchedWrite;
  const stream = ndJsonStream(new WritableStream<Uint8Array>({ write: (chunk) => write(chunk) }), replay?.input ?? batches.input, {
    maxMessageBytes: MAX_MESSAGE_BYTES + 1024,
  });
  let closed: Promise<void>;
  let shutdownV2 = async () => {};
  if (replay && !early.v2) {
    // The early reader answered a v1 initialize: the connection is v1's.
    const conn = app.connect(stream);
    // Same tick as connect: no queued message is dispatched before the early sessions exist.
    adoptEarly(conn.client);
    closed = conn.closed;
  } else {
    // The SDK's router picks v1 or v2 at initialize (a v2 one answered early is replayed to it);
    // v2 is a mapping over its own v1 agent (acp/v2/), which takes the early v2 sessions.
    const { versionRouter } = await import("./v2/agent.js");
    const routed = versionRouter(app, createAgent, early.v2 ? early : undefined);
    shutdownV2 = routed.shutdown;
    closed = routed.router.connect(stream).closed;
  }
  // In the background, after the start: sidecar folders of sessions that were not recorded, and
  // data folders of recorded sessions whose file is gone (the retention sweep). Never loud.
  setTimeout(() => {
    void sweepStale().catch(() => {});
    void sessionStore()
      .then((store) => store.sweepOrphans())
      .catch(() => {});
  }, 2000).unref();
  let exiting = false;
  const exit = async () => {
    if (exiting) return;
    exiting = true;
    await Promise.all([shutdown(), shutdownV2()]);
    await output.flush().catch(() => {});
    process.exit(0);
  };
  // `on`, not `once`: with no listener of ours left, execa's signal-exit re-raises a second signal
  // and the process dies before its sessions close (their processes, the session files).
  process.on("SIGTERM", () => void exit());
  process.on("SIGINT", () => void exit());
  // A broken stdout pipe means the client is gone: stop cleanly instead of crashing.
  process.stdout.on("error", () => void exit());
  await closed.catch(() => {});
  await exit();
}
