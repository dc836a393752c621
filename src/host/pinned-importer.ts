import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { JitiOptions } from "jiti";
import type { ModuleGuard } from "./module-pins.js";
import type { JitiTransform } from "./transform.js";

// The importer of a trusted project's tools: jiti as for any extension, but every workspace file
// it evaluates passes through the build's ModuleGuard first, as the very string that then runs.
// jiti reads a file and hands its source to the transform, so the transform is where the check
// sits (and jiti's transpile cache is off: a cache hit would skip it). The files jiti would hand
// to Node instead (`.cjs`, a CommonJS `.js`, `.json`, an `.mjs` imported with `import()`) come to
// this importer's `createRequire` and `nativeImport`, which jiti takes from its caller: a workspace
// file is read here, checked, and evaluated by jiti from that string; anything else goes to Node.

type JitiInstance = {
  import<T>(id: string): Promise<T>;
  evalModule(source: string, options: Record<string, unknown>): unknown;
};
type CreateJitiInternal = (
  id: string,
  options: JitiOptions,
  parent: { onError(err: unknown): never; nativeImport(id: string): Promise<unknown>; createRequire: typeof createRequire },
) => JitiInstance;

const require = createRequire(import.meta.url);

/** jiti's own factory, which takes the native import and createRequire (its public one fixes them). */
function jitiFactory(): CreateJitiInternal {
  const root = path.dirname(require.resolve("jiti/package.json"));
  return require(path.join(root, "dist", "jiti.cjs")) as CreateJitiInternal;
}

/** Imports one project tool file under `guard`; the tool's later imports stay under it. */
export function pinnedImporter(
  guard: ModuleGuard,
  options: { transform: JitiTransform; virtualModules: Record<string, unknown> },
): (file: string) => Promise<Record<string, unknown>> {
  // Files jiti meant Node to load as CommonJS: evaluated as written (no ESM transform, no "use strict").
  const commonJs = new Set<string>();
  const transform: JitiTransform = (opts) => {
    if (opts.filename) guard.check(opts.filename, opts.source);
    if (opts.filename && commonJs.has(opts.filename)) return { code: opts.source };
    return options.transform(opts);
  };

  /** A workspace file jiti would hand to Node: read once here, checked, run from that string. */
  const loadWorkspaceFile = (file: string, async: boolean): unknown => {
    if (file.endsWith(".node"))
      guard.refuse(file, "a native addon in the workspace cannot be pinned by trust, so toolhost does not load it");
    const source = readFileSync(file, "utf8");
    if (file.endsWith(".json")) {
      guard.check(file, source);
      const value = JSON.parse(source) as unknown;
      if (value && typeof value === "object" && !("default" in value))
        Object.defineProperty(value, "default", { value, enumerable: false });
      return value;
    }
    if (!async || file.endsWith(".cjs")) commonJs.add(file);
    return jiti.evalModule(source, { id: file, filename: file, ext: path.extname(file), async, forceTranspile: true });
  };

  const guardedRequire = (from: string | URL): NodeJS.Require => {
    const real = createRequire(from);
    const load = (id: string): unknown => {
      let resolved: string;
      try {
        resolved = real.resolve(id);
      } catch {
        return real(id); // Node's own error
      }
      // Loaded by its resolved path: a second resolution could land elsewhere.
      return path.isAbsolute(resolved) && guard.covers(resolved) ? loadWorkspaceFile(resolved, false) : real(resolved);
    };
    return Object.assign(load, { resolve: real.resolve, cache: real.cache, extensions: real.extensions, main: real.main });
  };

  const nativeImport = async (id: string): Promise<unknown> => {
    const file = id.startsWith("file:") ? fileURLToPath(id) : id;
    if (path.isAbsolute(file) && guard.covers(file)) return loadWorkspaceFile(file, true);
    return import(id);
  };

  const jiti: JitiInstance = jitiFactory()(
    import.meta.url,
    { transform, moduleCache: false, fsCache: false, interopDefault: false, virtualModules: options.virtualModules },
    {
      onError: (err) => {
        throw err;
      },
      nativeImport,
      createRequire: guardedRequire as typeof createRequire,
    },
  );
  return (file) => jiti.import<Record<string, unknown>>(file);
}
