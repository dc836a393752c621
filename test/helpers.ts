import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect } from "vitest";
import type { ToolEvent } from "../src/tool/context.js";
import type { AnyTool } from "../src/tool/define.js";
import type { Envelope, OutputEnvelope } from "../src/tool/envelope.js";
import { ToolError } from "../src/tool/errors.js";
import { invoke, type InvokeOptions } from "../src/host/invoke.js";
import { ToolRegistry } from "../src/host/registry.js";
import { MemoryFs } from "../src/runtime/fs/memory.js";
import { RuntimeSession } from "../src/runtime/session.js";

/** A fresh temporary directory with the given files (relative path → content). */
export async function tempDir(files: Record<string, string | Uint8Array> = {}): Promise<string> {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-test-")));
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    await fsp.mkdir(path.dirname(abs), { recursive: true });
    await fsp.writeFile(abs, content);
  }
  return dir;
}

/** A workspace on one backend, with a way to read files back for assertions. */
export interface Workspace {
  backend: "node" | "memory";
  root: string;
  session: RuntimeSession;
  /** Current content of a workspace file, or undefined when it does not exist. */
  text(rel: string): Promise<string | undefined>;
  bytes(rel: string): Promise<Uint8Array | undefined>;
  cleanup(): Promise<void>;
}

export async function diskWorkspace(files: Record<string, string | Uint8Array> = {}): Promise<Workspace> {
  const root = await tempDir(files);
  const session = new RuntimeSession({ workspace: root });
  return {
    backend: "node",
    root,
    session,
    text: async (rel) => fsp.readFile(path.join(root, rel), "utf8").catch(() => undefined),
    bytes: async (rel) => fsp.readFile(path.join(root, rel)).catch(() => undefined),
    cleanup: async () => {
      await session.close();
      await fsp.rm(root, { recursive: true, force: true });
    },
  };
}

export async function memoryWorkspace(files: Record<string, string | Uint8Array> = {}): Promise<Workspace> {
  const root = "/ws";
  const mem = new MemoryFs(Object.fromEntries(Object.entries(files).map(([rel, c]) => [path.posix.join(root, rel), c])));
  mem.put(path.posix.join(root, ".keep"), "");
  const session = new RuntimeSession({ workspace: root, fs: mem });
  return {
    backend: "memory",
    root,
    session,
    text: async (rel) => mem.text(path.posix.join(root, rel)),
    bytes: async (rel) => mem.readFile(path.posix.join(root, rel)).catch(() => undefined),
    cleanup: () => session.close(),
  };
}

/** The per-test workspace fixture of useWorkspace(). */
export interface WorkspaceFixture {
  /** Makes `made` the current test's workspace, removed after the test, and returns it. */
  use(made: Workspace | Promise<Workspace>): Promise<Workspace>;
  /** The current test's workspace; throws when the test has made none. */
  readonly current: Workspace;
  /** Runs `cleanup` after the current test too (a directory made outside the workspace). */
  defer(cleanup: () => Promise<unknown>): void;
}

/**
 * Registers an afterEach that removes each test's workspace and whatever else the test
 * deferred. Call it at the top of a test file (or of a describe block).
 */
export function useWorkspace(): WorkspaceFixture {
  let current: Workspace | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    const done = current;
    current = undefined;
    await done?.cleanup();
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
  });
  return {
    async use(made) {
      // A second workspace in one test: the first is removed after the test too.
      const earlier = current;
      if (earlier) cleanups.push(() => earlier.cleanup());
      current = await made;
      return current;
    },
    get current() {
      if (!current) throw new Error("This test has made no workspace: call use() first");
      return current;
    },
    defer: (cleanup) => void cleanups.push(cleanup),
  };
}

/** Both fs backends, for `describe.each(BACKENDS)`. */
export const BACKENDS = [
  { name: "node", make: diskWorkspace },
  { name: "memory", make: memoryWorkspace },
] as const;

export interface CallResult {
  envelope: Envelope;
  events: ToolEvent[];
}

/** Calls one tool through the real invoke pipeline (validation, scope, envelope, truncation). */
export async function call(
  tool: AnyTool,
  args: unknown,
  session: RuntimeSession,
  options: Partial<InvokeOptions> = {},
): Promise<CallResult> {
  const registry = new ToolRegistry();
  registry.register(tool, "builtin");
  const events: ToolEvent[] = [];
  const envelope = await invoke(registry, tool.id, args, {
    session,
    emit: (e) => events.push(e),
    ...options,
  });
  return { envelope, events };
}

/** Asserts an output envelope and returns its data. */
export function output<T = Record<string, unknown>>(envelope: Envelope): T {
  if (envelope.type !== "output") {
    throw new Error(`Expected output, got error ${envelope.metadata.error_code}: ${envelope.error_text}`);
  }
  return (envelope as OutputEnvelope<T>).data;
}

/** Asserts an error envelope with the given code and returns its text. */
export function errorOf(envelope: Envelope, code?: string): string {
  if (envelope.type !== "error") throw new Error(`Expected an error, got output: ${JSON.stringify(envelope.data).slice(0, 500)}`);
  if (code !== undefined && envelope.metadata.error_code !== code) {
    throw new Error(`Expected error_code ${code}, got ${envelope.metadata.error_code}: ${envelope.error_text}`);
  }
  return envelope.error_text;
}

/** The ToolError a promise rejects with; fails the test when it resolves or throws anything else. */
export async function toolErrorOf(p: Promise<unknown>): Promise<ToolError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

/** A unique `sleep` argument, so a test can look for its own processes only. */
export const sleepMarker = () => `100.${Math.floor(1e6 + Math.random() * 9e6)}`;

/** Live processes whose command line contains `needle` (zombies have an empty cmdline). */
export async function survivors(needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await fsp.readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = (await fsp.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).replace(/\0/g, " ");
    if (cmd.includes(needle)) found.push(`${pid}: ${cmd}`);
  }
  return found;
}

/** Bytes as hex, for exact byte assertions (BOM, CRLF). */
export const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString("hex");
