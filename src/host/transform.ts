import { createRequire, isBuiltin } from "node:module";
import path from "node:path";
import type { TransformOptions, TransformResult } from "jiti";

/** jiti's `transform` option: source in, CommonJS out (run in jiti's module wrapper). */
export type JitiTransform = (opts: TransformOptions) => TransformResult;

/** The part of esbuild the transform uses. */
export interface EsbuildLike {
  transformSync(
    input: string,
    options: {
      loader: "ts" | "js";
      format: "cjs";
      target: string;
      sourcefile?: string;
      banner?: string;
      logLevel?: "silent";
    },
  ): { code: string };
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

/**
 * A transform for jiti that runs esbuild (tens of times faster than babel) and hands jiti's own
 * babel transform whatever esbuild's output would not run the same: `import()`, `import.meta`,
 * JSX, top-level await and syntax errors (so their messages stay jiti's), and imports of
 * packages. esbuild's `require()` of a package applies Node's interop, where jiti awaits
 * `import()` and takes `.default`: a package's default export could differ. Imports of
 * `virtualModules`, node built-ins and files (relative or absolute) get the same values both
 * ways: transformed files mark `__esModule`, built-ins and virtual modules are plain objects.
 */
export function createEsbuildTransform(
  options: { virtualModules?: Iterable<string>; esbuild?: () => EsbuildLike | undefined } = {},
): JitiTransform {
  const virtual = new Set(options.virtualModules ?? []);
  let esbuild: EsbuildLike | undefined | null = null;
  let babel: JitiTransform | undefined;
  const fallback = (opts: TransformOptions): TransformResult => (babel ??= jitiBabel())(opts);
  const sameBothWays = (specifier: string) =>
    virtual.has(specifier) || isBuiltin(specifier) || specifier.startsWith(".") || path.isAbsolute(specifier);

  return (opts) => {
    if (opts.jsx || NEEDS_JITI.test(opts.source)) return fallback(opts);
    if (esbuild === null) esbuild = (options.esbuild ?? loadEsbuild)();
    if (!esbuild) return fallback(opts);
    let code: string;
    try {
      code = esbuild.transformSync(opts.source, {
        loader: opts.ts ? "ts" : "js",
        format: "cjs",
        target: "node20",
        sourcefile: opts.filename,
        // ESM is strict; esbuild's CommonJS output does not say so itself.
        banner: '"use strict";',
        logLevel: "silent",
      }).code;
    } catch {
      return fallback(opts);
    }
    for (const [, specifier] of code.matchAll(REQUIRE_CALL)) {
      if (!sameBothWays(JSON.parse(`"${specifier}"`) as string)) return fallback(opts);
    }
    return { code };
  };
}
