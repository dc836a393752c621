import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import type { FakeOpenAI } from "./fixtures/fake-openai.mjs";
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

/** The built CLI (`npm test` builds it before vitest runs). */
/** Writes `value` (a string as it is, else as JSON) to `file`, making its folders; returns the file. */
export async function writeDeep(file: string, value: unknown): Promise<string> {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, typeof value === "string" ? value : JSON.stringify(value, null, 2));
  return file;
}

export const CLI_PATH = fileURLToPath(new URL("../dist/cli.js", import.meta.url));

/**
 * Settings of the developer's machine that must not reach a test's agent: a real model and its
 * keys, their own ~/.toolhost, session, profile and web search settings.
 */
export const MACHINE_ENV = [
  "TOOLHOST_MODEL",
  "TOOLHOST_BASE_URL",
  "TOOLHOST_API_KEY",
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "OLLAMA_HOST",
  "TOOLHOST_HOME",
  "TOOLHOST_SESSIONS",
  "TOOLHOST_CONTEXT_WINDOW",
  "TOOLHOST_PROFILE",
  "BRAVE_API_KEY",
  "TAVILY_API_KEY",
  "EXA_API_KEY",
] as const;

/** This process's environment without the machine's settings (MACHINE_ENV), for a spawned agent. */
export function cleanEnv(): Record<string, string | undefined> {
  const env = { ...process.env };
  for (const name of MACHINE_ENV) delete env[name];
  return env;
}

type Files = Record<string, string | Uint8Array>;

export interface AgentEnvOptions {
  /** The workspace's files (relative path → content). */
  files?: Files;
  /** Files of the temporary TOOLHOST_HOME (config.json, profiles/…, skills/…). */
  home?: Files;
  /** A temporary HOME too (the user's ~/.claude, ~/.ssh), with these files. */
  userHome?: Files;
  /** One set-up for all the tests of the file or describe block (beforeAll), not one per test. */
  shared?: boolean;
}

/** What useAgentEnv() made for the current test (or block, when shared). */
export interface AgentEnv {
  /** The workspace, a real path. */
  readonly ws: string;
  /** The temporary TOOLHOST_HOME. */
  readonly home: string;
  /** The temporary HOME; only with the `userHome` option. */
  readonly userHome: string;
  /** The test's local model server, when it starts one: closed and unset after the test. */
  fake?: FakeOpenAI;
  /** The environment for a child process: process.env as set up (TOOLHOST_HOME, no machine settings), plus `extra`. */
  env(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** Another temporary folder with `files`, removed with the workspace. */
  dir(files?: Files): Promise<string>;
  /** Closes `server` (another fake: search, anthropic) after the test (or the block, when made outside a test); returns it. */
  serve<T extends { close(): unknown }>(server: T): T;
  /** Runs `cleanup` after the test (or the block) before the servers close and the folders go; the last deferred runs first. */
  defer(cleanup: () => unknown): void;
}

interface Scope {
  cleanups: (() => unknown)[];
  servers: { close(): unknown }[];
  dirs: string[];
  env?: NodeJS.ProcessEnv;
}

/**
 * A test agent's surroundings: a temporary workspace with `files` and a temporary TOOLHOST_HOME
 * (set in process.env, so in-process sessions and `env()`'s children see it), the machine's model
 * and key variables cleared (MACHINE_ENV). Afterwards the deferred cleanups run, `fake` and the
 * servers are closed, the folders removed and process.env is restored as it was. Per test, or
 * once for the file or describe block with `shared`.
 */
export function useAgentEnv(options: AgentEnvOptions = {}): AgentEnv {
  let made: { ws: string; home: string; userHome?: string } | undefined;
  const outer: Scope = { cleanups: [], servers: [], dirs: [] };
  let inner: Scope | undefined;
  const scope = () => inner ?? outer;

  const setUp = async (into: Scope) => {
    into.env = { ...process.env };
    const ws = await tempDir(options.files);
    const home = await tempDir(options.home);
    const userHome = options.userHome ? await tempDir(options.userHome) : undefined;
    into.dirs.push(ws, home, ...(userHome ? [userHome] : []));
    for (const name of MACHINE_ENV) delete process.env[name];
    process.env.TOOLHOST_HOME = home;
    if (userHome) process.env.HOME = userHome;
    made = { ws, home, userHome };
  };
  const tearDown = async (from: Scope) => {
    // Everything is undone even when a cleanup fails (an agent that exits non-zero); then the first failure is thrown.
    const failures: unknown[] = [];
    const attempt = async (step: () => unknown) => {
      try {
        await step();
      } catch (err) {
        failures.push(err);
      }
    };
    for (const cleanup of from.cleanups.splice(0).reverse()) await attempt(cleanup);
    const fake = handle.fake;
    handle.fake = undefined;
    if (fake) from.servers.push(fake);
    await Promise.all(from.servers.splice(0).map((server) => attempt(() => server.close())));
    await Promise.all(from.dirs.splice(0).map((dir) => attempt(() => fsp.rm(dir, { recursive: true, force: true }))));
    if (from.env) restoreEnv(from.env);
    from.env = undefined;
    if (failures.length > 0) throw failures[0];
  };

  if (options.shared) {
    beforeAll(() => setUp(outer));
    afterAll(async () => {
      await tearDown(outer);
      made = undefined;
    });
  }
  beforeEach(async () => {
    inner = { cleanups: [], servers: [], dirs: [] };
    // Shared: what a test sets in process.env is undone after it all the same.
    if (options.shared) inner.env = { ...process.env };
    else await setUp(inner);
  });
  afterEach(async () => {
    const done = inner!;
    inner = undefined;
    await tearDown(done);
    if (!options.shared) made = undefined;
  });

  const current = () => {
    if (!made) throw new Error("useAgentEnv(): no test is running (use it inside a test or a hook)");
    return made;
  };
  const handle: AgentEnv = {
    get ws() {
      return current().ws;
    },
    get home() {
      return current().home;
    },
    get userHome() {
      const { userHome } = current();
      if (!userHome) throw new Error("useAgentEnv(): pass `userHome` for a temporary HOME");
      return userHome;
    },
    env: (extra = {}) => ({ ...process.env, ...extra }),
    async dir(files) {
      const dir = await tempDir(files);
      scope().dirs.push(dir);
      return dir;
    },
    serve(server) {
      scope().servers.push(server);
      return server;
    },
    defer: (cleanup) => void scope().cleanups.push(cleanup),
  };
  return handle;
}

/** Puts process.env back to `saved`, in place (the object children and the code under test read). */
function restoreEnv(saved: NodeJS.ProcessEnv): void {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
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

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `argv` to its end and collects its output; `stdin`, when given, is written and closed (else there is none). */
export function runToEnd(argv: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; stdin?: string }): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  });
}

/** Waits until `predicate` holds (polled), or fails after `timeoutMs`. */
export async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  while (!(await predicate())) {
    if (Date.now() - start > timeoutMs) throw new Error("timed out waiting for a condition");
    await new Promise((r) => setTimeout(r, 20));
  }
}
