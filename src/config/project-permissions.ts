import { randomBytes } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { MAX_CONFIG_BYTES, readConfinedFile } from "./safe-read.js";

/** A permission rule as it is written to a config file. */
interface RuleEntry {
  permission: string;
  pattern: string;
  action: "allow" | "deny" | "ask";
}

/** The project's config file, where its permission rules live. */
export function projectConfigPath(project: string): string {
  return path.join(project, ".toolhost", "config.json");
}

/**
 * Appends rules to `<project>/.toolhost/config.json` `permissions` ("always, for this project"),
 * atomically: the new text goes to a temp file in the same folder, renamed over the old one, so a
 * reader sees the old file or the new one whole. Every other key and rule is kept; a rule already
 * there is not added twice; the file and folder are created when missing. A file that is not a
 * JSON object, or whose `permissions` is not a list, is never overwritten: the reason comes back.
 */
export async function appendProjectRules(project: string, rules: readonly RuleEntry[]): Promise<{ file: string; error?: string }> {
  const file = projectConfigPath(project);
  let config: Record<string, unknown> = {};
  // A regular file inside the project only: a symlink or a FIFO there is never read or replaced.
  const read = await readConfinedFile(file, { roots: [project], maxBytes: MAX_CONFIG_BYTES + 1 });
  if (!read.ok && !read.missing) return { file, error: read.reason };
  if (read.ok && read.size > MAX_CONFIG_BYTES) return { file, error: `it is ${read.size} bytes, over ${MAX_CONFIG_BYTES}` };
  if (read.ok) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(read.data.toString("utf8"));
    } catch (err) {
      return { file, error: `it is not valid JSON (${err instanceof Error ? err.message : String(err)})` };
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { file, error: "it is not a JSON object" };
    config = parsed as Record<string, unknown>;
  }
  const existing = config.permissions ?? [];
  if (!Array.isArray(existing)) return { file, error: "its `permissions` is not a list" };
  const same = (a: unknown, b: RuleEntry) => {
    const r = a as Partial<RuleEntry> | null;
    return r?.permission === b.permission && (r.pattern ?? "*") === b.pattern && r.action === b.action;
  };
  const added = rules.filter((r, i) => !existing.some((e) => same(e, r)) && rules.findIndex((o) => same(o, r)) === i);
  const next = {
    ...config,
    permissions: [...existing, ...added.map((r) => ({ permission: r.permission, pattern: r.pattern, action: r.action }))],
  };
  const temp = path.join(path.dirname(file), `.config.json.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(temp, `${JSON.stringify(next, null, 2)}\n`, { flag: "wx" });
    await fsp.rename(temp, file);
  } catch (err) {
    await fsp.rm(temp, { force: true }).catch(() => {});
    return { file, error: err instanceof Error ? err.message : String(err) };
  }
  return { file };
}
