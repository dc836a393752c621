import * as fsp from "node:fs/promises";
import path from "node:path";
import type { AnyTool } from "../tool/define.js";
import { checkExtensionTool } from "./extension-check.js";
import { checkExtensionHooks, type ExtensionHook } from "./hooks/extension.js";
import { guardProcessExit, watchStalls } from "./extension-guards.js";
import { loadExtensionZod } from "./extension-zod.js";
import { createEsbuildTransform } from "./transform.js";
import { toolhostHome } from "../config/paths.js";
import type { ContentChange } from "./trust-contents.js";
import type { ModuleGuard } from "./module-pins.js";
import { pinnedImporter } from "./pinned-importer.js";

/** A problem with a file, a folder or a profile: reported, never thrown. */
export interface LoadProblem {
  file: string;
  message: string;
  /** The tool id, when the problem is one tool's. */
  id?: string;
  /** Workspace files the file imports that are not the ones trusted: the file was not loaded. */
  untrusted?: ContentChange[];
}

export interface LoadedFile {
  file: string;
  /** The file's valid tools, in export order. */
  tools: AnyTool[];
  /** Its in-process hooks (the `hooks` export), checked; absent when it exports none. */
  hooks?: ExtensionHook[];
  problems: LoadProblem[];
}

/** Imports a module file as the extension loader does (jiti, "toolhost" handed in), with its timeout. */
export type ImportModule = (file: string) => Promise<Record<string, unknown>>;

/**
 * Loads an extension file's tools; the host's loader can also import a plain module (a profile's
 * watchdog). `guard`: a trusted project's file, whose workspace imports must be the pinned ones.
 */
export type LoadFile = ((file: string, options?: { guard?: ModuleGuard }) => Promise<LoadedFile>) & { importModule?: ImportModule };

/** What an extension file gets when it imports "toolhost": the host's public entry, without `z`. */
export type ExtensionApi = Record<string, unknown>;

export interface LoaderOptions {
  /**
   * The "toolhost" module, handed in by the front end (the host sits below the public entry, so
   * it cannot import it). Called once, with the first file; the loader adds all of zod as `z`.
   */
  api: () => Promise<ExtensionApi>;
  /** jiti's transpile cache (content-addressed); default `~/.toolhost/cache/jiti`, false for none. */
  cacheDir?: string | false;
  /** An import that has not settled by then is reported and skipped (default 10 s). */
  importTimeoutMs?: number;
}

const TOOL_EXTENSIONS = new Set([".ts", ".mts", ".js"]);

/**
 * Whether a file name in a tools folder is a tool file. `_helpers.ts` and dot files are for
 * the tools to import, `*.d.ts` are types, and tests sit beside their tools.
 */
export function isToolFileName(name: string): boolean {
  if (name.startsWith("_") || name.startsWith(".") || name.endsWith(".d.ts")) return false;
  if (/\.(test|spec)\.[cm]?[jt]s$/.test(name)) return false;
  return TOOL_EXTENSIONS.has(path.extname(name));
}

/** The tool files of a folder (absolute, sorted by name). A missing folder has none. */
export async function listToolFiles(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const files: string[] = [];
  for (const entry of entries) {
    if (!isToolFileName(entry.name)) continue;
    const abs = path.join(dir, entry.name);
    // A symlinked tool file counts; a symlinked folder named like one does not.
    if (entry.isFile() || (entry.isSymbolicLink() && (await fsp.stat(abs).catch(() => null))?.isFile())) files.push(abs);
  }
  return files.sort();
}

function describeImportError(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // jiti prefixes syntax errors with the transform's stack; the first lines say what and where.
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(0, 6)
    .join("\n");
}

