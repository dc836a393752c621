// The early path in one file. esbuild's code splitting gives each set of entries that share code a
// chunk of its own, so what `toolhost` loads before it answers `session/new` (the CLI, the early
// reader of acp/stdio.ts and the handful of modules they use) was 22 files of 54 KB, and Node's
// module loader pays per file (resolve, open, read, compile, link: about 1.5 ms each here, more
// than the code itself). This step, run on the split build's output, bundles those chunks into
// one, `dist/chunks/early.js`, and leaves each of them as a one-line re-export of it: every module
// still exists once (the chunks that import them get the same instances, through the stubs), and
// the CLI imports the early file directly. Dynamic imports stay as they were (the merged file sits
// in the same folder as the chunks it came from, so their relative paths and import.meta.url hold).
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";

const EARLY = "dist/chunks/early.js";

/** Every output reached from `start` by static imports (the outputs themselves included). */
function staticClosure(outputs, start) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file) || !outputs[file]) return;
    seen.add(file);
    for (const imported of outputs[file].imports) if (imported.kind === "import-statement" && !imported.external) visit(imported.path);
  };
  for (const file of start) visit(file);
  return seen;
}

/**
 * Merges the CLI's static imports (with the ACP entry, acp/stdio.ts, among them) into EARLY.
 * `metafile` is the split build's; `banner` the one its chunks start with.
 */
export async function bundleEarlyPath(metafile, banner) {
  const { outputs } = metafile;
  const cli = "dist/cli.js";
  if (!outputs[cli]) throw new Error("early-bundle: no dist/cli.js in the build");
  const starts = outputs[cli].imports.filter((i) => i.kind === "import-statement").map((i) => i.path);
  const merged = [...staticClosure(outputs, starts)].filter((file) => file.startsWith("dist/chunks/")).sort();
  if (![cli, ...merged].some((file) => Object.keys(outputs[file].inputs).includes("src/acp/stdio.ts")))
    throw new Error("early-bundle: src/acp/stdio.ts is not among the CLI's static imports");

  // The entry: each merged chunk's exports under names of its own (chunks all export a, b, c…).
  const alias = (index, name) => `c${index}_${name}`;
  const entry = merged
    .map((file, index) => {
      const names = outputs[file].exports;
      const from = JSON.stringify(`./${path.basename(file)}`);
      return names.length ? `export { ${names.map((n) => `${n} as ${alias(index, n)}`).join(", ")} } from ${from};` : `import ${from};`;
    })
    .join("\n");
  await build({
    stdin: { contents: entry, resolveDir: "dist/chunks", sourcefile: "early-entry.js", loader: "js" },
    outfile: EARLY,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20.19",
    minify: true,
    sourcemap: "linked",
    packages: "external",
    banner: { js: banner },
    logLevel: "warning",
    plugins: [
      {
        // What the merged chunks load later (the SDK's connection, a session's modules) stays a
        // separate file, loaded when it is now.
        name: "dynamic-imports-stay",
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) => (args.kind === "dynamic-import" ? { path: args.path, external: true } : undefined));
        },
      },
    ],
  });

  // Each merged chunk becomes a re-export of the early file.
  merged.forEach((file, index) => {
    const names = outputs[file].exports;
    writeFileSync(
      file,
      names.length
        ? `export { ${names.map((n) => `${alias(index, n)} as ${n}`).join(", ")} } from "./early.js";\n`
        : `import "./early.js";\n`,
    );
    rmSync(`${file}.map`, { force: true });
  });

  // The CLI imports the early file itself, not the stubs: each `import{a as I,b}from"./chunks/chunk-X.js";`
  // becomes spaces of its length (the source map's columns hold) and its renamed form joins the
  // banner's line, which maps to nothing.
  const indexOf = new Map(merged.map((file, index) => [`./chunks/${path.basename(file)}`, index]));
  const lines = readFileSync(cli, "utf8").split("\n");
  const bannerLine = lines.indexOf(banner);
  if (bannerLine < 0) throw new Error("early-bundle: dist/cli.js has no banner line");
  const moved = [];
  for (let i = bannerLine + 1; i < lines.length; i++) {
    lines[i] = lines[i].replace(/import(?:\{([^}]*)\})?(?:from)?"(\.\/chunks\/[^"]+\.js)";/g, (whole, bindings, specifier) => {
      const index = indexOf.get(specifier);
      if (index === undefined) return whole;
      const renamed = (bindings ?? "")
        .split(",")
        .filter((binding) => binding.trim())
        .map((binding) => {
          const [name, local = name] = binding.trim().split(/\s+as\s+/);
          return `${alias(index, name)} as ${local}`;
        });
      moved.push(renamed.length ? `import{${renamed.join(",")}}from"./chunks/early.js";` : `import"./chunks/early.js";`);
      return " ".repeat(whole.length);
    });
  }
  lines[bannerLine] += moved.join("");
  const source = lines.join("\n");
  const left = [...indexOf.keys()].filter((specifier) => source.includes(`from"${specifier}"`) || source.includes(`import"${specifier}"`));
  if (left.length) throw new Error(`early-bundle: dist/cli.js still imports ${left.join(", ")}`);
  writeFileSync(cli, source);
  return { merged: merged.length, bytes: readFileSync(EARLY).length };
}
