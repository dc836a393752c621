import path from "node:path";
import { toolhostHome } from "../config/paths.js";
import { selectProfileName } from "../config/profile-name.js";
import { loadUserConfig } from "../config/schema.js";
import { loadProfile } from "../host/profiles.js";
import { sessionPackages } from "../host/packages.js";
import { discoverSkills } from "../host/skills.js";
import { checkTrust } from "../host/trust.js";

export interface SkillsOptions {
  json: boolean;
  cwd?: string;
  profile?: string;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
}

/** `toolhost skills`: a session's skills in this folder, where each came from, what shadows what, and bad SKILL.md files. */
export async function runSkills(options: SkillsOptions): Promise<number> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const home = toolhostHome();
  const config = loadUserConfig(home);
  const { profile } = await loadProfile(selectProfileName({ requested: options.profile, config: config.config }), { home });
  // Trusted with its files as they are now (a project changed since it was trusted is not).
  const check = await checkTrust(cwd, home);
  const trusted = !check.error && check.trusted;
  const packages = sessionPackages(home, cwd);
  const enabled = [...packages.user, ...packages.project.filter(() => trusted)].filter((p) => p.enabled);
  const found = await discoverSkills({ cwd, profileDirs: profile.skillDirs, home, trusted, packages: enabled });
  if (options.json) {
    const skills = found.skills.map(({ name, description, path: file, origin }) => ({ name, description, file, origin }));
    const out = { profile: profile.name, trusted, skills, shadowed: found.shadowed, problems: found.problems, folders: found.folders };
    await options.out(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  const lines: string[] = [];
  if (found.skills.length === 0) lines.push("No skills found.");
  const width = Math.max(0, ...found.skills.map((s) => s.name.length));
  for (const s of found.skills) {
    const summary = s.description.length > 100 ? `${s.description.slice(0, 99)}…` : s.description;
    lines.push(`${s.name.padEnd(width)}  ${summary}  [${s.path}]`);
  }
  const section = (title: string, items: string[]) => {
    if (items.length) lines.push("", title, ...items.map((l) => `  ${l}`));
  };
  section(
    "shadowed (the first skill of a name wins):",
    found.shadowed.map((s) => `${s.name}: ${s.file} lost to ${s.winner}`),
  );
  section(
    "problems (these skills are left out):",
    found.problems.map((p) => `${p.file}: ${p.message}`),
  );
  section(
    "folders:",
    found.folders.map(
      (f) => `${f.dir} (${f.origin}): ${f.status === "loaded" ? `${f.skills} skill${f.skills === 1 ? "" : "s"}` : f.status}`,
    ),
  );
  if (found.folders.some((f) => f.status === "untrusted"))
    lines.push("", "This project is not trusted, so its skill folders were not read: `toolhost trust` lets them load.");
  await options.out(`${lines.join("\n")}\n`);
  return 0;
}
