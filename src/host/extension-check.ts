import * as z from "zod";
import { compileParameters, isZodSchema, TOOL_ID_PATTERN, type AnyTool } from "../tool/define.js";
import { TOOL_KINDS } from "../tool/kinds.js";
import { RequirementSetSchema, type RequirementSet } from "../tool/requirements.js";
import { expandPattern, ScopeError, type ScopeVariables } from "../runtime/scope.js";

/** How long an extension's execute may run when it declares no `timeoutMs` (the default). */
export const EXTENSION_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 60 * 60_000;

// Only the names matter here: a pattern using any other variable is a load error.
const KNOWN_VARIABLES: ScopeVariables = { workspace: ["/w"], "ad-hoc": ["/a"], "user-data": ["/u"] };

const OPTIONAL_FUNCTIONS = ["title", "locations", "display", "preview", "shorthand", "isAvailable"] as const;

export type CheckResult = { ok: true; tool: AnyTool } | { ok: false; id?: string; problems: string[] };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Patterns whose variables this host does not define ({worksapce}); empty when all compile. */
export function requirementProblems(requires: RequirementSet): string[] {
  const patterns = [...(requires.fs?.read ?? []), ...(requires.fs?.write ?? []), ...(requires.net?.hosts ?? [])];
  const problems = new Set<string>();
  for (const pattern of patterns) {
    try {
      expandPattern(pattern, KNOWN_VARIABLES);
    } catch (err) {
      if (!(err instanceof ScopeError)) throw err;
      problems.add(`requires: ${err.message} (known: {workspace}, {ad-hoc}, {user-data})`);
    }
  }
  return [...problems];
}

function checkParameters(value: Record<string, unknown>, problems: string[]) {
  const parameters = value.parameters;
  if (!isZodSchema(parameters) && !isPlainObject(parameters)) {
    problems.push("parameters must be a zod schema (z.object({...})) or a JSON Schema object");
    return undefined;
  }
  if (!isZodSchema(parameters) && typeof parameters.safeParse === "function") {
    problems.push('parameters look like a zod 3 schema; use zod 4: import { z } from "toolhost"');
    return undefined;
  }
  try {
    // A defineTool result (from any copy of toolhost) already carries its published schema.
    const compiled =
      isZodSchema(parameters) && isPlainObject(value.inputSchema)
        ? { schema: parameters, inputSchema: value.inputSchema }
        : compileParameters(parameters as z.ZodType);
    if (compiled.inputSchema.type !== "object") {
      problems.push('parameters must describe an object: z.object({...}) or { type: "object", properties: {...} }');
      return undefined;
    }
    return compiled;
  } catch (err) {
    problems.push(`parameters are not a usable schema: ${(err as Error).message}`);
    return undefined;
  }
}

function checkRequires(value: Record<string, unknown>, problems: string[]): RequirementSet | undefined {
  if (value.requires === undefined) {
    problems.push("requires is missing: declare what the tool needs, or {} for nothing");
    return undefined;
  }
  const parsed = RequirementSetSchema.safeParse(value.requires);
  if (!parsed.success) {
    problems.push(`requires is not a valid RequirementSet:\n${z.prettifyError(parsed.error)}`);
    return undefined;
  }
  const variables = requirementProblems(parsed.data);
  problems.push(...variables);
  return variables.length ? undefined : parsed.data;
}

function checkOptional(value: Record<string, unknown>, problems: string[]) {
  for (const name of OPTIONAL_FUNCTIONS) {
    if (value[name] !== undefined && typeof value[name] !== "function") problems.push(`${name} must be a function`);
  }
  const hint = value.shorthandHint;
  if (hint !== undefined && !(typeof hint === "string" && hint.trim() !== "")) problems.push("shorthandHint must be a non-empty string");
  if (value.output !== undefined && !isPlainObject(value.output)) problems.push("output must be an object ({ maxBytes } or { maxItems })");
  for (const flag of ["sideEffect", "idempotent"]) {
    if (value[flag] !== undefined && typeof value[flag] !== "boolean") problems.push(`${flag} must be true or false`);
  }
  const t = value.timeoutMs;
  if (t !== undefined && !(typeof t === "number" && Number.isInteger(t) && t > 0 && t <= MAX_TIMEOUT_MS)) {
    problems.push(`timeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
}

/**
 * Checks one exported value by its shape (it was made by another copy of defineTool, or by
 * hand) and returns the tool ready to register, or every problem found.
 */
export function checkExtensionTool(value: unknown): CheckResult {
  if (!isPlainObject(value)) {
    return { ok: false, problems: [`the export is not a tool object (got ${value === null ? "null" : typeof value})`] };
  }
  const problems: string[] = [];
  const id = typeof value.id === "string" ? value.id : undefined;
  if (id === undefined) problems.push("id is missing");
  else if (!TOOL_ID_PATTERN.test(id)) problems.push(`id ${JSON.stringify(id)} does not match ${TOOL_ID_PATTERN}`);
  if (typeof value.description !== "string" || value.description.trim() === "") problems.push("description must be a non-empty string");
  if (!(TOOL_KINDS as readonly unknown[]).includes(value.kind)) {
    problems.push(`kind ${JSON.stringify(value.kind)} is not an ACP kind (${TOOL_KINDS.join(", ")})`);
  }
  const parameters = checkParameters(value, problems);
  const requires = checkRequires(value, problems);
  if (typeof value.execute !== "function") problems.push("execute must be a function");
  checkOptional(value, problems);
  if (problems.length || !parameters || !requires) return { ok: false, id, problems };
  const tool = {
    ...value,
    parameters: parameters.schema,
    inputSchema: parameters.inputSchema,
    requires,
    timeoutMs: (value.timeoutMs as number | undefined) ?? EXTENSION_TIMEOUT_MS,
  } as unknown as AnyTool;
  return { ok: true, tool: Object.freeze(tool) };
}
