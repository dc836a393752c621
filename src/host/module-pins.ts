import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import type { Workspace } from "../config/workspace.js";
import type { ContentChange } from "./trust-contents.js";

// What a trusted project's tools import from the workspace, pinned. Trust hashes the tool files
// (trust-contents.ts), but a tool runs whatever it imports too (`../../lib/greet.mjs`, the
// workspace's node_modules), and a sandboxed command may rewrite those. So the loader passes
// every workspace file it evaluates for a project tool through a ModuleGuard: the source the
// loader read (the same string it then transforms and runs) is hashed there. The first trusted
// load records the hashes with the trust entry; every later load, and every import a tool makes
// while it runs, must find the same bytes, else the import throws before the file runs.

/** Path relative to the project (`/`-separated) → `sha256:<hex>` of the source as the loader read it. */
export type ModulePins = Record<string, string>;

/** sha256 of a module's source as the loader read it (a string: what it transforms and runs). */
export function hashModuleText(source: string): string {
  return `sha256:${createHash("sha256").update(source, "utf8").digest("hex")}`;
}

const inside = (abs: string, root: string) => abs === root || abs.startsWith(root + path.sep);
const slashed = (rel: string) => rel.split(path.sep).join("/");

/** The pinned files that are no longer as recorded (modified, or gone), read from disk now. */
export async function diffModulePins(root: string, pins: ModulePins): Promise<ContentChange[]> {
  const changes: ContentChange[] = [];
  for (const [rel, hash] of Object.entries(pins)) {
    const text = await fsp.readFile(path.join(root, rel), "utf8").catch(() => null);
    if (text === null) changes.push({ path: rel, change: "removed" });
    else if (hashModuleText(text) !== hash) changes.push({ path: rel, change: "modified" });
  }
  return changes;
}

/** Thrown (inside the import) when a workspace file is not the one trusted. */
export class PinRefusal extends Error {}

/**
 * One toolset build's guard over the project's module graph. `pins` given: enforce them (a
 * workspace file whose source hashes otherwise, or that is not pinned, is refused); none: record
 * what is loaded, then `freeze()` enforces what was recorded (an import at call time included).
 */
export class ModuleGuard {
  private recording: boolean;
  private readonly pins: ModulePins;
  private refused: ContentChange[] = [];

  constructor(
    private readonly workspace: Pick<Workspace, "cwd" | "trustKey">,
    pins?: ModulePins,
  ) {
    this.recording = pins === undefined;
    this.pins = { ...(pins ?? {}) };
  }

  /**
   * The file's key (path in the project), or null when it lies outside the workspace. A file is
   * the workspace's when its real path or its path as spelled is inside (a symlink out still counts).
   */
  keyOf(file: string): string | null {
    const spelled = path.resolve(file);
    let real = spelled;
    try {
      real = realpathSync(spelled);
    } catch {
      // a file that does not exist: judged by its spelling
    }
    const { trustKey, cwd } = this.workspace;
    if (inside(real, trustKey)) return slashed(path.relative(trustKey, real));
    for (const root of [trustKey, cwd]) if (inside(spelled, root)) return slashed(path.relative(root, spelled));
    return null;
  }

  /** Whether the file is the workspace's, so it must be loaded through `check`. */
  covers(file: string): boolean {
    return this.keyOf(file) !== null;
  }

  /** Checks (or records) a file's source as the loader read it, before it runs; throws a PinRefusal. */
  check(file: string, source: string): void {
    const key = this.keyOf(file);
    if (key === null) return;
    const hash = hashModuleText(source);
    if (this.recording) {
      this.pins[key] = hash;
      return;
    }
    const pinned = Object.hasOwn(this.pins, key) ? this.pins[key] : undefined;
    if (pinned === hash) return;
    this.refused.push({ path: key, change: pinned ? "modified" : "added" });
    throw new PinRefusal(
      pinned
        ? `${key} changed since the project was trusted, so toolhost does not run it (toolhost trust to review it)`
        : `${key} is not among the files the project's tools imported when it was trusted, so toolhost does not run it (toolhost trust to review it)`,
    );
  }

  /** Refuses a file the guard cannot pin (a native addon: the loader does not read it). */
  refuse(file: string, why: string): never {
    const key = this.keyOf(file) ?? file;
    this.refused.push({ path: key, change: "added" });
    throw new PinRefusal(`${key}: ${why}`);
  }

  /** Starts one tool file's import: its refusals are collected from here. */
  begin(): void {
    this.refused = [];
  }

  /** The refusals since `begin`, one per file. */
  end(): ContentChange[] {
    const seen = new Set<string>();
    const out = this.refused.filter((c) => !seen.has(c.path) && seen.add(c.path));
    this.refused = [];
    return out;
  }

  /** Whether this build recorded the graph (no pins were handed in). */
  get recorded(): boolean {
    return this.recording || this.frozenFromRecording;
  }

  private frozenFromRecording = false;

  /** Ends recording: from now on (calls included) only the recorded files load. */
  freeze(): void {
    if (this.recording) this.frozenFromRecording = true;
    this.recording = false;
  }

  /** The pinned files: what was handed in, or recorded. */
  snapshot(): ModulePins {
    return { ...this.pins };
  }
}
