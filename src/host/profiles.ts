import * as fsp from "node:fs/promises";
import path from "node:path";
import { MAX_CONFIG_BYTES, readConfinedFile, userRoots } from "../config/safe-read.js";
import * as z from "zod";
import { READ_ONLY_KINDS, TOOL_KINDS, type ToolKind } from "../tool/kinds.js";
import { RequirementSetSchema, type RequirementSet } from "../tool/requirements.js";
import { PermissionRuleSchema, type PermissionRule } from "../policy/rules.js";
import { packageRoot, toolhostHome } from "../config/paths.js";
import { BudgetSchema, type BudgetLimits } from "../config/budget.js";
import { requirementProblems } from "./extension-check.js";
import type { LoadProblem } from "./loader.js";

export const PROFILE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export const ProfileFileSchema = z
  .object({
    name: z.string().regex(PROFILE_NAME_PATTERN, `a profile name matches ${PROFILE_NAME_PATTERN}`),
    description: z.string().min(1),
    /** The profile's instructions for the model; or a prompt.md beside profile.json. */
    prompt: z.string().optional(),
    /** `provider/model`, e.g. `anthropic/claude-sonnet-4-5`. */
    model: z.string().min(1).optional(),
    tools: z
      .object({
        /** Only these ids (locked or extension); all when absent. */
        enable: z.array(z.string()).optional(),
        /** These ids are left out. */
        disable: z.array(z.string()).optional(),
        /** Only tools of these ACP kinds: keeps extension tools in line with the profile's intent. */
        kinds: z.array(z.enum(TOOL_KINDS)).optional(),
      })
      .strict()
      .optional(),
    /** The manifest's RequirementSet, joined with each tool's own on every call. */
    requires: RequirementSetSchema.optional(),
    /** The manifest's permission rules (policy/ruleset.ts): a deny here can never be overridden. */
    permissions: z.array(PermissionRuleSchema).optional(),
    /** The profile's hooks, as written: host/hooks/ checks each entry on its own, so a bad one never costs the profile. */
    hooks: z.unknown().optional(),
    /** The session's caps (config/budget.ts): replace the user config's; a trusted project may only lower them. */
    budget: BudgetSchema.optional(),
  })
  .strict();

export interface Profile {
  name: string;
  description: string;
  prompt: string;
  model?: string;
  tools: { enable?: string[]; disable: string[]; kinds?: ToolKind[] };
  requires: RequirementSet;
  /** The manifest's permission rules (policy/ruleset.ts): a deny here can never be overridden. */
  permissions: PermissionRule[];
  /** Its `hooks`, as written (host/hooks/config.ts reads them). */
  hooks?: unknown;
  /** The profile's budget (config/budget.ts), over the user config's. */
  budget?: BudgetLimits;
  /** Where its profile.json is; null for the fallback used when a profile cannot be loaded. */
  dir: string | null;
  origin: "user" | "shipped" | "fallback";
  /** Tool folders, in discovery order (the user's before the shipped one). */
  toolDirs: string[];
  /** Skill folders, in discovery order: the first of host/skills.ts's folders. */
  skillDirs: string[];
}

export interface ProfileResult {
  profile: Profile;
  problems: LoadProblem[];
}

export interface ProfileLocations {
  home?: string;
  root?: string;
}

/** Used when the selected profile is missing or invalid: read-only kinds only, nothing of its own (fail closed). */
function fallbackProfile(name: string): Profile {
  return {
    name,
    description: `The profile "${name}" could not be loaded, so only read-only tools are available`,
    prompt: "",
    tools: { disable: [], kinds: [...READ_ONLY_KINDS] },
    requires: {},
    permissions: [],
    dir: null,
    origin: "fallback",
    toolDirs: [],
    skillDirs: [],
  };
}

/** A profile file's text (a regular file of the user's or the package's only), or null when it does not exist. */
async function readText(file: string, dir: string): Promise<string | null> {
  const read = await readConfinedFile(file, { roots: [dir, ...userRoots()], maxBytes: MAX_CONFIG_BYTES + 1 });
  if (!read.ok) {
    if (read.missing) return null;
    throw new Error(read.reason);
  }
  if (read.size > MAX_CONFIG_BYTES) throw new Error(`${file} is ${read.size} bytes, over ${MAX_CONFIG_BYTES}`);
  return read.data.toString("utf8");
}

