import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { AgentSession, headlessFrontEnd, type SessionFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import type { ApprovalAnswer, ApprovalRequest } from "../../src/policy/authorizer.js";
import { sandboxNetworkStatus } from "../../src/runtime/sandbox/proxy.js";
import { SessionSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { SANDBOX_NOTICE, type BashResult } from "../../src/tools/bash.js";
import { useAgentEnv } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

// The sandbox as a session runs it: on by default (bubblewrap through the real AgentSession and
// LocalShell), "off" in the user's config, no sandbox at all, and escalation of one call.

const status = await sandboxStatus("agent/sandbox.test.ts");

const t = useAgentEnv({ files: { "a.txt": "a\n" } });
/** Outside the workspace and outside /tmp (which the sandbox replaces). */
let outside: string;
let victim: string;
const sessions: AgentSession[] = [];

beforeEach(async () => {
  outside = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-session-sandbox-"));
  t.defer(async () => {
    for (const s of sessions.splice(0)) await s.close();
    await fsp.rm(outside, { recursive: true, force: true });
  });
  victim = path.join(outside, "victim.txt");
  await fsp.writeFile(victim, "original\n");
  delete process.env.TOOLHOST_SANDBOX;
});

/** A front end that records every approval request and answers with `answer`. */
function approving(answer: ApprovalAnswer | (() => ApprovalAnswer)) {
  const asked: ApprovalRequest[] = [];
  const frontEnd: SessionFrontEnd = {
    ...headlessFrontEnd(),
    approve: async (request) => {
      asked.push(request);
      return typeof answer === "function" ? answer() : answer;
    },
  };
  return { asked, frontEnd };
}

async function session(options: { frontEnd?: SessionFrontEnd; mode?: string; sandbox?: SessionSandbox } = {}) {
  const s = new AgentSession({
    tools: await SessionTools.create(resolveWorkspace(t.ws)),
    frontEnd: options.frontEnd ?? headlessFrontEnd(),
    ...(options.sandbox ? { backends: { sandbox: options.sandbox } } : {}),
  });
  s.setMode(options.mode ?? "full");
  sessions.push(s);
  return s;
}

const call = (s: AgentSession, toolId: string, args: unknown) => s.callTool(toolId, args, new AbortController().signal);

function bashData(envelope: Envelope): BashResult {
  if (envelope.type !== "output") throw new Error(`expected output, got ${envelope.metadata.error_code}: ${envelope.error_text}`);
  return envelope.data as BashResult;
}

const writeVictim = () => `echo changed > ${victim}`;

/** A sandbox where none can run, as a machine without bwrap reports it. */
const noBwrap = (value: "on" | "off" = "on") =>
  new SessionSandbox({
    setting: { value, source: value === "off" ? "TOOLHOST_SANDBOX" : "default" },
    probe: async () => ({ available: false, reason: "bubblewrap (bwrap) is not installed: apt-get install bubblewrap" }),
  });

describe.skipIf(!status.available)("on by default", () => {
  it("a write outside the workspace by bash in full mode fails and changes nothing; the result says it was the sandbox", async () => {
    const s = await session();
    const result = bashData(await call(s, "bash", { command: writeVictim() }));
    expect(result.exit_code).not.toBe(0);
    expect(result.stderr).toMatch(/Read-only file system/);
    expect(result.notice).toBe(SANDBOX_NOTICE);
    expect(result).not.toHaveProperty("sandboxed");
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
    // Inside the workspace it writes as before, with no notice.
    const inside = bashData(await call(s, "bash", { command: "echo b > b.txt && cat a.txt" }));
    expect(inside).toMatchObject({ exit_code: 0, stdout: "a\n" });
    expect(inside.notice).toBeUndefined();
    expect(await fsp.readFile(path.join(t.ws, "b.txt"), "utf8")).toBe("b\n");
  });

  it('"sandbox": "off" in the user config runs commands unsandboxed, without a question', async () => {
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ sandbox: "off" }));
    const { asked, frontEnd } = approving("reject_once");
    const s = await session({ frontEnd });
    expect(bashData(await call(s, "bash", { command: writeVictim() })).exit_code).toBe(0);
    expect(await fsp.readFile(victim, "utf8")).toBe("changed\n");
    expect(asked).toEqual([]);
  });

  it("TOOLHOST_SANDBOX=on wins over the file's off; a project's config cannot switch it off", async () => {
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ sandbox: "off" }));
    process.env.TOOLHOST_SANDBOX = "on";
    expect(bashData(await call(await session(), "bash", { command: writeVictim() })).exit_code).not.toBe(0);
    delete process.env.TOOLHOST_SANDBOX;
    await fsp.rm(path.join(t.home, "config.json"));
    await fsp.mkdir(path.join(t.ws, ".toolhost"));
    await fsp.writeFile(path.join(t.ws, ".toolhost/config.json"), JSON.stringify({ sandbox: "off" }));
    expect(bashData(await call(await session(), "bash", { command: writeVictim() })).exit_code).not.toBe(0);
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
  });

  it.skipIf(!sandboxNetworkStatus().available)(
    "a net.fetch allow rule gives sandboxed commands that host, through the proxy, and no other",
    async () => {
      const curl = (host: string) => `curl -s -m 5 -o /dev/null -w '%{http_code}' http://${host}/`;
      // No rule: no network at all (curl cannot even resolve the name).
      expect(bashData(await call(await session(), "bash", { command: curl("other.test") })).stdout).toBe("000");
      const rules = [{ permission: "net.fetch", pattern: "allowed.test", action: "allow" }];
      await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ permissions: rules }));
      const s = await session();
      // Another host: the session's proxy refuses it. The allowed one gets past the proxy's
      // check (and fails to resolve, .test being reserved: 502 from the proxy, not 403).
      expect(bashData(await call(s, "bash", { command: curl("other.test") })).stdout).toBe("403");
      expect(bashData(await call(s, "bash", { command: curl("allowed.test") })).stdout).toBe("502");
    },
  );
});

