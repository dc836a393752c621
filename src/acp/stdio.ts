import { closeSync, openSync, readSync } from "node:fs";
import type { ClientCapabilities, McpServer } from "@agentclientprotocol/sdk";
import { readConfigFile } from "../config/file.js";
import { resolveWorkspace } from "../config/workspace.js";
import { answerEarly, type EarlyAnswer } from "./early.js";
import { configuredProfileProblem, cwdProblem, directoriesProblem, initializeResponse, newSessionResponse } from "./handshake.js";
import { guardLines, MAX_MESSAGE_BYTES } from "./line-guard.js";
import { prefetchRestore } from "./session-modules.js";
import { isV2Initialize, v1Capabilities, v2InitializeResponse, v2NewSessionResponse } from "./v2/handshake.js";
import type { EarlyState } from "./server.js";

// The ACP entry on stdin/stdout. It loads light: the handshake is answered before the SDK (and
// its schemas) load, so an editor sees `session/new` answered sooner; see acp/early.ts.

/** How long after an early `initialize` the SDK loads anyway, when no `session/new` follows. */
const IDLE_LOAD_MS = 100;

type Out = (chunk: Uint8Array) => Promise<void>;

/** The input's lines, with any line over the ACP message limit dropped and answered with an error. */
function guarded(input: ReadableStream<Uint8Array>, out: Out): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return guardLines(input, (dropped) => {
    const what = `${dropped.method ?? "message"}${dropped.id === undefined ? "" : ` (id ${JSON.stringify(dropped.id)})`}`;
    process.stderr.write(
      `toolhost: dropped a ${dropped.bytes}-byte ${what}: one ACP message may have at most ${MAX_MESSAGE_BYTES} bytes\n`,
    );
    if (dropped.id === undefined) return null;
    const message =
      `The message is too large: ${dropped.bytes} bytes, and one ACP message may have at most ${MAX_MESSAGE_BYTES} (32 MiB). ` +
      "Nothing was done with it: send less (attach big files as resource links instead of pasting them).";
    const error = { code: -32600, message, data: { bytes: dropped.bytes, limit: MAX_MESSAGE_BYTES } };
    // A request gets its error answer; an answer of the client becomes an error for the request waiting on it.
    if (dropped.method === undefined) return JSON.stringify({ jsonrpc: "2.0", id: dropped.id, error });
    void out(encoder.encode(`${JSON.stringify({ jsonrpc: "2.0", id: dropped.id, error })}\n`)).catch(() => {});
    return null;
  });
}

/**
 * A random (v4) UUID read from /dev/urandom, or null where there is none (the SDK then answers
 * `session/new`, with node:crypto). node:crypto is 17 internal modules to load before the answer;
 * fs is loaded already.
 */
