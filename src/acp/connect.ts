import { ndJsonStream, type AnyMessage } from "@agentclientprotocol/sdk";
import { MAX_MESSAGE_BYTES } from "./line-guard.js";

// `toolhost connect URL`: an editor that starts agents as commands on stdio reaches a `toolhost
// serve` elsewhere (a container, a forwarded port). Each message is passed on as it is, both ways,
// over the SDK's WebSocket client (ws://, wss://, ws+unix://) or its Streamable HTTP client
// (http://, https://); the token comes from TOOLHOST_SERVE_TOKEN.
//
// One change: initialize's `fs` and `terminal` client capabilities are left out. The editor's files
// and terminals are on the editor's machine, the session's workspace on the server's: the server's
// own fs and shell (and sandbox) serve the session, and no command runs on the editor's machine.

/** The messages from the editor, with initialize's `fs` and `terminal` capabilities removed. */
function withoutEditorMachine(): TransformStream<AnyMessage, AnyMessage> {
  return new TransformStream({
    transform(message, controller) {
      if ("method" in message && message.method === "initialize" && message.params && typeof message.params === "object") {
        const params = message.params as { clientCapabilities?: Record<string, unknown> };
        if (params.clientCapabilities) {
          const caps = { ...params.clientCapabilities };
          delete caps.fs;
          delete caps.terminal;
          message = { ...message, params: { ...params, clientCapabilities: caps } };
        }
      }
      controller.enqueue(message);
    },
  });
}

/**
 * Bridges stdin/stdout to `url` until either side ends; resolves with the exit code (1 when the
 * remote side failed, which stderr explains). `out` writes to the real stdout.
 */
export async function connectRemote(url: string, token: string, out: (chunk: Uint8Array) => Promise<void>): Promise<number> {
  const headers = { Authorization: `Bearer ${token}` };
  let remote;
  if (/^wss?:|^ws\+unix:/.test(url)) {
    const [{ createWebSocketStream }, { WebSocket }] = await Promise.all([
      import("@agentclientprotocol/sdk/experimental/ws-client"),
      import("ws"),
    ]);
    remote = createWebSocketStream(url, { WebSocket, headers });
  } else {
    const { createHttpStream } = await import("@agentclientprotocol/sdk/experimental/http-client");
    remote = createHttpStream(url, { headers, maxMessageBytes: MAX_MESSAGE_BYTES });
  }
  const stdin = new ReadableStream<Uint8Array>({
    start(controller) {
      process.stdin.on("data", (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)));
      process.stdin.on("end", () => controller.close());
    },
  });
  const local = ndJsonStream(new WritableStream<Uint8Array>({ write: (chunk) => out(chunk) }), stdin, {
    maxMessageBytes: MAX_MESSAGE_BYTES + 1024,
  });
  let failure: unknown;
  const note = (err: unknown) => void (failure ??= err);
  // Whichever side ends first ends the other: the editor closing stdin closes the connection (the
  // server then ends its sessions), and a lost connection ends this process (the editor sees the agent exit).
  await Promise.race([
    local.readable.pipeThrough(withoutEditorMachine()).pipeTo(remote.writable).catch(note),
    remote.readable.pipeTo(local.writable, { preventClose: true }).catch(note),
  ]);
  if (failure !== undefined) {
    process.stderr.write(`toolhost connect: ${url}: ${failure instanceof Error ? failure.message : String(failure)}\n`);
    return 1;
  }
  return 0;
}
