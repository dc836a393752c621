/**
 * A worker's file, found from the module that starts it (pass its `import.meta.url`). Built, the
 * worker sits beside that module: tsc's output, or the CLI bundle's dist/chunks/ (scripts/bundle.mjs
 * checks each starter lands there). From src/ (the tests) the built one in dist/ is used, since a
 * worker cannot load TypeScript.
 */
export function workerFile(starterUrl: string, name: string): URL {
  if (!starterUrl.endsWith(".ts")) return new URL(`./${name}`, starterUrl);
  const at = starterUrl.lastIndexOf("/src/");
  return new URL(`./${name}`, `${starterUrl.slice(0, at)}/dist/${starterUrl.slice(at + "/src/".length)}`);
}
