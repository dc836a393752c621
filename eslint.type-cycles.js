// toolhost/no-type-cycle: an import cycle closed by `import type`. import-x/no-cycle skips type-only
// imports by design (they vanish at run time), but a cycle through types still ties two modules
// into one unit and always comes back as a value cycle. Reported at the type-only import that
// closes the cycle; pure value cycles are import-x's.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

/** file → { mtimeMs, targets }: every relative import of a file on disk, type-only or not. */
const importCache = new Map();

/** Resolves a relative specifier the way NodeNext TypeScript does ("./x.js" is ./x.ts on disk). */
function resolveRelative(fromFile, specifier) {
  if (!specifier.startsWith(".")) return undefined;
  const base = path.resolve(path.dirname(fromFile), specifier);
  const candidates = [base, `${base}.ts`, path.join(base, "index.ts")];
  if (/\.[cm]?js$/.test(base)) candidates.unshift(base.replace(/js$/, "ts"));
  return candidates.find((file) => fs.statSync(file, { throwIfNoEntry: false })?.isFile());
}

function importsOf(file) {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (!stat) return [];
  const cached = importCache.get(file);
  if (cached?.mtimeMs === stat.mtimeMs) return cached.targets;
  // A scan, not a parse: static imports, `export … from`, `import type` and import("…") alike.
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true);
  const targets = importedFiles.map(({ fileName }) => resolveRelative(file, fileName)).filter(Boolean);
  importCache.set(file, { mtimeMs: stat.mtimeMs, targets });
  return targets;
}

/** The shortest import route from `start` back to `goal`, or undefined. */
function routeBack(start, goal) {
  const previous = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const next of importsOf(file)) {
      if (next === goal) {
        const route = [file];
        for (let at = previous.get(file); at !== undefined; at = previous.get(at)) route.unshift(at);
        return route;
      }
      if (!previous.has(next)) {
        previous.set(next, file);
        queue.push(next);
      }
    }
  }
  return undefined;
}

const isTypeOnly = (node) =>
  node.importKind === "type" ||
  node.exportKind === "type" ||
  (node.type === "ImportDeclaration" && node.specifiers.length > 0 && node.specifiers.every((s) => s.importKind === "type"));

export const noTypeCycle = {
  meta: {
    type: "problem",
    docs: { description: "Forbid import cycles that are closed by a type-only import." },
    schema: [],
    messages: { cycle: "Type-only import closes a cycle: {{route}}." },
  },
  create(context) {
    const filename = context.physicalFilename;
    const declarations = [];
    const collect = (node) => {
      if (node.source && typeof node.source.value === "string") declarations.push(node);
    };
    return {
      ImportDeclaration: collect,
      ExportNamedDeclaration: collect,
      ExportAllDeclaration: collect,
      "Program:exit"() {
        const valueTargets = new Set(
          declarations.filter((node) => !isTypeOnly(node)).map((node) => resolveRelative(filename, node.source.value)),
        );
        for (const node of declarations) {
          if (!isTypeOnly(node)) continue;
          const target = resolveRelative(filename, node.source.value);
          // Imported by value too: a cycle through this edge is import-x's, or is reported at
          // the type-only edge further along it.
          if (!target || target === filename || valueTargets.has(target)) continue;
          const route = routeBack(target, filename);
          if (!route) continue;
          const names = [filename, ...route, filename].map((file) => path.relative(context.cwd, file));
          context.report({ node: node.source, messageId: "cycle", data: { route: names.join(" → ") } });
        }
      },
    };
  },
};
