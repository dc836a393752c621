/** Imports a module by a name the bundler cannot see (it constant-folds literals and local constants). */
function importAtRunTime(specifier: string): Promise<Record<string, unknown>> {
  return import(specifier) as Promise<Record<string, unknown>>;
}

/**
 * zod for extension files, loaded only when there are extension files. The CLI bundle ships all
 * of zod as one file beside it (dist/zod.js, one read); from tsc output or src/ the package
 * itself is used. Bundled eagerly, all of zod would sit in the chunk session/new waits for.
 */
export async function loadExtensionZod(): Promise<Record<string, unknown>> {
  try {
    return await importAtRunTime(new URL("../zod.js", import.meta.url).href);
  } catch {
    return importAtRunTime("zod");
  }
}
