/**
 * The SDK's line reader fails the whole connection on one message over its limit (32 MiB): the
 * agent exited 0 with no word and every session was lost. This reader in front of it drops such
 * a line instead, and the connection goes on: the request is answered with an error, an answer
 * of the client is turned into an error for the request waiting on it, and the reason is logged.
 */

/** The SDK's default limit: lines up to this reach it whole. */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** What is kept of a dropped line to find its id and method: its start and its end. */
const HEAD_BYTES = 64 * 1024;
const TAIL_BYTES = 4 * 1024;

/** A line that was dropped, with what could be read of it. */
export interface DroppedMessage {
  bytes: number;
  /** The JSON-RPC id as written (a number or a string), when found. */
  id?: number | string;
  /** The method, for a request or a notification. */
  method?: string;
}

const NEWLINE = 0x0a;
const ID = String.raw`"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")`;
const METHOD = String.raw`"method"\s*:\s*"((?:[^"\\]|\\.)*)"`;

/** The id and method of a JSON-RPC message from its first and last bytes (the members around its big `params` or `result`). */
export function describeDropped(head: string, tail: string, bytes: number): DroppedMessage {
  const found: DroppedMessage = { bytes };
  // Before the first big member only: an "id" inside params belongs to something else.
  const body = /"(?:params|result|error)"\s*:/.exec(head);
  const start = body ? head.slice(0, body.index) : head;
  // After it, only the members that close the message.
  const end = new RegExp(String.raw`,\s*((?:(?:${ID}|${METHOD}|"jsonrpc"\s*:\s*"2\.0")\s*,?\s*)+)\}\s*$`).exec(tail)?.[1] ?? "";
  const id = new RegExp(ID).exec(start) ?? new RegExp(ID).exec(end);
  const method = new RegExp(METHOD).exec(start) ?? new RegExp(METHOD).exec(end);
  if (id) found.id = JSON.parse(id[1]!) as number | string;
  if (method) found.method = JSON.parse(`"${method[1]!}"`) as string;
  return found;
}

/** The chunks as one array (`total` is their summed length). */
export function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * Passes whole lines of at most `maxBytes` through; a longer line is dropped and reported to
 * `onDropped`, which may return a line to pass on in its place (an error answer for the SDK).
 */
export function guardLines(
  input: ReadableStream<Uint8Array>,
  onDropped: (message: DroppedMessage) => string | null,
  maxBytes = MAX_MESSAGE_BYTES,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  // While dropping: the line's size so far, its head and its last bytes.
  let dropping = false;
  let dropped = 0;
  let head = "";
  let tail = new Uint8Array(0);

  const keepTail = (part: Uint8Array) => {
    if (part.byteLength >= TAIL_BYTES) tail = part.slice(part.byteLength - TAIL_BYTES);
    else {
      const joined = concat([tail, part], tail.byteLength + part.byteLength);
      tail = joined.slice(Math.max(0, joined.byteLength - TAIL_BYTES));
    }
  };

  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const out: Uint8Array[] = [];
        let outBytes = 0;
        const emit = (bytes: Uint8Array) => {
          out.push(bytes);
          outBytes += bytes.byteLength;
        };
        let start = 0;
        while (start <= chunk.byteLength) {
          const nl = chunk.indexOf(NEWLINE, start);
          const part = chunk.subarray(start, nl === -1 ? chunk.byteLength : nl);
          if (dropping) {
            dropped += part.byteLength;
            keepTail(part);
          } else if (heldBytes + part.byteLength > maxBytes) {
            const line = concat([...held, part], heldBytes + part.byteLength);
            head = decoder.decode(line.subarray(0, HEAD_BYTES));
            dropped = line.byteLength;
            tail = new Uint8Array(0);
            keepTail(line);
            dropping = true;
            held = [];
            heldBytes = 0;
          } else if (part.byteLength > 0) {
            // Copied: the chunk's buffer is not ours to keep.
            held.push(nl === -1 ? part.slice() : part);
            heldBytes += part.byteLength;
          }
          if (nl === -1) break;
          if (dropping) {
            const replacement = onDropped(describeDropped(head, decoder.decode(tail), dropped));
            if (replacement !== null) emit(encoder.encode(`${replacement}\n`));
            dropping = false;
            head = "";
            tail = new Uint8Array(0);
          } else {
            emit(concat([...held, Uint8Array.of(NEWLINE)], heldBytes + 1));
          }
          held = [];
          heldBytes = 0;
          start = nl + 1;
        }
        if (out.length) controller.enqueue(concat(out, outBytes));
      },
      flush(controller) {
        if (dropping) {
          const replacement = onDropped(describeDropped(head, decoder.decode(tail), dropped));
          if (replacement !== null) controller.enqueue(encoder.encode(`${replacement}\n`));
        } else if (heldBytes > 0) controller.enqueue(concat(held, heldBytes));
      },
    }),
  );
}