/** The values a module exports as tools: `default` (a tool or a list) and `tools` (a list); a file may export only `hooks`. */
function exportedTools(mod: Record<string, unknown>): { values: unknown[]; problems: string[] } {
  const values: unknown[] = [];
  const problems: string[] = [];
  if (mod.default !== undefined) values.push(...(Array.isArray(mod.default) ? mod.default : [mod.default]));
  if (mod.tools !== undefined) {
    if (Array.isArray(mod.tools)) values.push(...mod.tools);
    else problems.push("the `tools` export must be an array of tools");
  }
  // CommonJS: module.exports = defineTool({...})
  if (!values.length && typeof mod.execute === "function" && typeof mod.id === "string") values.push(mod);
  if (!values.length && !problems.length && mod.hooks === undefined) {
    problems.push("the file exports no tool: use `export default defineTool({...})` or `export const tools = [...]`");
  }
  return { values: [...new Set(values)], problems };
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

type Importer = ((file: string) => Promise<Record<string, unknown>>) & {
  /** The importer of a trusted project's files, under the build's guard (module-pins.ts). */
  pinned(guard: ModuleGuard): (file: string) => Promise<Record<string, unknown>>;
};

/** jiti with `toolhost` mapped to the handed-in API plus all of zod. */
async function createImporter(options: LoaderOptions): Promise<Importer> {
  const fsCache = options.cacheDir ?? path.join(toolhostHome(), "cache", "jiti");
  const [{ createJiti }, api, zod, cold] = await Promise.all([
    import("jiti"),
    options.api(),
    loadExtensionZod(),
    // No cache (or an empty one): every file will need transpiling.
    fsCache === false
      ? true
      : fsp.readdir(fsCache).then(
          (names) => names.length === 0,
          () => true,
        ),
  ]);
  // esbuild, with jiti's own babel transform for what only it handles (see transform.ts).
  const esbuild = createEsbuildTransform({ virtualModules: ["toolhost"] });
  const virtualModules = { toolhost: { ...api, z: zod.z ?? zod } };
  const jiti = createJiti(import.meta.url, {
    transform: esbuild.transform,
    moduleCache: false,
    fsCache,
    interopDefault: false,
    virtualModules,
  });
  let first = cold;
  const importFile = async (file: string) => {
    if (first) esbuild.prefetch(file);
    first = false;
    await esbuild.settled(); // a cold folder's batch, started above or by the previous file's cache miss
    return jiti.import<Record<string, unknown>>(file);
  };
  const pinned = new WeakMap<ModuleGuard, (file: string) => Promise<Record<string, unknown>>>();
  return Object.assign(importFile, {
    pinned: (guard: ModuleGuard) => {
      let importer = pinned.get(guard);
      if (!importer) pinned.set(guard, (importer = pinnedImporter(guard, { transform: esbuild.transform, virtualModules })));
      return importer;
    },
  });
}

/**
 * An extension loader: jiti imports each file fresh (no module cache, so a reload sees edits,
 * also in the files it imports), and `toolhost` resolves to the API the front end hands in (the
 * running toolhost's own public entry), so a drop-in file needs no node_modules and shares this
 * process's zod and ToolError. jiti, the API and zod load with the first file: a session
 * without extension files never pays for them, and one loader serves every rebuild.
 */
export function createExtensionLoader(options: LoaderOptions): LoadFile {
  let importer: Promise<Importer> | undefined;
  const ready = () =>
    (importer ??= createImporter(options).catch((err: unknown) => {
      importer = undefined; // let the next build try again
      throw err;
    }));
  const timeoutMs = options.importTimeoutMs ?? 10_000;

  const load: LoadFile = async (file, loadOptions = {}) => {
    const importer = await ready(); // a broken install throws, as before: no file is to blame
    const importFile = loadOptions.guard ? importer.pinned(loadOptions.guard) : importer;
    const loaded: LoadedFile = { file, tools: [], problems: [] };
    guardProcessExit(file);
    let mod: Record<string, unknown>;
    try {
      mod = await withTimeout(importFile(file), timeoutMs, "the import");
    } catch (err) {
      loaded.problems.push({ file, message: `failed to import: ${describeImportError(err)}` });
      return loaded;
    }
    const { values, problems } = exportedTools(mod ?? {});
    for (const message of problems) loaded.problems.push({ file, message });
    if (mod?.hooks !== undefined) {
      const checked = checkExtensionHooks(mod.hooks);
      loaded.hooks = checked.hooks;
      for (const message of checked.problems) loaded.problems.push({ file, message });
    }
    const seen = new Set<string>();
    values.forEach((value, index) => {
      const checked = checkExtensionTool(value);
      if (!checked.ok) {
        const label = checked.id ? `tool "${checked.id}"` : `export #${index + 1}`;
        loaded.problems.push({ file, id: checked.id, message: `${label}: ${checked.problems.join("; ")}` });
      } else if (seen.has(checked.tool.id)) {
        loaded.problems.push({ file, id: checked.tool.id, message: `tool "${checked.tool.id}" is exported twice by this file` });
      } else {
        seen.add(checked.tool.id);
        loaded.tools.push(watchStalls(checked.tool));
      }
    });
    return loaded;
  };
  const importModule: ImportModule = async (file) => {
    guardProcessExit(file);
    return withTimeout((await ready())(file), timeoutMs, "the import");
  };
  return Object.assign(load, { importModule });
}
