import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseFrontMatter } from "../config/frontmatter.js";
import { readConfinedFile, userRoots } from "../config/safe-read.js";
import { asWorkspace, type Workspace } from "../config/workspace.js";
import { isInside } from "../tool/paths.js";
import type { LoadedSkill, SkillInfo } from "../tool/services.js";
import type { LoadProblem } from "./loader.js";
import type { InstalledPackage } from "./packages.js";

// Agent Skills (agentskills.io): a folder with a SKILL.md whose YAML front matter has `name`
// (1–64 of a-z, 0-9 and single hyphens, the folder's name) and `description` (1–1024 characters).

/** Where a skill folder comes from: the profile, the user's home, or the project (trusted only). */
export type SkillOrigin = "profile" | "user" | "project";

export interface Skill extends SkillInfo {
  /** The skill's folder (SKILL.md's parent). */
  dir: string;
  origin: SkillOrigin;
  /** Where its SKILL.md's real path must lie (the project, or the user's folders). */
  roots: readonly string[];
}

export interface SkillFolderReport {
  dir: string;
  origin: SkillOrigin;
  status: "loaded" | "missing" | "untrusted" | "unreadable";
  skills: number;
}

/** A skill that lost to an earlier one with the same name (first found wins). */
export interface SkillShadow {
  name: string;
  /** The losing SKILL.md. */
  file: string;
  /** The winning SKILL.md. */
  winner: string;
}

export interface SkillDiscovery {
  skills: Skill[];
  folders: SkillFolderReport[];
  shadowed: SkillShadow[];
  /** Bad SKILL.md files, each with its file: never fatal, the skill is left out. */
  problems: LoadProblem[];
}

export interface SkillFolderOptions {
  /** The session's workspace (resolved at its start), or a folder (resolved here). */
  cwd: string | Workspace;
  /** The profile's skill folders, in order. */
  profileDirs: readonly string[];
  /** `~/.toolhost`. */
  home: string;
  /** The user's home folder (for `~/.claude/skills/`), default os.homedir(). */
  userHome?: string;
  /** Enabled tool packages (host/packages.ts): their `skills` folders, the user's after the profile's, the project's before the project's own. */
  packages?: readonly InstalledPackage[];
}

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const MAX_NAME = 64;
const MAX_DESCRIPTION = 1024;
/** A SKILL.md larger than this is refused: a skill's body is instructions, not data. */
const MAX_SKILL_BYTES = 256 * 1024;
/** How many of a skill folder's files `skill` lists. */
const MAX_LISTED_FILES = 200;
const MAX_DEPTH = 6;

