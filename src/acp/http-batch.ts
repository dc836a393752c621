import type { AnyMessage, Stream } from "@agentclientprotocol/sdk";
import { batchJoiner } from "./batch.js";

// JSON-RPC 2.0 batches POSTed to `serve`'s Streamable HTTP endpoint, answered before the SDK (which
// refuses any array), as MCP's Streamable HTTP (2025-03-26, the one revision with batches) has it:
// a body of only notifications and responses gets 202 and no body; one with requests gets one
// application/json body, the array of their responses. Each entry goes to the SDK as a POST of
// its own; a request goes with an id of its own (unique in the process), so its answer can be
// taken out of the connection's output, where the SDK would route it to an SSE stream.

type Entry = Record<string, unknown>;

const ID_PREFIX = "toolhost-http-batch:";

const json = (value: unknown, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json" } });

const refused = (id: unknown, message: string): Entry => ({
  jsonrpc: "2.0",
  id,
  error: { code: -32600, message: `Invalid Request: ${message}` },
});

/** The batches POSTed to one `serve` process, over all its connections. */
export class HttpBatches {
  /** Requests of POSTed batches not answered yet, by the id they were forwarded with: where the answer goes. */
  private readonly open = new Map<string, (answer: Entry) => void>();
  private seq = 0;

  /** An agent's stream with the answers to batched requests taken out of its output (they go in their POST's body). */
  wrap(stream: Stream): Stream {
    const writer = stream.writable.getWriter();
    return {
      readable: stream.readable,
      writable: new WritableStream<AnyMessage>({
        write: (message) => (this.take(message) ? undefined : writer.write(message)),
        close: () => writer.close(),
        abort: (reason) => writer.abort(reason),
      }),
    };
  }

  private take(message: AnyMessage): boolean {
    const id = (message as Entry).id;
    if (typeof id !== "string" || !id.startsWith(ID_PREFIX) || "method" in message) return false;
    const deliver = this.open.get(id);
    this.open.delete(id);
    deliver?.(message as Entry);
    return deliver !== undefined;
  }

  /**
   * A POST whose body is a JSON array, answered here through `sdk` (the SDK's handler, one entry
   * at a time); undefined for any other request, which the SDK handles as it is.
   */
  async answer(request: Request, sdk: (request: Request) => Promise<Response>): Promise<Response | undefined> {
    if (request.method !== "POST") return undefined;
    const text = await request.clone().text();
    if (!text.trimStart().startsWith("[")) return undefined;
    let entries: unknown;
    try {
      entries = JSON.parse(text);
    } catch {
      return undefined; // the SDK answers the parse error
    }
    if (!Array.isArray(entries)) return undefined;

    let answered: { value: unknown } | undefined;
    let done: (value: unknown) => void = () => {};
    const whole = new Promise<unknown>((resolve) => (done = resolve));
    const joiner = batchJoiner((value) => {
      answered = { value };
      done(value);
    });
    const headers = new Headers(request.headers);
    headers.delete("content-length");
    const mine: string[] = [];
    for (const entry of joiner.split(entries)) {
      const isRequest = typeof entry.method === "string" && "id" in entry;
      if (isRequest && entry.method === "initialize") {
        // It opens the connection, whose id only its own POST's answer carries.
        joiner.hold(refused(entry.id, "initialize is sent alone, not in a batch: its answer opens the connection"));
        continue;
      }
      const forwarded = isRequest ? { ...entry, id: `${ID_PREFIX}${++this.seq}` } : entry;
      if (isRequest) {
        mine.push(forwarded.id as string);
        this.open.set(forwarded.id as string, (reply) => joiner.hold({ ...reply, id: entry.id }));
      }
      const response = await sdk(
        new Request(request.url, { method: "POST", headers, body: JSON.stringify(forwarded), signal: request.signal }),
      );
      if (isRequest && !response.ok && this.open.delete(forwarded.id as string)) {
        // Refused before the agent saw it (no or an unknown connection, a malformed message): the reason, in its place.
        joiner.hold(refused(entry.id, (await response.text()) || `HTTP ${response.status}`));
      }
    }
    if (answered) return json(answered.value, entries.length === 0 ? 400 : 200);
    if (!joiner.waiting) return new Response(null, { status: 202 });
    // The client that goes away before the answers: nothing waits for them any more.
    const gone = new Promise<undefined>((resolve) => request.signal.addEventListener("abort", () => resolve(undefined), { once: true }));
    const value = await Promise.race([whole, gone]);
    for (const id of mine) this.open.delete(id);
    return value === undefined ? new Response(null, { status: 499 }) : json(value);
  }
}
