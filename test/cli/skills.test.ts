import path from "node:path";
import { describe, expect, it } from "vitest";
import { useAgentEnv } from "../helpers.js";
import { runCli } from "./harness.js";

const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nBody of ${name}.\n`;

// A fresh TOOLHOST_HOME and HOME: a developer's own skills must not leak in.
const t = useAgentEnv({
  shared: true,
  files: { ".toolhost/skills/project-only/SKILL.md": skill("project-only", "Only for a trusted project") },
  home: {
    "skills/deploy/SKILL.md": skill("deploy", "Deploy the service. Use when asked to ship."),
    "skills/broken/SKILL.md": "---\nname: broken\ndescription: [oops\n---\n",
  },
  userHome: {
    ".claude/skills/deploy/SKILL.md": skill("deploy", "An older deploy"),
    ".claude/skills/lint/SKILL.md": skill("lint", "Lint the code"),
  },
});
const toolhost = (args: string[]) => runCli(args, { env: t.env() });

describe("toolhost skills", () => {
  it("lists skills with their sources, shadowing and problems; an untrusted project's are left out", async () => {
    const { code, stdout } = await toolhost(["skills", "--cwd", t.ws, "--json"]);
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
      ["deploy", "user", path.join(t.home, "skills/deploy/SKILL.md")],
      ["lint", "user", path.join(t.userHome, ".claude/skills/lint/SKILL.md")],
    ]);
    expect(out.shadowed).toEqual([
      {
        name: "deploy",
        file: path.join(t.userHome, ".claude/skills/deploy/SKILL.md"),
        winner: path.join(t.home, "skills/deploy/SKILL.md"),
      },
    ]);
    expect(out.problems).toEqual([{ file: path.join(t.home, "skills/broken/SKILL.md"), message: expect.stringMatching(/not valid YAML/) }]);
    expect(out.folders).toContainEqual(expect.objectContaining({ dir: path.join(t.ws, ".toolhost/skills"), status: "untrusted" }));

    const text = await toolhost(["skills", "--cwd", t.ws]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("deploy  Deploy the service. Use when asked to ship.");
    expect(text.stdout).toContain("shadowed (the first skill of a name wins):");
    expect(text.stdout).toContain("problems (these skills are left out):");
    expect(text.stdout).toContain("`toolhost trust` lets them load");
  });

  it("reads a trusted project's skills", async () => {
    expect((await toolhost(["trust", t.ws])).code).toBe(0);
    const { stdout } = await toolhost(["skills", "--cwd", t.ws, "--json"]);
    const out = JSON.parse(stdout) as { trusted: boolean; skills: { name: string; origin: string }[] };
    expect(out.trusted).toBe(true);
    expect(out.skills.map((s) => [s.name, s.origin])).toContainEqual(["project-only", "project"]);
  });

  it("toolhost doctor counts a broken SKILL.md as a problem and notes a shadowed skill", async () => {
    const { code, stdout } = await toolhost(["doctor", "--cwd", t.ws]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^skills: {2}\d+/m);
    expect(stdout).toContain(`${path.join(t.home, "skills/broken/SKILL.md")}: the front matter is not valid YAML`);
    expect(stdout).toContain(`skill deploy: ${path.join(t.userHome, ".claude/skills/deploy/SKILL.md")} lost to`);
  });

  it("toolhost tools lists skill with kind read", async () => {
    const { stdout } = await toolhost(["tools", "--cwd", t.ws, "--json"]);
    const { tools } = JSON.parse(stdout) as { tools: { id: string; kind: string }[] };
    expect(tools).toContainEqual(expect.objectContaining({ id: "skill", kind: "read" }));
  });
});
