// JSON-RPC 2.0 batches (a line that is a JSON array), answered before the SDK, which refuses any
// array: each entry goes to the SDK as a message of its own and the answers to a batch's requests
// go back as one array. Byte-level, beside the line guard: the SDK's ndJsonStream refuses an array
// before any message-level wrapper could see it.

type Entry = Record<string, unknown>;

const OPEN_BRACKET = 0x5b;
const NEWLINE = 0x0a;
const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0d;

const invalidRequest = (message: string): Entry => ({ jsonrpc: "2.0", id: null, error: { code: -32600, message } });

const isId = (id: unknown) => id === null || typeof id === "string" || typeof id === "number";
const isParams = (params: unknown) => params === undefined || (typeof params === "object" && params !== null);

/** What an entry of a batch is: a request (answered), a notification or a response (not), or invalid. */
function classify(entry: unknown): "request" | "quiet" | "invalid" {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return "invalid";
  const message = entry as Entry;
  if (message.jsonrpc !== "2.0") return "invalid";
  if (typeof message.method === "string") {
    if (!isParams(message.params)) return "invalid";
    if (!("id" in message)) return "quiet";
    return isId(message.id) ? "request" : "invalid";
  }
  // A response to one of the agent's requests (a client may batch those too).
  return isId(message.id) && ("result" in message || "error" in message) ? "quiet" : "invalid";
}

/** One batch being answered: its slots in order (an error already, or the key of a request still open). */
interface Batch {
  slots: (Entry | string)[];
  answers: Map<string, Entry>;
}

/**
 * The batches of one connection: `split` turns a batch into the messages for the SDK (answering
 * at once what needs no SDK: `[]`, a batch of invalid entries); `hold` takes an answer of the SDK's
 * that belongs to a batch (false: not one, pass it on) and sends the batch's array once its last
 * request is answered. `[]` gets one -32600 error (id null); an invalid entry gets its own -32600
 * in the array; a batch of notifications gets no answer.
 */
export function batchJoiner(send: (value: unknown) => void): {
  split(entries: unknown[]): Entry[];
  hold(message: unknown): boolean;
  readonly waiting: boolean;
} {
  /** Open requests of batches, by the JSON of their id. */
  const open = new Map<string, Batch>();
  const finish = (batch: Batch) => {
    if (batch.slots.some((slot) => typeof slot === "string" && !batch.answers.has(slot))) return;
    send(batch.slots.map((slot) => (typeof slot === "string" ? batch.answers.get(slot) : slot)));
  };
  return {
    get waiting() {
      return open.size > 0;
    },
    split(entries) {
      if (entries.length === 0) {
        send(invalidRequest("Invalid Request: an empty batch"));
        return [];
      }
      const batch: Batch = { slots: [], answers: new Map() };
      const forwarded: Entry[] = [];
      for (const entry of entries) {
        const kind = classify(entry);
        if (kind === "invalid") {
          batch.slots.push(invalidRequest("Invalid Request: a batch entry that is not a JSON-RPC 2.0 request, notification or response"));
          continue;
        }
        const message = entry as Entry;
        if (kind === "request") {
          const key = JSON.stringify(message.id);
          if (open.has(key) || batch.slots.includes(key)) {
            // Two open requests with one id could not be told apart: the later one is refused.
            batch.slots.push({
              jsonrpc: "2.0",
              id: message.id,
              error: { code: -32600, message: "Invalid Request: a request id already in use" },
            });
            continue;
          }
          batch.slots.push(key);
          open.set(key, batch);
        }
        forwarded.push(message);
      }
      if (batch.slots.length > 0 && batch.slots.every((slot) => typeof slot !== "string")) send(batch.slots);
      return forwarded;
    },
    hold(message) {
      if (open.size === 0 || typeof message !== "object" || message === null || "method" in message) return false;
      const key = JSON.stringify((message as Entry).id);
      const batch = open.get(key);
      if (!batch) return false;
      open.delete(key);
      batch.answers.set(key, message as Entry);
      finish(batch);
      return true;
    },
  };
}

/**
 * Wraps a connection's lines: `input` (whole lines, as the line guard gives them) with every batch
 * split into its entries, and `filter(out)`, the output with the answers of a batch's requests held
 * and written as one array once the last one came (see batchJoiner).
 */