describe.skipIf(!status.available)("escalation: one call outside the sandbox", () => {
  const escalated = () => ({ command: writeVictim(), sandbox: "off", justification: "Write the victim file outside the workspace?" });

  it("asks even in full mode with the exact command and why; a reject runs nothing", async () => {
    const { asked, frontEnd } = approving("reject_once");
    const s = await session({ frontEnd });
    const envelope = await call(s, "bash", escalated());
    expect(envelope).toMatchObject({ type: "error", metadata: { error_code: "rejected" } });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.why).toBe("runs outside the sandbox");
    expect(asked[0]!.call.args).toMatchObject({ command: writeVictim(), sandbox: "off" });
    expect(asked[0]!.call.targets.unsandboxed).toBe(true);
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
  });

  it("runs outside only when approved, for that call only; an always answer does not cover the next escalation", async () => {
    const { asked, frontEnd } = approving("allow_always");
    const s = await session({ frontEnd });
    expect(bashData(await call(s, "bash", escalated())).exit_code).toBe(0);
    expect(await fsp.readFile(victim, "utf8")).toBe("changed\n");
    // The next call, not escalated, is back in the sandbox.
    await fsp.writeFile(victim, "original\n");
    expect(bashData(await call(s, "bash", { command: writeVictim() })).exit_code).not.toBe(0);
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
    // Escalating again asks again.
    expect(bashData(await call(s, "bash", escalated())).exit_code).toBe(0);
    expect(asked).toHaveLength(2);
  });

  it("headless: refused, nothing runs", async () => {
    const s = await session();
    const envelope = await call(s, "bash", escalated());
    expect(envelope).toMatchObject({ type: "error", metadata: { error_code: "permission_denied" } });
    expect(envelope.type === "error" && envelope.error_text).toMatch(/asked to run outside the sandbox.*nobody can answer here/);
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
  });

  it("needs a justification", async () => {
    const envelope = await call(await session(), "bash", { command: "true", sandbox: "off" });
    expect(envelope).toMatchObject({ type: "error", metadata: { error_code: "invalid_arguments" } });
    expect(envelope.type === "error" && envelope.error_text).toMatch(/justification/);
  });
});

describe("where no sandbox can run", () => {
  it("headless, a call that runs commands is refused even in full mode, naming what to install; nothing runs", async () => {
    const s = await session({ sandbox: noBwrap() });
    const envelope = await call(s, "bash", { command: "touch ran.txt" });
    expect(envelope).toMatchObject({ type: "error", metadata: { error_code: "permission_denied" } });
    expect(envelope.type === "error" && envelope.error_text).toMatch(/no sandbox can run here: .*apt-get install bubblewrap/);
    await expect(fsp.stat(path.join(t.ws, "ran.txt"))).rejects.toThrow();
    // A call that runs no command is not the sandbox's business.
    expect((await call(s, "read", { path: "a.txt" })).type).toBe("output");
  });

  it("with someone to ask, asks even in full mode and runs the approved command unsandboxed", async () => {
    const { asked, frontEnd } = approving("allow_once");
    const s = await session({ frontEnd, sandbox: noBwrap() });
    expect(bashData(await call(s, "bash", { command: "touch ran.txt" })).exit_code).toBe(0);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.why).toMatch(/^no sandbox can run here: bubblewrap \(bwrap\) is not installed/);
    await fsp.stat(path.join(t.ws, "ran.txt"));
  });

  it('"off" runs commands without asking', async () => {
    const { asked, frontEnd } = approving("reject_once");
    const s = await session({ frontEnd, sandbox: noBwrap("off") });
    expect(bashData(await call(s, "bash", { command: "touch ran.txt" })).exit_code).toBe(0);
    expect(asked).toEqual([]);
  });
});
