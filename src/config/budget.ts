import * as z from "zod";
import { projectConfigPath } from "./project-permissions.js";
import { readConfigTextSync } from "./safe-read.js";

// A session's budget (issue 24 §2): the caps a session stops at, from the user's config, the
// profile, `toolhost run`'s flags and a trusted project, which may only lower them. What each cap
// counts, and what happens at one, is agent/session/budget.ts's.

/** `budget` in `~/.toolhost/config.json`, a profile.json or a trusted project's `.toolhost/config.json`. */
export const BudgetSchema = z
  .object({
    /** The session's cost in USD (known prices only), counted from its start in this process. */
    maxCostUsd: z.number().positive().optional(),
    /** A notice, once, when the session's cost reaches this. */
    warnAtUsd: z.number().positive().optional(),
    /** Model requests (agent turns) in the session, its subagents' included. */
    maxTurns: z.number().int().positive().optional(),
    /** Tool calls in the session, its subagents' included. */
    maxToolCalls: z.number().int().positive().optional(),
    /** Tokens (input + output) the session used: the cap of a model with no known price. */
    maxTokens: z.number().int().positive().optional(),
  })
  .strict();

export type BudgetLimits = z.infer<typeof BudgetSchema>;
type BudgetKey = keyof BudgetLimits;

const BUDGET_KEYS: readonly BudgetKey[] = ["maxCostUsd", "warnAtUsd", "maxTurns", "maxToolCalls", "maxTokens"];

/** One limit in force and where it was set: what the message at the cap names, to say how to raise it. */
export interface BudgetLimit {
  value: number;
  /** `--max-tool-calls`, or `budget.maxToolCalls in <file>`. */
  source: string;
  /** Set by a flag of `toolhost run` (raised by running again), not by a file. */
  flag?: boolean;
}

export type SessionLimits = Partial<Record<BudgetKey, BudgetLimit>>;

/** `toolhost run`'s flag for each limit it takes. */
export const BUDGET_FLAGS: Partial<Record<BudgetKey, string>> = {
  maxCostUsd: "--max-cost-usd",
  maxTurns: "--max-turns",
  maxToolCalls: "--max-tool-calls",
  maxTokens: "--max-tokens",
};

/** Where a budget comes from: its limits and the file they were read from. */
interface BudgetSource {
  limits: BudgetLimits | undefined;
  file: string;
}

interface BudgetSources {
  /** `budget` of `~/.toolhost/config.json`. */
  user?: BudgetSource;
  /** `budget` of the session's profile.json: replaces the user's values it names. */
  profile?: BudgetSource;
  /** `toolhost run`'s flags: replace the values they name. */
  flags?: BudgetLimits;
  /** A trusted project's `budget`: may only lower a limit (or set one where none is); a higher value is ignored. */
  project?: BudgetSource;
}

/**
 * The limits in force: the user's, replaced by the profile's, replaced by the flags, each lowered
 * by the project's. A project's value above the limit in force is ignored, with one warning line.
 */
export function mergeBudget(sources: BudgetSources): { limits: SessionLimits; warnings: string[] } {
  const limits: SessionLimits = {};
  const warnings: string[] = [];
  const from = (source: BudgetSource | undefined) => {
    for (const key of BUDGET_KEYS) {
      const value = source?.limits?.[key];
      if (value !== undefined) limits[key] = { value, source: `budget.${key} in ${source!.file}` };
    }
  };
  from(sources.user);
  from(sources.profile);
  for (const key of BUDGET_KEYS) {
    const value = sources.flags?.[key];
    if (value !== undefined) limits[key] = { value, source: BUDGET_FLAGS[key] ?? key, flag: true };
  }
  const project = sources.project;
  for (const key of BUDGET_KEYS) {
    const value = project?.limits?.[key];
    if (value === undefined) continue;
    const current = limits[key];
    if (current && value > current.value) {
      warnings.push(
        `${project!.file}: budget.${key} ${value} is ignored: a project may only lower a budget, and ${current.source} sets ${current.value}.`,
      );
      continue;
    }
    limits[key] = { value, source: `budget.${key} in ${project!.file}` };
  }
  return { limits, warnings };
}

/** The `budget` of `<project>/.toolhost/config.json` (a missing file or key: none), with a problem line when it cannot be used. */
export function readProjectBudget(project: string): { source: BudgetSource; problem?: string } {
  const file = projectConfigPath(project);
  const none = (problem?: string) => ({ source: { limits: undefined, file }, ...(problem ? { problem } : {}) });
  // Confined to the project, as its permission rules are read (policy/ruleset.ts).
  const { text, error } = readConfigTextSync(file, [project]);
  if (error) return none(`${error}: its budget is not read`);
  if (text === null) return none();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return none(`${file} is not valid JSON: its budget is not read`);
  }
  const raw = (json as { budget?: unknown } | null)?.budget;
  if (raw === undefined) return none();
  const parsed = BudgetSchema.safeParse(raw);
  if (!parsed.success)
    return none(
      `${file}: budget is ignored: ${z
        .prettifyError(parsed.error)
        .replace(/✖ /g, "")
        .replace(/\s*\n\s*/g, " ")}`,
    );
  return { source: { limits: parsed.data, file } };
}