/** Reads and validates one profile folder's profile.json (+ prompt.md). */
async function readProfileFolder(dir: string, name: string, origin: "user" | "shipped"): Promise<ProfileResult | null> {
  const file = path.join(dir, "profile.json");
  const fail = (message: string): ProfileResult => ({ profile: fallbackProfile(name), problems: [{ file, message }] });
  let text: string | null;
  let promptMd: string | null;
  try {
    [text, promptMd] = await Promise.all([readText(file, dir), readText(path.join(dir, "prompt.md"), dir)]);
  } catch (err) {
    return fail(`cannot be read: ${(err as Error).message}`);
  }
  if (text === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return fail(`is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = ProfileFileSchema.safeParse(json);
  if (!parsed.success) return fail(`is not a valid profile:\n${z.prettifyError(parsed.error)}`);
  const data = parsed.data;
  if (data.name !== name) return fail(`says name "${data.name}", but its folder is "${name}": they must match`);
  if (data.prompt !== undefined && promptMd !== null) return fail("has a prompt and a prompt.md beside it: keep one");
  const variables = requirementProblems(data.requires ?? {});
  if (variables.length) return fail(variables.join("; "));
  return {
    profile: {
      name,
      description: data.description,
      prompt: data.prompt ?? promptMd ?? "",
      model: data.model,
      tools: { enable: data.tools?.enable, disable: data.tools?.disable ?? [], kinds: data.tools?.kinds },
      requires: data.requires ?? {},
      permissions: data.permissions ?? [],
      ...(data.hooks !== undefined ? { hooks: data.hooks } : {}),
      ...(data.budget ? { budget: data.budget } : {}),
      dir,
      origin,
      toolDirs: [path.join(dir, "tools")],
      skillDirs: [path.join(dir, "skills")],
    },
    problems: [],
  };
}

function locations(options: ProfileLocations) {
  return { home: options.home ?? toolhostHome(), root: options.root ?? packageRoot() };
}

/**
 * Loads a profile: `~/.toolhost/profiles/<name>/profile.json` replaces the shipped profile of
 * that name; a user folder without one extends the shipped profile (its tools/ and skills/ come
 * first). A missing or invalid profile is reported and replaced by a read-only fallback.
 */
export async function loadProfile(name: string, options: ProfileLocations = {}): Promise<ProfileResult> {
  const { home, root } = locations(options);
  if (!PROFILE_NAME_PATTERN.test(name)) {
    const message = `"${name}" is not a profile name (${PROFILE_NAME_PATTERN})`;
    return { profile: fallbackProfile(name), problems: [{ file: "(profile)", message }] };
  }
  const userDir = path.join(home, "profiles", name);
  const shippedDir = path.join(root, "profiles", name);
  const user = await readProfileFolder(userDir, name, "user");
  if (user) return user;
  const shipped = await readProfileFolder(shippedDir, name, "shipped");
  if (!shipped) {
    const message = `no profile named "${name}": looked for ${path.join(userDir, "profile.json")} and ${path.join(shippedDir, "profile.json")}`;
    return { profile: fallbackProfile(name), problems: [{ file: path.join(userDir, "profile.json"), message }] };
  }
  if (shipped.problems.length === 0) {
    shipped.profile.toolDirs.unshift(path.join(userDir, "tools"));
    shipped.profile.skillDirs.unshift(path.join(userDir, "skills"));
  }
  return shipped;
}

export interface ProfileSummary {
  name: string;
  description: string;
  origin: "user" | "shipped";
}

/** Every loadable profile (user and shipped), by name: for a profile picker. Broken ones are reported. */
export async function listProfiles(options: ProfileLocations = {}): Promise<{ profiles: ProfileSummary[]; problems: LoadProblem[] }> {
  const { home, root } = locations(options);
  const names = new Set<string>();
  for (const dir of [path.join(home, "profiles"), path.join(root, "profiles")]) {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory() && PROFILE_NAME_PATTERN.test(entry.name)) names.add(entry.name);
    }
  }
  const profiles: ProfileSummary[] = [];
  const problems: LoadProblem[] = [];
  for (const name of [...names].sort()) {
    const { profile, problems: found } = await loadProfile(name, { home, root });
    // A user folder holding only tools/ for a profile that exists nowhere else is not a profile.
    if (profile.origin === "fallback" && found.every((p) => p.message.startsWith("no profile named"))) continue;
    problems.push(...found);
    if (profile.origin !== "fallback") profiles.push({ name, description: profile.description, origin: profile.origin });
  }
  return { profiles, problems };
}