function urandomUuid(): string | null {
  const bytes = Buffer.alloc(16);
  let fd: number | undefined;
  try {
    fd = openSync("/dev/urandom", "r");
    if (readSync(fd, bytes, 0, 16, null) !== 16) return null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

const isEmptyList = (value: unknown) => Array.isArray(value) && value.length === 0;

const isPairs = (value: unknown) =>
  Array.isArray(value) && value.every((p) => isObject(p) && typeof p.name === "string" && typeof p.value === "string");

/**
 * session/new's MCP servers when each has the shape the SDK's schema requires (stdio: name,
 * command, args, env; http/sse: type, name, url, headers); null sends the request to the SDK,
 * whose validation answers anything else.
 */
function plainServers(value: unknown): McpServer[] | null {
  if (!Array.isArray(value)) return null;
  const ok = value.every((s) => {
    if (!isObject(s) || typeof s.name !== "string") return false;
    if (s.type === "http" || s.type === "sse") return typeof s.url === "string" && isPairs(s.headers);
    return (
      s.type === undefined &&
      typeof s.command === "string" &&
      Array.isArray(s.args) &&
      s.args.every((a) => typeof a === "string") &&
      isPairs(s.env)
    );
  });
  return ok ? (value as McpServer[]) : null;
}

/**
 * The sessions answered early, each written as session/new leaves it (its header; the hold taken
 * and released), so another process loads them by id.
 */
async function recordAnsweredSessions(state: EarlyState): Promise<void> {
  if (state.sessions.length === 0) return;
  const [{ SessionStore }, { newSessionRecorder }] = await Promise.all([
    import("../agent/record/session-store.js"),
    import("../agent/record/session-recorder.js"),
  ]);
  const store = new SessionStore();
  for (const { id, workspace } of state.sessions) {
    const recorder = newSessionRecorder(store, id, workspace);
    try {
      recorder?.start();
    } catch (err) {
      process.stderr.write(`toolhost: session ${id} could not be recorded: ${String(err)}\n`);
    }
    recorder?.close();
  }
}

/**
 * Serves ACP on stdin/stdout until stdin closes or SIGTERM. `out` writes to the real stdout (the
 * CLI sends every other stdout write to stderr).
 */
export async function serveStdio(out: Out): Promise<void> {
  const encoder = new TextEncoder();
  const state: EarlyState = { sessions: [] };
  let loadServer: () => void = () => {};
  const needed = new Promise<void>((resolve) => (loadServer = resolve));
  let idle: NodeJS.Timeout | undefined;
  let loadAfterWrite = false;

  // Only what the SDK would accept as it is: anything else waits for the SDK and its validation.
  const answer: EarlyAnswer = ({ id, method, params }) => {
    if (!isObject(params)) return null;
    // A v2 client (asking for 2 or later, without v1's clientCapabilities or clientInfo) gets v2's
    // answers, mapped from v1's as the v2 side maps them (acp/v2/handshake.ts); the router replays
    // its initialize. A v1 one gets v1 here, whatever version it asks for.
    if (method === "initialize" && state.clientCapabilities === undefined && isV2Initialize(params)) {
      const caps = params.capabilities ?? {};
      if (!isObject(caps)) return null;
      state.v2 = true;
      state.clientCapabilities = v1Capabilities(caps);
      state.initializeParams = params;
      idle = setTimeout(loadServer, IDLE_LOAD_MS);
      return JSON.stringify({ jsonrpc: "2.0", id, result: v2InitializeResponse(initializeResponse(state.clientCapabilities)) });
    }
    if (method === "initialize" && state.clientCapabilities === undefined && typeof params.protocolVersion === "number") {
      const caps = params.clientCapabilities ?? {};
      if (!isObject(caps)) return null;
      state.clientCapabilities = caps as ClientCapabilities;
      state.initializeParams = params;
      idle = setTimeout(loadServer, IDLE_LOAD_MS);
      return JSON.stringify({ jsonrpc: "2.0", id, result: initializeResponse(caps) });
    }
    // v1 requires mcpServers: without them the SDK answers (-32602), as it does after any other request.
    // v2's are optional; a v2 session with MCP servers goes to the SDK (its servers are mapped there).
    const servers = state.v2
      ? params.mcpServers === undefined || isEmptyList(params.mcpServers)
        ? []
        : null
      : plainServers(params.mcpServers);
    const dirs = params.additionalDirectories ?? [];
    const plainDirs = Array.isArray(dirs) && dirs.every((d) => typeof d === "string") ? dirs : null;
    if (method === "session/new" && state.clientCapabilities !== undefined && typeof params.cwd === "string" && servers && plainDirs) {
      if (cwdProblem(params.cwd) !== null || directoriesProblem(plainDirs) !== null) return null;
      const sessionId = urandomUuid();
      if (sessionId === null) return null;
      // Read once: the answer's options and, once the SDK has loaded, the session's tools.
      const config = readConfigFile();
      // A configured profile that does not exist: the SDK's path refuses the request with the reason.
      if (configuredProfileProblem(config) !== null) return null;
      // Resolved once here: the session takes this Workspace when it starts.
      state.sessions.push({ id: sessionId, workspace: resolveWorkspace(params.cwd, plainDirs), mcpServers: servers, config });
      loadAfterWrite = true;
      const result = newSessionResponse(sessionId, config);
      return JSON.stringify({ jsonrpc: "2.0", id, result: state.v2 ? v2NewSessionResponse(result) : result });
    }
    // A stored session to open: its modules load beside the SDK (their files are read while it compiles).
    if ((method === "session/load" || method === "session/resume") && state.clientCapabilities !== undefined) prefetchRestore();
    return null;
  };
  /** How many of the sessions answered early have had their sandbox map started (`prewarmSandboxMap`). */
  let warmed = 0;
  // The client went away before the SDK loaded: nothing has started yet, so just stop.
  const goneEarly = () => process.exit(0);
  process.stdout.on("error", goneEarly);
  // process.stdin as it is (no web stream yet: those modules load with the SDK). Lines up to 1 MiB
  // are answered here; a longer one goes to the SDK, behind the line guard, like every line after it.
  const early = answerEarly(process.stdin, {
    answer,
    write: async (line) => {
      await out(encoder.encode(`${line}\n`));
      // The session's answer is out: now the SDK, then the session's tools; meanwhile the sandbox's
      // map of its folders makes its first pass (its worker), which the session takes when it starts.
      if (loadAfterWrite) {
        const fresh = state.sessions.slice(warmed);
        warmed = state.sessions.length;
        if (fresh.length) {
          void import("../runtime/sandbox/session-sandbox.js")
            .then(({ prewarmSandboxMap }) => fresh.forEach((session) => prewarmSandboxMap(session.workspace.roots)))
            .catch(() => undefined);
        }
        setImmediate(loadServer);
      }
    },
    onHandOver: () => loadServer(),
  });
  await needed;
  clearTimeout(idle);
  const { serveConnection } = await import("./stdio-connection.js");
  // The client left right after the handshake (acpx's `sessions new`): each session it was answered
  // gets its file, as one started would have, and nothing else starts (an exit within moments of
  // the end of stdin, not after the session's tools, servers and checkpoints).
  if (early.endedAnswered) {
    await recordAnsweredSessions(state);
    process.exit(0);
  }
  early.endEarly();
  process.stdout.off("error", goneEarly);
  await serveConnection(guarded(early.stream, out), out, state);
}
