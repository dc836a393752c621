import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers.js";

const run = promisify(execFile);
const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));

let base: string;
let ws: string;
let home: string;

async function toolhost(args: string[]) {
  // A fresh TOOLHOST_HOME and HOME: a developer's own skills must not leak in.
  const env = { ...process.env, TOOLHOST_HOME: home, HOME: path.join(base, "user") };
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nBody of ${name}.\n`;

beforeAll(async () => {
  base = await tempDir({
    "home/skills/deploy/SKILL.md": skill("deploy", "Deploy the service. Use when asked to ship."),
    "home/skills/broken/SKILL.md": "---\nname: broken\ndescription: [oops\n---\n",
    "user/.claude/skills/deploy/SKILL.md": skill("deploy", "An older deploy"),
    "user/.claude/skills/lint/SKILL.md": skill("lint", "Lint the code"),
    "ws/.toolhost/skills/project-only/SKILL.md": skill("project-only", "Only for a trusted project"),
  });
  ws = path.join(base, "ws");
  home = path.join(base, "home");
});
afterAll(async () => {
  await fsp.rm(base, { recursive: true, force: true });
});

describe("toolhost skills", () => {
  it("lists skills with their sources, shadowing and problems; an untrusted project's are left out", async () => {
    const { code, stdout } = await toolhost(["skills", "--cwd", ws, "--json"]);
    expect(code).toBe(0);
    const out = JSON.parse(stdout) as {
      trusted: boolean;
      skills: { name: string; file: string; origin: string }[];
      shadowed: { name: string; file: string; winner: string }[];
      problems: { file: string; message: string }[];
      folders: { dir: string; status: string }[];
    };
    expect(out.trusted).toBe(false);
    expect(out.skills.map((s) => [s.name, s.origin, s.file])).toEqual([
      ["deploy", "user", path.join(home, "skills/deploy/SKILL.md")],
      ["lint", "user", path.join(base, "user/.claude/skills/lint/SKILL.md")],
    ]);
    expect(out.shadowed).toEqual([
      {
        name: "deploy",
        file: path.join(base, "user/.claude/skills/deploy/SKILL.md"),
        winner: path.join(home, "skills/deploy/SKILL.md"),
      },
    ]);
    expect(out.problems).toEqual([{ file: path.join(home, "skills/broken/SKILL.md"), message: expect.stringMatching(/not valid YAML/) }]);
    expect(out.folders).toContainEqual(expect.objectContaining({ dir: path.join(ws, ".toolhost/skills"), status: "untrusted" }));

    const text = await toolhost(["skills", "--cwd", ws]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("deploy  Deploy the service. Use when asked to ship.");
    expect(text.stdout).toContain("shadowed (the first skill of a name wins):");
    expect(text.stdout).toContain("problems (these skills are left out):");
    expect(text.stdout).toContain("`toolhost trust` lets them load");
  });

  it("reads a trusted project's skills", async () => {
    expect((await toolhost(["trust", ws])).code).toBe(0);
    const { stdout } = await toolhost(["skills", "--cwd", ws, "--json"]);
    const out = JSON.parse(stdout) as { trusted: boolean; skills: { name: string; origin: string }[] };
    expect(out.trusted).toBe(true);
    expect(out.skills.map((s) => [s.name, s.origin])).toContainEqual(["project-only", "project"]);
  });

  it("toolhost doctor counts a broken SKILL.md as a problem and notes a shadowed skill", async () => {
    const { code, stdout } = await toolhost(["doctor", "--cwd", ws]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^skills: {2}\d+/m);
    expect(stdout).toContain(`${path.join(home, "skills/broken/SKILL.md")}: the front matter is not valid YAML`);
    expect(stdout).toContain(`skill deploy: ${path.join(base, "user/.claude/skills/deploy/SKILL.md")} lost to`);
  });

  it("toolhost tools lists skill with kind read", async () => {
    const { stdout } = await toolhost(["tools", "--cwd", ws, "--json"]);
    const { tools } = JSON.parse(stdout) as { tools: { id: string; kind: string }[] };
    expect(tools).toContainEqual(expect.objectContaining({ id: "skill", kind: "read" }));
  });
});
