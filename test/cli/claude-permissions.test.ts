import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";

// Claude Code's `permissions.allow/deny/ask` (issue 34 §4), as a user runs toolhost: the user's
// ~/.claude/settings.json read as rules with their source, what toolhost does not use named once on
// stderr, a project's .claude files read only once it is trusted (a stale one: its deny and ask
// rules, never an allow), and a broken file failing closed.

const claudeUser = {
  model: "claude-opus",
  env: { A: "1" },
  permissions: {
    allow: ["Bash(git status:*)", "WebFetch(domain:example.com)", "mcp__github"],
    deny: ["Bash(rm:*)", "Read(~/.ssh/**)", "NotebookEdit", "WebFetch(example.org)"],
    ask: ["Write(//etc/**)"],
    defaultMode: "acceptEdits",
  },
};

const t = useAgentEnv({
  files: {
    "a.txt": "a\n",
    ".claude/settings.json": JSON.stringify({ permissions: { allow: ["Bash(make:*)"], deny: ["Bash(curl:*)"] } }),
    ".claude/settings.local.json": JSON.stringify({ permissions: { allow: ["Edit(src/**)"] } }),
  },
  userHome: { ".claude/settings.json": JSON.stringify(claudeUser) },
});

const toolhost = (args: string[]) => runCli(args, { cwd: t.ws, env: t.env() });
const explain = async (tool: string, args: unknown, mode = "ask") =>
  (await toolhost(["policy", "explain", tool, JSON.stringify(args), "--mode", mode])).stdout;

describe("Claude Code's permission rules", () => {
  it(
    "are read from its settings files, listed with their source, trusted like the project, and fail closed",
    { timeout: 90_000 },
    async () => {
      const userFile = path.join(t.userHome, ".claude/settings.json");
      const list = await toolhost(["policy", "list"]);
      // The unmappable deny fails closed: a problem (exit 1), and web_fetch asks.
      expect(list.code).toBe(1);
      for (const line of [
        `- user rule in ${userFile}: allow bash "git status" (Claude Code: Bash(git status:*))`,
        `- user rule in ${userFile}: allow bash "git status *" (Claude Code: Bash(git status:*))`,
        `- user rule in ${userFile}: allow web_fetch "example.com" (Claude Code: WebFetch(domain:example.com))`,
        `- user rule in ${userFile}: allow mcp__github__* "*" (Claude Code: mcp__github)`,
        `- user rule in ${userFile}: deny bash "rm*" (Claude Code: Bash(rm:*))`,
        `- user rule in ${userFile}: deny fs.read "~/.ssh/**" (Claude Code: Read(~/.ssh/**))`,
        `- user rule in ${userFile}: ask write "/etc/**" (Claude Code: Write(//etc/**))`,
        `- user rule in ${userFile}: ask web_fetch "*" (fail closed: permissions.deny[3] "WebFetch(example.org)" could not be read)`,
      ])
        expect(list.stdout).toContain(line);
      expect(list.stdout).toContain(
        `Left out:\n- ${userFile}: permissions.deny[3] "WebFetch(example.org)": WebFetch takes domain:HOST; until it is fixed every web_fetch call asks (fail closed)`,
      );
      // An untrusted project's rules are not read.
      expect(list.stdout).not.toContain(".claude/settings.local.json");
      expect(list.stdout).not.toContain("make");
      // What toolhost does not use is named, once.
      expect(list.stderr.match(/"model", "env", "permissions.defaultMode": Claude Code settings toolhost does not use/g)).toHaveLength(1);
      expect(list.stderr).toContain(`${userFile}: permissions.deny[2] "NotebookEdit": toolhost has no such tool (not used)`);
      const doctor = await toolhost(["doctor"]);
      expect(doctor.stdout).toMatch(/Claude Code settings toolhost does not use:\n.*"NotebookEdit"/);

      // The rules decide as toolhost's own do, in every spelling.
      expect(await explain("bash", { command: "sudo rm -rf build" }, "full")).toMatch(/^bash in full mode: deny$/m);
      expect(await explain("bash", { command: "git status --short" })).toMatch(/^bash in ask mode: allow$/m);
      expect(await explain("bash", { command: "git statusx" })).toMatch(/^bash in ask mode: asks/m);

      // Trusted, the project's .claude files hold too: settings.json's and settings.local.json's.
      expect((await toolhost(["trust", t.ws])).code).toBe(0);
      const trusted = (await toolhost(["policy", "list"])).stdout;
      expect(trusted).toContain(
        `- project rule in ${path.join(t.ws, ".claude/settings.json")}: allow bash "make" (Claude Code: Bash(make:*))`,
      );
      expect(trusted).toContain(
        `- project rule in ${path.join(t.ws, ".claude/settings.json")}: deny bash "curl*" (Claude Code: Bash(curl:*))`,
      );
      expect(trusted).toContain(
        `- project rule in ${path.join(t.ws, ".claude/settings.local.json")}: allow fs.write "src/**" (Claude Code: Edit(src/**))`,
      );
      expect(await explain("write", { path: "src/new.ts", content: "x\n" })).toMatch(/^write in ask mode: allow$/m);

      // Changed since it was trusted (stale): its deny still holds, its allow never.
      await fsp.writeFile(
        path.join(t.ws, ".claude/settings.json"),
        JSON.stringify({ permissions: { allow: ["Bash(make:*)", "Bash(git push:*)"], deny: ["Bash(curl:*)"] } }),
      );
      const stale = (await toolhost(["policy", "list"])).stdout;
      expect(stale).toContain('deny bash "curl*" (Claude Code: Bash(curl:*))');
      expect(stale).not.toContain('allow bash "make"');
      expect(stale).not.toContain("git push");
      expect(stale).not.toContain("src/**");
      expect(await explain("bash", { command: "curl -s x.org" }, "full")).toMatch(/^bash in full mode: deny$/m);

      // A broken file fails closed: every call asks, even in full mode, and the list says why.
      await fsp.writeFile(userFile, "{ not json");
      const broken = await toolhost(["policy", "list"]);
      expect(broken.code).toBe(1);
      expect(broken.stdout).toMatch(/- user rule in .*\.claude\/settings\.json: ask \* "\*" \(fail closed: the file is not valid JSON/);
      expect(await explain("read", { path: "a.txt" }, "full")).toMatch(/^read in full mode: asks/m);
    },
  );
});