export function batchedRequests(input: ReadableStream<Uint8Array>): {
  input: ReadableStream<Uint8Array>;
  filter: (out: (chunk: Uint8Array) => Promise<void>) => (chunk: Uint8Array) => Promise<void>;
} {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  // The output, from the moment `filter` wraps it (before the first line is read).
  let writeOut: (chunk: Uint8Array) => Promise<void> = async () => {};
  const joiner = batchJoiner((value) => void writeOut(encoder.encode(`${JSON.stringify(value)}\n`)).catch(() => {}));
  const split = (entries: unknown[]) =>
    joiner
      .split(entries)
      .map((entry) => `${JSON.stringify(entry)}\n`)
      .join("");

  const splitLine = (line: Uint8Array): Uint8Array => {
    let first = 0;
    while (first < line.byteLength && isWhitespace(line[first]!)) first++;
    if (line[first] !== OPEN_BRACKET) return line;
    let parsed: unknown;
    try {
      parsed = JSON.parse(decoder.decode(line));
    } catch {
      // Not JSON: the SDK answers its parse error.
      return line;
    }
    return Array.isArray(parsed) ? encoder.encode(split(parsed)) : line;
  };

  const output = input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const lines: Uint8Array[] = [];
        let changed = false;
        let start = 0;
        while (start < chunk.byteLength) {
          const nl = chunk.indexOf(NEWLINE, start);
          const end = nl === -1 ? chunk.byteLength : nl + 1;
          const line = chunk.subarray(start, end);
          const kept = splitLine(line);
          changed ||= kept !== line;
          lines.push(kept);
          start = end;
        }
        // Most chunks hold no batch: passed as they came.
        if (!changed) controller.enqueue(chunk);
        else for (const line of lines) if (line.byteLength > 0) controller.enqueue(line.slice());
      },
    }),
  );

  const filter = (out: (chunk: Uint8Array) => Promise<void>) => {
    writeOut = out;
    return async (chunk: Uint8Array): Promise<void> => {
      if (!joiner.waiting) return out(chunk);
      const kept = decoder
        .decode(chunk)
        .split("\n")
        .filter((line) => {
          if (line === "") return true;
          try {
            return !joiner.hold(JSON.parse(line));
          } catch {
            return true;
          }
        });
      const rest = kept.join("\n");
      if (rest.trim() !== "") await out(encoder.encode(rest));
    };
  };
  return { input: output, filter };
}

/** The part of a `ws` WebSocket the SDK's server uses for messages. */
interface MessageSocket {
  on(event: string, listener: (...args: never[]) => void): unknown;
  send(data: string, ...rest: never[]): void;
}

/**
 * A WebSocket (`ws`) as the SDK's server sees it, with batches split before its message
 * listeners and their answers joined in its sends (see batchJoiner). A frame is one message.
 */
export function batchedWebSocket<S extends MessageSocket>(socket: S): S {
  const originalSend = socket.send as (...args: unknown[]) => void;
  const send = (data: string, ...rest: unknown[]) => originalSend.call(socket, data, ...rest);
  const on = socket.on.bind(socket) as (event: string, listener: (...args: unknown[]) => void) => unknown;
  const joiner = batchJoiner((value) => send(JSON.stringify(value)));
  const decoder = new TextDecoder();
  const text = (data: unknown): string | undefined =>
    typeof data === "string"
      ? data
      : Buffer.isBuffer(data) || data instanceof Uint8Array
        ? decoder.decode(data)
        : Array.isArray(data) && data.every((part) => Buffer.isBuffer(part))
          ? Buffer.concat(data as Buffer[]).toString("utf8")
          : undefined;
  Object.assign(socket, {
    on(event: string, listener: (...args: unknown[]) => void) {
      if (event !== "message") return on(event, listener);
      return on(event, (data: unknown, isBinary: unknown) => {
        const body = isBinary === true ? undefined : text(data);
        if (body === undefined || !body.trimStart().startsWith("[")) return listener(data, isBinary);
        let parsed: unknown;
        try {
          parsed = JSON.parse(body);
        } catch {
          return listener(data, isBinary);
        }
        if (!Array.isArray(parsed)) return listener(data, isBinary);
        for (const entry of joiner.split(parsed)) listener(Buffer.from(JSON.stringify(entry)), false);
      });
    },
    send(data: string, ...rest: unknown[]) {
      if (joiner.waiting && typeof data === "string") {
        try {
          if (joiner.hold(JSON.parse(data))) return;
        } catch {
          // Not JSON: passed on as it is.
        }
      }
      return send(data, ...rest);
    },
  });
  return socket;
}
