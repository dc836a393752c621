import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { useAgentEnv } from "../helpers.js";
import { runCli } from "./harness.js";

// `toolhost hooks list` and doctor's hook lines, from the built CLI with a temporary
// TOOLHOST_HOME and HOME: the user's config, ~/.claude, and an untrusted project's files.

const t = useAgentEnv({
  shared: true,
  files: {
    ".claude/settings.json": JSON.stringify({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./guard.sh" }] }] },
    }),
    ".toolhost/config.json": JSON.stringify({ hooks: { stop: [{ command: "echo done" }] } }),
  },
  home: {
    "config.json": JSON.stringify({
      model: "openai/gpt-4o",
      providers: { openai: { apiKey: "sk-test" } },
      hooks: {
        tool_call: [
          { matcher: "mcp__github__*", command: "~/bin/audit", timeout: 3, failClosed: true },
          { matcher: "kind:nope", command: "x" },
        ],
      },
    }),
  },
  userHome: {
    ".claude/settings.json": JSON.stringify({
      hooks: {
        PostToolUse: [{ matcher: "Write|Edit", hooks: [{ type: "command", command: "prettier --write" }] }],
        Notification: [{ hooks: [{ type: "command", command: "notify-send hi" }] }],
      },
    }),
  },
});
const toolhost = (args: string[]) => runCli(args, { env: t.env() });

describe("toolhost hooks list", () => {
  it("lists each hook in order with its event, matcher and file; bad entries exit 1; an untrusted project's wait", async () => {
    const json = await toolhost(["hooks", "list", "--cwd", t.ws, "--json"]);
    expect(json.code).toBe(1);
    const out = JSON.parse(json.stdout) as {
      trusted: boolean;
      hooks: {
        event: string;
        written: string;
        level: string;
        matcher: string | null;
        handler: { command?: string };
        file: string;
        timeoutMs: number;
        failClosed: boolean;
      }[];
      problems: { file: string; message: string }[];
      skipped: { file: string; message: string }[];
      waiting: { file: string; count: number }[];
    };
    expect(out.trusted).toBe(false);
    expect(out.hooks.map((h) => [h.level, h.event, h.written, h.matcher, h.handler.command, h.timeoutMs, h.failClosed, h.file])).toEqual([
      ["user", "tool_call", "tool_call", "mcp__github__*", "~/bin/audit", 3000, true, path.join(t.home, "config.json")],
      [
        "user",
        "tool_result",
        "PostToolUse",
        "Write|Edit",
        "prettier --write",
        10000,
        false,
        path.join(t.userHome, ".claude/settings.json"),
      ],
    ]);
    expect(out.problems).toEqual([
      {
        file: path.join(t.home, "config.json"),
        message: expect.stringMatching(/^hooks\.tool_call\[1\]: matcher "kind:nope": nope is not a tool kind/),
      },
    ]);
    expect(out.skipped).toEqual([
      {
        file: path.join(t.userHome, ".claude/settings.json"),
        message: "hooks.Notification: toolhost has no such event (its hooks are not run)",
      },
    ]);
    expect(out.waiting).toEqual([
      { file: path.join(t.ws, ".toolhost/config.json"), count: 1 },
      { file: path.join(t.ws, ".claude/settings.json"), count: 1 },
    ]);

    const text = await toolhost(["hooks", "--cwd", t.ws]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      "user     tool_result (PostToolUse)  matcher Write|Edit  [10 s]\n  prettier --write\n  PostToolUse[0].hooks[0] in ",
    );
    expect(text.stdout).toContain("user     tool_call  matcher mcp__github__*  [3 s, failClosed]\n  ~/bin/audit\n");
    expect(text.stdout).toMatch(
      /not run, the project is not trusted \(`toolhost trust` lets them run\):\n {2}1 hook in .*\.toolhost\/config\.json\n {2}1 hook in .*\.claude\/settings\.json/,
    );

    // Trusted, the project's hooks run after the user's.
    expect((await toolhost(["trust", t.ws])).code).toBe(0);
    const trusted = JSON.parse((await toolhost(["hooks", "list", "--cwd", t.ws, "--json"])).stdout) as typeof out;
    expect(trusted.hooks.map((h) => `${h.level} ${h.written}`)).toEqual([
      "user tool_call",
      "user PostToolUse",
      "project stop",
      "project PreToolUse",
    ]);
    expect(trusted.waiting).toEqual([]);
    await fsp.rm(path.join(t.home, "trusted.json"));
  });

  it("doctor counts the hooks and names the bad entry among its problems", async () => {
    const doctor = await toolhost(["doctor", "--cwd", t.ws]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/^hooks: {3}2 \(tool_call, tool_result; `toolhost hooks list` lists them\)$/m);
    expect(doctor.stdout).toMatch(/config\.json: hooks\.tool_call\[1\]: matcher "kind:nope": nope is not a tool kind/);
    expect(doctor.stdout).toMatch(
      /hooks toolhost does not run:\n {2}.*\.claude\/settings\.json: hooks\.Notification: toolhost has no such event/,
    );
    expect(doctor.stdout).toMatch(/skipped, project not trusted[^\n]*\n(?: {2}.*\n)* {2}1 hook in .*\.claude\/settings\.json/);
  });
});