/** The skill folders in discovery order, each with its origin. */
export function skillFolders(options: SkillFolderOptions): { dir: string; origin: SkillOrigin }[] {
  const cwd = asWorkspace(options.cwd).cwd;
  const userHome = options.userHome ?? os.homedir();
  const fromPackages = (scope: "user" | "project") =>
    (options.packages ?? []).filter((p) => p.scope === scope).flatMap((p) => p.skills.map((dir) => ({ dir, origin: scope })));
  const folders = [
    ...options.profileDirs.map((dir) => ({ dir, origin: "profile" as const })),
    ...fromPackages("user"),
    { dir: path.join(options.home, "skills"), origin: "user" as const },
    ...fromPackages("project"),
    { dir: path.join(cwd, ".toolhost", "skills"), origin: "project" as const },
    { dir: path.join(cwd, ".claude", "skills"), origin: "project" as const },
    { dir: path.join(userHome, ".claude", "skills"), origin: "user" as const },
    { dir: path.join(cwd, ".agents", "skills"), origin: "project" as const },
  ];
  const seen = new Set<string>();
  return folders.filter(({ dir }) => {
    const key = path.resolve(dir);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Checks a SKILL.md's text: the skill, or why it is not one. */
async function parseSkill(
  text: string,
  dirName: string,
): Promise<{ ok: true; name: string; description: string } | { ok: false; error: string }> {
  const parsed = await parseFrontMatter(text);
  if (!parsed.ok) return parsed;
  if (Object.keys(parsed.data).length === 0)
    return { ok: false, error: "SKILL.md has no YAML front matter (--- name: … description: … ---)" };
  const { name, description } = parsed.data;
  if (typeof name !== "string" || name.trim() === "") return { ok: false, error: "the front matter has no `name`" };
  if (name.length > MAX_NAME || !NAME.test(name))
    return {
      ok: false,
      error: `the name "${name}" is not a valid skill name (1-${MAX_NAME} lowercase letters, digits and single hyphens, no hyphen at either end)`,
    };
  if (name !== dirName) return { ok: false, error: `the name "${name}" must match its folder's name "${dirName}"` };
  if (typeof description !== "string" || description.trim() === "")
    return { ok: false, error: "the front matter has no `description` (what the skill does and when to use it)" };
  if (description.length > MAX_DESCRIPTION)
    return { ok: false, error: `the description is ${description.length} characters long; at most ${MAX_DESCRIPTION} are allowed` };
  return { ok: true, name, description: description.replace(/\s+/g, " ").trim() };
}

async function isDir(p: string): Promise<boolean> {
  return fsp.stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/**
 * A SKILL.md's text: only a regular file whose real path lies in `roots`, read without blocking and
 * up to the cap (config/safe-read.ts); null when there is none; why not otherwise.
 */
async function readSkillFile(file: string, roots: readonly string[]): Promise<string | null | { error: string }> {
  const read = await readConfinedFile(file, { roots, maxBytes: MAX_SKILL_BYTES });
  if (!read.ok) return read.missing ? null : { error: read.reason };
  if (read.size > MAX_SKILL_BYTES) return { error: `SKILL.md is ${read.size} bytes; at most ${MAX_SKILL_BYTES} are read` };
  return read.data.toString("utf8");
}

/** The skills of one folder: each subfolder with a SKILL.md. */
async function readFolder(
  dir: string,
  origin: SkillOrigin,
  roots: readonly string[],
): Promise<{ report: SkillFolderReport; skills: Skill[]; problems: LoadProblem[] }> {
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const status = code === "ENOENT" || code === "ENOTDIR" ? "missing" : "unreadable";
    const problems = status === "unreadable" ? [{ file: dir, message: `the skill folder cannot be read: ${(err as Error).message}` }] : [];
    return { report: { dir, origin, status, skills: 0 }, skills: [], problems };
  }
  const skills: Skill[] = [];
  const problems: LoadProblem[] = [];
  for (const entry of names) {
    const skillDir = path.join(dir, entry);
    if (entry.startsWith(".") || !(await isDir(skillDir))) continue;
    const file = path.join(skillDir, "SKILL.md");
    const read = await readSkillFile(file, roots);
    // A folder without SKILL.md is not a skill (a shared assets folder, say).
    if (read === null) continue;
    if (typeof read !== "string") {
      problems.push({ file, message: read.error });
      continue;
    }
    const skill = await parseSkill(read, entry);
    if (!skill.ok) problems.push({ file, message: skill.error });
    else skills.push({ name: skill.name, description: skill.description, path: file, dir: skillDir, origin, roots });
  }
  return { report: { dir, origin, status: "loaded", skills: skills.length }, skills, problems };
}

/**
 * Finds the session's skills: the profile's `skills/`, `~/.toolhost/skills/`, the project's
 * `.toolhost/skills/`, `.claude/skills/`, `~/.claude/skills/`, the project's `.agents/skills/`.
 * First found wins by name; an untrusted project's folders are not read. Never throws for a bad file.
 */
export async function discoverSkills(options: SkillFolderOptions & { trusted: boolean }): Promise<SkillDiscovery> {
  const result: SkillDiscovery = { skills: [], folders: [], shadowed: [], problems: [] };
  const byName = new Map<string, Skill>();
  const workspace = asWorkspace(options.cwd);
  for (const { dir, origin } of skillFolders({ ...options, cwd: workspace })) {
    if (origin === "project" && !options.trusted) {
      if (await isDir(dir)) result.folders.push({ dir, origin, status: "untrusted", skills: 0 });
      continue;
    }
    // A project's skills must stay in the project; the user's and the profile's are theirs.
    const roots = origin === "project" ? [workspace.cwd] : [dir, options.home, options.userHome ?? os.homedir(), ...userRoots()];
    const { report, skills, problems } = await readFolder(dir, origin, roots);
    result.folders.push(report);
    result.problems.push(...problems);
    for (const skill of skills) {
      // Switched off in its package (`toolhost packages disable NAME/SKILL`).
      if (options.packages?.some((p) => p.disabled.has(skill.name) && isInside(skill.dir, p.root))) continue;
      const winner = byName.get(skill.name);
      if (winner) result.shadowed.push({ name: skill.name, file: skill.path, winner: winner.path });
      else byName.set(skill.name, skill);
    }
  }
  result.skills = [...byName.values()];
  return result;
}

/** Bad and shadowed skills, for the session's start message; null when there are none. */
export function formatSkillProblems(found: SkillDiscovery): string | null {
  const parts: string[] = [];
  if (found.problems.length)
    parts.push(`Some skills could not be loaded:\n${found.problems.map((p) => `- ${p.file}: ${p.message}`).join("\n")}`);
  if (found.shadowed.length)
    parts.push(
      `Shadowed skills (the first one found wins):\n${found.shadowed.map((s) => `- ${s.name}: ${s.file} is shadowed by ${s.winner}`).join("\n")}`,
    );
  return parts.length ? parts.join("\n\n") : null;
}

/** The files of a skill folder (relative, `/`-separated, SKILL.md left out), at most `max`. */
async function listFiles(root: string, max: number): Promise<{ files: string[]; more: boolean }> {
  const files: string[] = [];
  let more = false;
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.name === ".git" || entry.name === "node_modules") continue;
      const relPath = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (depth < MAX_DEPTH) await walk(path.join(dir, entry.name), relPath, depth + 1);
        continue;
      }
      if (relPath === "SKILL.md") continue;
      if (files.length >= max) {
        more = true;
        return;
      }
      files.push(relPath);
    }
  };
  await walk(root, "", 0);
  return { files, more };
}

/** A skill's body (read again: it may have changed) and its folder's files. */
export async function loadSkill(skill: Skill): Promise<LoadedSkill> {
  const text = await readSkillFile(skill.path, skill.roots);
  if (text === null) throw new Error(`${skill.path} is gone`);
  if (typeof text !== "string") throw new Error(text.error);
  const parsed = await parseFrontMatter(text);
  const body = (parsed.ok ? parsed.body : text).trim();
  const { files, more } = await listFiles(skill.dir, MAX_LISTED_FILES);
  return { name: skill.name, description: skill.description, dir: skill.dir, body, files, moreFiles: more };
}
