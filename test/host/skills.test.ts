import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildSystemPrompt } from "../../src/agent/turn/system-prompt.js";
import { discoverSkills, formatSkillProblems, loadSkill } from "../../src/host/skills.js";
import { tempDir } from "../helpers.js";

const skill = (name: string, description: string, body = `Do ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`;

let base: string;
let cwd: string;
let home: string;
let userHome: string;
let profileDir: string;

beforeEach(async () => {
  base = await tempDir({
    // The profile's skills/ comes first.
    "profile/skills/alpha/SKILL.md": skill("alpha", "Alpha from the profile"),
    // ~/.toolhost/skills/
    "home/skills/alpha/SKILL.md": skill("alpha", "Alpha from the home (shadowed)"),
    "home/skills/beta/SKILL.md": skill("beta", "Beta from the home"),
    "home/skills/beta/scripts/run.sh": "echo beta\n",
    "home/skills/beta/reference.md": "# Beta reference\n",
    "home/skills/broken-yaml/SKILL.md": "---\nname: broken-yaml\ndescription: [unclosed\n---\nbody\n",
    "home/skills/no-description/SKILL.md": "---\nname: no-description\n---\nbody\n",
    "home/skills/Bad_Name/SKILL.md": skill("Bad_Name", "An invalid name"),
    "home/skills/folder/SKILL.md": skill("other-name", "Its name is not its folder's"),
    "home/skills/no-front-matter/SKILL.md": "Just text.\n",
    "home/skills/assets/logo.txt": "not a skill: no SKILL.md\n",
    // The project's folders (trusted only).
    "ws/.toolhost/skills/gamma/SKILL.md": skill("gamma", "Gamma from the project"),
    "ws/.claude/skills/delta/SKILL.md": skill("delta", "Delta from the project's .claude"),
    "ws/.claude/skills/beta/SKILL.md": skill("beta", "Beta from the project's .claude (shadowed)"),
    // ~/.claude/skills/
    "user/.claude/skills/epsilon/SKILL.md": skill("epsilon", "Epsilon from ~/.claude"),
    "user/.claude/skills/gamma/SKILL.md": skill("gamma", "Gamma from ~/.claude (shadowed)"),
    "ws/.agents/skills/zeta/SKILL.md": skill("zeta", "Zeta from the project's .agents"),
  });
  cwd = path.join(base, "ws");
  home = path.join(base, "home");
  userHome = path.join(base, "user");
  profileDir = path.join(base, "profile", "skills");
});

afterEach(async () => {
  await fsp.rm(base, { recursive: true, force: true });
});

describe("skill discovery", () => {
  it("reads every folder in order, first found wins by name, bad SKILL.md files are reported", async () => {
    const found = await discoverSkills({ cwd, profileDirs: [profileDir], home, userHome, trusted: true });
    expect(found.skills.map((s) => [s.name, s.description, s.origin])).toEqual([
      ["alpha", "Alpha from the profile", "profile"],
      ["beta", "Beta from the home", "user"],
      ["gamma", "Gamma from the project", "project"],
      ["delta", "Delta from the project's .claude", "project"],
      ["epsilon", "Epsilon from ~/.claude", "user"],
      ["zeta", "Zeta from the project's .agents", "project"],
    ]);
    expect(found.shadowed).toEqual([
      { name: "alpha", file: path.join(home, "skills/alpha/SKILL.md"), winner: path.join(profileDir, "alpha/SKILL.md") },
      { name: "beta", file: path.join(cwd, ".claude/skills/beta/SKILL.md"), winner: path.join(home, "skills/beta/SKILL.md") },
      {
        name: "gamma",
        file: path.join(userHome, ".claude/skills/gamma/SKILL.md"),
        winner: path.join(cwd, ".toolhost/skills/gamma/SKILL.md"),
      },
    ]);
    const problems = Object.fromEntries(found.problems.map((p) => [path.relative(home, p.file), p.message]));
    expect(Object.keys(problems).sort()).toEqual([
      "skills/Bad_Name/SKILL.md",
      "skills/broken-yaml/SKILL.md",
      "skills/folder/SKILL.md",
      "skills/no-description/SKILL.md",
      "skills/no-front-matter/SKILL.md",
    ]);
    expect(problems["skills/broken-yaml/SKILL.md"]).toMatch(/not valid YAML/);
    expect(problems["skills/no-description/SKILL.md"]).toMatch(/no `description`/);
    expect(problems["skills/Bad_Name/SKILL.md"]).toMatch(/not a valid skill name/);
    expect(problems["skills/folder/SKILL.md"]).toMatch(/must match its folder's name "folder"/);
    expect(problems["skills/no-front-matter/SKILL.md"]).toMatch(/no YAML front matter/);
    const message = formatSkillProblems(found) ?? "";
    expect(message).toContain("Some skills could not be loaded");
    expect(message).toContain(`- beta: ${path.join(cwd, ".claude/skills/beta/SKILL.md")} is shadowed by`);
  });

  it("ignores an untrusted project's folders, and its skills shadow nothing", async () => {
    const found = await discoverSkills({ cwd, profileDirs: [profileDir], home, userHome, trusted: false });
    expect(found.skills.map((s) => s.name)).toEqual(["alpha", "beta", "epsilon", "gamma"]);
    expect(found.skills.find((s) => s.name === "gamma")?.path).toBe(path.join(userHome, ".claude/skills/gamma/SKILL.md"));
    expect(found.folders.filter((f) => f.status === "untrusted").map((f) => f.dir)).toEqual([
      path.join(cwd, ".toolhost/skills"),
      path.join(cwd, ".claude/skills"),
      path.join(cwd, ".agents/skills"),
    ]);
  });

  it("a missing folder is no problem", async () => {
    const empty = await tempDir();
    const found = await discoverSkills({ cwd: empty, profileDirs: [], home: empty, userHome: empty, trusted: true });
    expect(found).toMatchObject({ skills: [], shadowed: [], problems: [] });
    expect(found.folders.every((f) => f.status === "missing")).toBe(true);
    await fsp.rm(empty, { recursive: true, force: true });
  });

  it("loads a skill: its body without front matter and its folder's other files", async () => {
    const found = await discoverSkills({ cwd, profileDirs: [], home, userHome, trusted: false });
    const beta = found.skills.find((s) => s.name === "beta");
    expect(beta).toBeDefined();
    const loaded = await loadSkill(beta!);
    expect(loaded).toEqual({
      name: "beta",
      description: "Beta from the home",
      dir: path.join(home, "skills/beta"),
      body: "Do beta.",
      files: ["reference.md", "scripts/run.sh"],
      moreFiles: false,
    });
  });
});

describe("the system prompt", () => {
  it("lists each skill as one line, name: description", async () => {
    const prompt = await buildSystemPrompt({
      cwd,
      skills: [
        { name: "alpha", description: "Alpha does things." },
        { name: "beta", description: "Beta does others." },
      ],
    });
    expect(prompt).toContain("# Skills\n");
    expect(prompt).toContain("\n- alpha: Alpha does things.\n- beta: Beta does others.");
    expect(await buildSystemPrompt({ cwd })).not.toContain("# Skills");
  });
});
