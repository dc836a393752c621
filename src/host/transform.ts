import * as fsp from "node:fs/promises";
import { createRequire, isBuiltin } from "node:module";
import path from "node:path";
import type { TransformOptions, TransformResult } from "jiti";

/** jiti's `transform` option: source in, CommonJS out (run in jiti's module wrapper). */
export type JitiTransform = (opts: TransformOptions) => TransformResult;

type EsbuildOptions = {
  loader: "ts" | "js";
  format: "cjs";
  target: string;
  sourcefile?: string;
  banner?: string;
  logLevel?: "silent";
};

/** The part of esbuild the transform uses. */
export interface EsbuildLike {
  transformSync(input: string, options: EsbuildOptions): { code: string };
  transform(input: string, options: EsbuildOptions): Promise<{ code: string }>;
}

/** jiti's transform, plus what lets a cold start transpile a folder in one parallel batch. */
export interface EsbuildTransform {
  transform: JitiTransform;
  /** Starts a batch of `file`'s folder, file included: for a start known to be cold (an empty cache). */
  prefetch(file: string): void;
  /** Resolves once the batches started so far are in (at once when none is running). */
  settled(): Promise<void>;
}

// Constructs only jiti's own transform handles exactly: `import()` and `import.meta` become its
// jitiImport / paths / jitiESMResolve, which esbuild's CommonJS output cannot express.
const NEEDS_JITI = /\bimport\s*\(|\bimport\s*\.\s*meta\b/;
const REQUIRE_CALL = /\brequire\("((?:[^"\\]|\\.)*)"\)/g;

const require = createRequire(import.meta.url);

/** jiti's default transform (babel), loaded from jiti's own folder when first needed. */
function jitiBabel(): JitiTransform {
  const root = path.dirname(require.resolve("jiti/package.json"));
  return require(path.join(root, "dist", "babel.cjs")) as JitiTransform;
}

/** esbuild, loaded with the first file to transform (a warm cache never needs it); undefined without its platform binary. */
function loadEsbuild(): EsbuildLike | undefined {
  try {
    return require("esbuild") as EsbuildLike;
  } catch {
    return undefined;
  }
}

const esbuildOptions = (filename: string | undefined, ts: boolean | undefined): EsbuildOptions => ({
  loader: ts ? "ts" : "js",
  format: "cjs",
  target: "node20",
  sourcefile: filename,
  // ESM is strict; esbuild's CommonJS output does not say so itself.
  banner: '"use strict";',
  logLevel: "silent",
});

/** Files a batch transpiles ahead: the TypeScript files of a folder (tools and their helpers). */
const BATCHED = /\.[cm]?ts$/;

/**
 * A transform for jiti that runs esbuild (tens of times faster than babel) and hands jiti's own
 * babel transform whatever esbuild's output would not run the same: `import()`, `import.meta`,
 * JSX, top-level await and syntax errors (so their messages stay jiti's), and imports of
 * packages. esbuild's `require()` of a package applies Node's interop, where jiti awaits
 * `import()` and takes `.default`: a package's default export could differ. Imports of
 * `virtualModules`, node built-ins and files (relative or absolute) get the same values both
 * ways: transformed files mark `__esModule`, built-ins and virtual modules are plain objects.
 *
 * jiti's transform is synchronous, and each synchronous esbuild call is a round trip to a worker
 * thread. So the first cache miss in a folder also starts esbuild's asynchronous API on all the
 * folder's TypeScript files at once; the loader awaits `settled()` before its next import, and
 * those files' transforms are then lookups (by file and exact source). When the loader knows the
 * start is cold (jiti's cache folder is empty) it starts the first folder's batch before the first
 * import (`prefetch`). A warm start, where jiti's cache answers, never starts esbuild at all.
 */
export function createEsbuildTransform(
  options: { virtualModules?: Iterable<string>; esbuild?: () => EsbuildLike | undefined } = {},
): EsbuildTransform {
  const virtual = new Set(options.virtualModules ?? []);
  let esbuild: EsbuildLike | undefined | null = null;
  let babel: JitiTransform | undefined;
  const fallback = (opts: TransformOptions): TransformResult => (babel ??= jitiBabel())(opts);
  const sameBothWays = (specifier: string) =>
    virtual.has(specifier) || isBuiltin(specifier) || specifier.startsWith(".") || path.isAbsolute(specifier);
  /** Batch results by file: the source they were made from, and esbuild's code (null: it failed). */
  const ahead = new Map<string, { source: string; code: string | null }>();
  const batchedDirs = new Set<string>();
  const batches = new Set<Promise<void>>();

  const batch = (esb: EsbuildLike, missed: string | undefined, dir = path.dirname(missed ?? "")) => {
    if (batchedDirs.has(dir)) return;
    batchedDirs.add(dir);
    const work = (async () => {
      const names = await fsp.readdir(dir).catch(() => [] as string[]);
      await Promise.all(
        names
          .filter((name) => BATCHED.test(name) && !name.endsWith(".d.ts"))
          .map(async (name) => {
            const file = path.join(dir, name);
            if (file === missed || ahead.has(file)) return;
            const source = await fsp.readFile(file, "utf8").catch(() => null);
            if (source === null || NEEDS_JITI.test(source)) return;
            const code = await esb.transform(source, esbuildOptions(file, true)).then(
              (result) => result.code,
              () => null,
            );
            ahead.set(file, { source, code });
          }),
      );
    })().finally(() => batches.delete(work));
    batches.add(work);
  };

  const ready = () => {
    if (esbuild === null) esbuild = (options.esbuild ?? loadEsbuild)();
    return esbuild;
  };

  const transform: JitiTransform = (opts) => {
    if (opts.jsx || NEEDS_JITI.test(opts.source)) return fallback(opts);
    const esbuild = ready();
    if (!esbuild) return fallback(opts);
    const early = opts.filename ? ahead.get(opts.filename) : undefined;
    let code: string | null;
    if (early && early.source === opts.source && opts.ts) {
      code = early.code;
    } else {
      if (opts.filename) batch(esbuild, opts.filename);
      try {
        code = esbuild.transformSync(opts.source, esbuildOptions(opts.filename, opts.ts)).code;
      } catch {
        code = null;
      }
    }
    if (code === null) return fallback(opts);
    for (const [, specifier] of code.matchAll(REQUIRE_CALL)) {
      if (!sameBothWays(JSON.parse(`"${specifier}"`) as string)) return fallback(opts);
    }
    return { code };
  };

  return {
    transform,
    prefetch: (file) => {
      const esbuild = ready();
      if (esbuild) batch(esbuild, undefined, path.dirname(file));
    },
    settled: async () => {
      while (batches.size) await Promise.all(batches);
    },
  };
}
