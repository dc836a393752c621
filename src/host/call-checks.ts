import * as z from "zod";
import type { AnyTool } from "../tool/define.js";
import { editDistance } from "../tool/edit-distance.js";

// What a call's arguments and a tool's result must be: the checks of the pipeline, with messages
// that say what to do next.

export function formatValidationError(toolId: string, error: z.ZodError): string {
  return `The ${toolId} tool was called with invalid arguments:\n${z.prettifyError(error)}\nRewrite the arguments so they satisfy the tool's schema.`;
}

/**
 * Keys the tool's published schema does not name. A schema that allows more (`additionalProperties`
 * true or a schema, `patternProperties`) or has no `properties` accepts anything; zod's default
 * objects publish neither and would drop the key without a word.
 */
export function unknownKeysError(tool: AnyTool, rawArgs: unknown): string | undefined {
  const schema = tool.inputSchema;
  const properties = schema.properties;
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return undefined;
  if ((schema.additionalProperties !== undefined && schema.additionalProperties !== false) || schema.patternProperties !== undefined) {
    return undefined;
  }
  if (typeof rawArgs !== "object" || rawArgs === null || Array.isArray(rawArgs)) return undefined;
  const valid = Object.keys(properties);
  const unknown = Object.keys(rawArgs).filter((key) => !Object.hasOwn(properties, key));
  if (!unknown.length) return undefined;
  const named = unknown.map((key) => {
    const near = valid
      .map((name) => {
        const limit = Math.max(1, Math.floor(Math.max(key.length, name.length) / 3));
        return { name, d: editDistance(key.toLowerCase(), name.toLowerCase(), limit), limit };
      })
      .filter(({ d, limit }) => d <= limit)
      .sort((x, y) => x.d - y.d)[0];
    return near ? `${JSON.stringify(key)} (did you mean ${JSON.stringify(near.name)}?)` : JSON.stringify(key);
  });
  const list = valid.length
    ? `Its arguments are: ${valid.join(", ")}. Call it again with only those keys.`
    : "It takes no arguments: call it with {}.";
  return `The ${tool.id} tool has no argument${unknown.length > 1 ? "s" : ""} ${named.join(", ")}. ${list}`;
}

/** A thrown value as text: an Error's message (or its name), a string as is, anything else as JSON. */
export function thrownText(err: unknown): string {
  if (err instanceof Error) return err.message || `${err.name} (no message)`;
  if (typeof err === "string") return err;
  let json: string | undefined;
  try {
    json = JSON.stringify(err);
  } catch {
    // circular or a bigint: fall back to String()
  }
  return `it threw a non-Error value: ${json ?? String(err)}`;
}

/** What a value is, for a message: `a Map`, `a function`, `undefined`. */
function kindOf(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "object" && value !== null) {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name ? `a ${name}` : "an object with a custom prototype";
  }
  return typeof value === "number" ? `the number ${value}` : `a ${typeof value}`;
}

function isPlainObjectValue(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Why a result is not JSON data, or undefined when it is: null, booleans, finite numbers,
 * strings, arrays and plain objects of those. An object's field may be undefined (JSON leaves it
 * out); anything else (functions, Maps, class instances, bigints, cycles) would reach the model
 * changed or not at all.
 */
export function notJsonData(value: unknown): string | undefined {
  const seen = new Set<object>();
  // The path to a problem is built only once one is found (walking out), not for every item:
  // a listing of thousands of paths is walked on every call.
  const walk = (item: unknown): { kind: string; path: string[] } | undefined => {
    if (item === null || typeof item === "string" || typeof item === "boolean") return undefined;
    if (typeof item === "number") return Number.isFinite(item) ? undefined : { kind: kindOf(item), path: [] };
    if (typeof item !== "object") return { kind: kindOf(item), path: [] };
    if (seen.has(item)) return { kind: "a circular reference", path: [] };
    const array = Array.isArray(item);
    if (!array && !isPlainObjectValue(item)) return { kind: kindOf(item), path: [] };
    seen.add(item);
    if (array) {
      for (let i = 0; i < item.length; i++) {
        const problem = walk(item[i]);
        if (problem) {
          problem.path.unshift(`[${i}]`);
          return problem;
        }
      }
    } else {
      for (const [key, field] of Object.entries(item)) {
        if (field === undefined) continue;
        const problem = walk(field);
        if (problem) {
          problem.path.unshift(/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);
          return problem;
        }
      }
    }
    seen.delete(item);
    return undefined;
  };
  const problem = walk(value);
  if (!problem) return undefined;
  const at = problem.path.join("").replace(/^\./, "");
  return at ? `${problem.kind} at ${at}` : problem.kind;
}
