import { concat } from "./line-guard.js";

// The first messages of a connection, answered before the ACP SDK has loaded. An editor waits
// for `initialize` and `session/new` with nothing on screen; the SDK builds hundreds of zod
// schemas when it loads, which was about half of the time to `session/new`. So a light reader
// answers those two when they are well-formed and everything before them was answered too;
// every other line (and every line after the first one it cannot answer) goes on to the SDK
// unchanged and in order, once it has loaded.

/** Answers one parsed message early, or returns null to leave it (and all after it) to the SDK. */
export type EarlyAnswer = (message: { id: string | number; method: string; params: unknown }) => string | null;

export interface EarlyOptions {
  answer: EarlyAnswer;
  /** Writes an early answer (one JSON line, newline added here). */
  write(line: string): Promise<void>;
  /** A line the early reader will not answer arrived, or the input ended: the SDK is needed now. */
  onHandOver(): void;
  /** Lines longer than this are never parsed here (the SDK's own limits apply to them). */
  maxLineBytes?: number;
}

const NEWLINE = 0x0a;

function parse(line: Uint8Array): { id: string | number; method: string; params: unknown } | null {
  try {
    const message = JSON.parse(new TextDecoder().decode(line)) as Record<string, unknown>;
    const { id, method } = message;
    if (message.jsonrpc !== "2.0" || typeof method !== "string" || (typeof id !== "string" && typeof id !== "number")) return null;
    return { id, method, params: message.params };
  } catch {
    return null;
  }
}

/** The parts as one array. */
const joined = (parts: Uint8Array[]) =>
  concat(
    parts,
    parts.reduce((n, p) => n + p.length, 0),
  );

/**
 * Reads `input`, answers what it can early, and gives the stream the SDK reads: every line not
 * answered, in order, then the rest of the input as it comes. `endEarly()` (the SDK is ready)
 * stops the early answers: from then on every byte goes to the stream.
 *
 * The input is any async iterable of bytes (process.stdin itself), and `stream` is built on first
 * use: until the SDK loads, no web stream exists, so Node's web-streams modules load after the
 * `session/new` answer, not before it.
 */
export function answerEarly(
  input: AsyncIterable<Uint8Array>,
  options: EarlyOptions,
): { readonly stream: ReadableStream<Uint8Array>; readonly endedAnswered: boolean; endEarly(): void } {
  const maxLineBytes = options.maxLineBytes ?? 1024 * 1024;
  const iterator = input[Symbol.asyncIterator]();
  let early = true;
  let partial: Uint8Array[] = [];
  let partialBytes = 0;
  /** Bytes for the SDK, read before its stream was pulled. */
  let queued: Uint8Array[] = [];
  let ended = false;

  const handOver = (bytes: Uint8Array) => {
    if (early) {
      early = false;
      options.onHandOver();
    }
    if (bytes.length) queued.push(bytes);
  };

  /** Splits a chunk into lines while still answering early; after that, passes chunks through. */
  const take = async (chunk: Uint8Array) => {
    let start = 0;
    while (early) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end < 0) break;
      const line = joined([...partial, chunk.subarray(start, end)]);
      partial = [];
      partialBytes = 0;
      start = end + 1;
      const message = line.length <= maxLineBytes ? parse(line) : null;
      const answer = message ? options.answer(message) : null;
      if (answer === null) {
        handOver(joined([line, chunk.subarray(end, end + 1)]));
        break;
      }
      await options.write(answer);
    }
    const rest = chunk.subarray(start);
    if (!early) {
      // A partial line left from the early phase goes first.
      if (partialBytes) {
        queued.push(joined(partial));
        partial = [];
        partialBytes = 0;
      }
      if (rest.length) queued.push(rest);
      return;
    }
    partial.push(rest);
    partialBytes += rest.length;
    // A line this long is no handshake: leave it to the SDK.
    if (partialBytes > maxLineBytes) {
      const pending = joined(partial);
      partial = [];
      partialBytes = 0;
      handOver(pending);
    }
  };

  const finish = () => {
    // The input ended while still early: the SDK takes over (and sees the end).
    if (early) {
      early = false;
      options.onHandOver();
    }
    if (partialBytes) queued.push(joined(partial));
    partial = [];
    partialBytes = 0;
    ended = true;
  };

  /** Reads one chunk of the input into `queued` (or marks its end). */
  const readOne = async () => {
    const { done, value } = await iterator.next();
    if (done) finish();
    else await take(value);
  };

  // While early, read actively (nobody pulls yet); afterwards the SDK's reads pull the input.
  let failure: { error: unknown } | undefined;
  const earlyPhase = (async () => {
    while (early && !ended) await readOne();
  })().catch((error: unknown) => void (failure = { error }));

  let stream: ReadableStream<Uint8Array> | undefined;
  const build = () =>
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        await earlyPhase;
        if (failure) throw failure.error;
        while (!queued.length && !ended) await readOne();
        if (queued.length) {
          controller.enqueue(joined(queued));
          queued = [];
        }
        if (ended) controller.close();
      },
      async cancel() {
        await iterator.return?.();
      },
    });
  return {
    get stream() {
      return (stream ??= build());
    },
    /** The input ended while early, and every line of it was answered here: the SDK has nothing to do. */
    get endedAnswered() {
      return ended && queued.length === 0 && failure === undefined;
    },
    endEarly() {
      early = false;
    },
  };
}
