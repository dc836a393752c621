import { rmSync } from "node:fs";
import { chmod, mkdtemp, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { AgentContext } from "@agentclientprotocol/sdk";
import type { ProcessInfo, ToolEvent } from "../tool/context.js";
import type { ProcessFeed } from "../runtime/shell/processes.js";
import { RING_BYTES } from "../runtime/shell/output-ring.js";
import { shellPath } from "../runtime/shell/scoped.js";

// A background process in an editor terminal. The process runs here, under toolhost (its group,
// its rings, stdin, the tree kill, the end with the session): an ACP terminal's process is the
// client's, with no stdin, no way to read one stream alone and no promise to end with the agent.
// So the terminal the start's tool call embeds runs a follower instead: a launcher named
// `toolhost-process` (its arguments are the process's command line, shown as the terminal's
// command) that execs node on a small script, which connects to a unix socket of this process and
// copies what the process writes, stdout and stderr apart, to its own, then exits with the
// process's status. The socket and launcher live in a 0700 folder, removed once the follower has
// connected (only the first connection is served) or the process has ended.

/** What a frame carries: a chunk of stdout, of stderr, or the end (JSON: exit code and signal). */
const STDOUT = 1;
const STDERR = 2;
const EXIT = 3;

/** Output held for a follower that has not connected yet; past it the oldest goes, said once. */
const PENDING_BYTES = 256 * 1024;
/** How long the follower may take to print the end before its terminal is released. */
const RELEASE_AFTER_MS = 5000;

/** The follower (node -e): frames from the socket in argv[1] to stdout/stderr; the exit frame's status as its own. */
const FOLLOWER = [
  'const s = require("node:net").connect(process.argv[1]);',
  "let b = Buffer.alloc(0);",
  's.on("data", (d) => {',
  "  b = Buffer.concat([b, d]);",
  "  while (b.length >= 5) {",
  "    const n = b.readUInt32BE(1);",
  "    if (b.length < 5 + n) break;",
  "    const t = b[0], p = b.subarray(5, 5 + n);",
  "    b = b.subarray(5 + n);",
  // The follower is its own program in the editor's terminal: its stdout is that terminal, not ACP.
  `    if (t === ${STDOUT}) process.stdout.write(p);`, // stdout-ok
  `    else if (t === ${STDERR}) process.stderr.write(p);`,
  `    else if (t === ${EXIT}) { const x = JSON.parse(p); process.exitCode = x.code ?? (128 + (require("node:os").constants.signals[x.signal] ?? 0)); }`,
  "  }",
  "});",
  's.on("error", () => { process.exitCode = 1; });',
].join("\n");

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

function frame(type: number, payload: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head[0] = type;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

function exitFrame(info: ProcessInfo): Buffer {
  return frame(EXIT, Buffer.from(JSON.stringify({ code: info.exit_code, signal: info.signal })));
}

/**
 * Shows `feed` in an editor terminal embedded in the starting call (`emit`): subscribes at once
 * (before the first await), so the terminal gets the output from its first byte. The terminal is
 * released once the process has ended and the follower has printed the end (bounded).
 */
export async function showProcessInTerminal(
  client: AgentContext,
  sessionId: string,
  feed: ProcessFeed,
  emit?: (event: ToolEvent) => void,
): Promise<void> {
  let socket: net.Socket | null = null;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipped = 0;
  let ended: ProcessInfo | null = null;
  let dir: string | null = null;
  const removeDir = () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = null;
  };
  const send = (data: Buffer) => {
    if (socket) {
      socket.write(data);
      return;
    }
    pending.push(data);
    pendingBytes += data.length;
    while (pendingBytes > PENDING_BYTES && pending.length > 1) {
      const dropped = pending.shift() as Buffer;
      pendingBytes -= dropped.length;
      skipped += dropped.length - 5;
    }
  };
  let onEnd: () => void = () => undefined;
  const unfollow = feed.follow({
    output: (chunk, stream) => send(frame(stream === "stdout" ? STDOUT : STDERR, chunk)),
    exit: (info) => {
      ended = info;
      send(exitFrame(info));
      socket?.end();
      onEnd();
    },
  });

  try {
    dir = await mkdtemp(path.join(/^[\w./-]{1,60}$/.test(os.tmpdir()) ? os.tmpdir() : "/tmp", "toolhost-view-"));
    const socketPath = path.join(dir, "s");
    const launcher = path.join(dir, "toolhost-process");
    const server = net.createServer();
    server.maxConnections = 1;
    server.on("connection", (conn) => {
      server.close();
      removeDir();
      if (socket) {
        conn.destroy();
        return;
      }
      socket = conn;
      conn.on("error", () => undefined);
      // A follower that goes away (the user closed the terminal) stops the view, not the process.
      conn.on("close", () => unfollow());
      if (skipped > 0) conn.write(frame(STDERR, Buffer.from(`… [toolhost: ${skipped} bytes of output were not shown] …\n`)));
      for (const data of pending) conn.write(data);
      pending = [];
      if (ended) conn.end();
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, resolve);
    });
    server.unref();
    const script = [
      "#!/bin/sh",
      "# toolhost: shows the output of a background process toolhost runs (its arguments are that process's command line, for display).",
      `exec ${[process.execPath, "-e", FOLLOWER, socketPath].map(quote).join(" ")}`,
      "",
    ].join("\n");
    await writeFile(launcher, script, { mode: 0o700, flag: "wx" });
    await chmod(launcher, 0o700);
    const info = feed.info();
    const terminal = await client.createTerminal({
      sessionId,
      command: launcher,
      args: [shellPath(), "-c", info.command],
      cwd: info.cwd,
      env: [],
      outputByteLimit: 2 * RING_BYTES,
    });
    emit?.({ type: "terminal", terminalId: terminal.id });
    // Once the process has ended: the follower prints the end and exits (bounded), then the terminal goes.
    const release = async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        terminal.waitForExit().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, RELEASE_AFTER_MS).unref())),
      ]);
      clearTimeout(timer);
      removeDir();
      await terminal.release().catch(() => undefined);
    };
    if (ended) void release();
    else onEnd = () => void release();
  } catch (err) {
    unfollow();
    removeDir();
    throw err;
  }
}
