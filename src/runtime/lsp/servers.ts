import { existsSync, statSync } from "node:fs";
import path from "node:path";
import type { LspConfig, LspServerConfig } from "../../config/schema.js";

// Which language server serves a file: the built-in definitions (TypeScript/JavaScript, Python,
// Bash) merged with the user's `lsp` config (a new name adds a server, a built-in name changes
// it, `disabled` drops it, `lsp: false` turns them all off); its root (the nearest folder with one
// of its markers, else the workspace); its command (a path from the config, else the root's or the
// workspace's node_modules/.bin, else PATH).

/** One server as the manager uses it. */
export interface LspServerDef {
  name: string;
  command: string;
  args: string[];
  /** File extensions it serves, with the dot (`.ts`). */
  extensions: string[];
  /** Files or folders whose presence makes a folder the server's root. */
  rootMarkers: string[];
  initializationOptions?: unknown;
  /** New warnings count after an edit too. */
  warnings?: boolean;
  /**
   * The built-in TypeScript server: it gets the project's own `typescript` when there is one, and
   * its diagnostics are asked of tsserver (it publishes nothing for a file that stays clean).
   */
  typescript?: boolean;
}

const BUILTIN: readonly LspServerDef[] = [
  {
    name: "typescript",
    command: "typescript-language-server",
    args: ["--stdio"],
    extensions: [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"],
    rootMarkers: ["tsconfig.json", "jsconfig.json", "package.json"],
    typescript: true,
  },
  {
    name: "pyright",
    command: "pyright-langserver",
    args: ["--stdio"],
    extensions: [".py", ".pyi"],
    rootMarkers: ["pyrightconfig.json", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"],
  },
  {
    name: "bash",
    command: "bash-language-server",
    args: ["start"],
    extensions: [".sh", ".bash"],
    rootMarkers: [],
  },
];

const LANGUAGE_IDS: Record<string, string> = {
  ".ts": "typescript",
  ".mts": "typescript",
  ".cts": "typescript",
  ".tsx": "typescriptreact",
  ".js": "javascript",
  ".mjs": "javascript",
  ".cjs": "javascript",
  ".jsx": "javascriptreact",
  ".py": "python",
  ".pyi": "python",
  ".sh": "shellscript",
  ".bash": "shellscript",
};

/** The LSP language id of a file (its extension without the dot for one not known here). */
export function languageId(abs: string): string {
  const ext = path.extname(abs).toLowerCase();
  return LANGUAGE_IDS[ext] ?? ext.slice(1);
}

const dotted = (ext: string) => (ext.startsWith(".") ? ext : `.${ext}`).toLowerCase();

/** The servers of a config: built-ins changed or dropped by it, then its own (a new name needs a command and extensions). */
export function serverDefinitions(config: LspConfig | undefined): { servers: LspServerDef[]; problems: string[] } {
  if (config === false) return { servers: [], problems: [] };
  const entries: Record<string, LspServerConfig> = config ?? {};
  const problems: string[] = [];
  const servers: LspServerDef[] = [];
  for (const builtin of BUILTIN) {
    const entry = entries[builtin.name];
    if (entry?.disabled) continue;
    servers.push(entry ? merge(builtin, entry) : builtin);
  }
  for (const [name, entry] of Object.entries(entries)) {
    if (BUILTIN.some((b) => b.name === name) || entry.disabled) continue;
    if (!entry.command || !entry.extensions?.length) {
      problems.push(`lsp.${name} needs a command and extensions`);
      continue;
    }
    servers.push(merge({ name, command: entry.command, args: [], extensions: [], rootMarkers: [] }, entry));
  }
  return { servers, problems };
}

function merge(base: LspServerDef, entry: LspServerConfig): LspServerDef {
  return {
    ...base,
    command: entry.command ?? base.command,
    args: entry.args ?? base.args,
    extensions: (entry.extensions ?? base.extensions).map(dotted),
    rootMarkers: entry.rootMarkers ?? base.rootMarkers,
    initializationOptions: entry.initializationOptions ?? base.initializationOptions,
    warnings: entry.warnings ?? base.warnings,
  };
}

/** The first server that serves the file's extension. */
export function serverFor(servers: readonly LspServerDef[], abs: string): LspServerDef | undefined {
  const ext = path.extname(abs).toLowerCase();
  return ext ? servers.find((s) => s.extensions.includes(ext)) : undefined;
}

const isFolder = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** The nearest folder at or above the file's with one of the markers, up to the workspace; else the workspace (or, outside it, the file's folder). */
export function serverRoot(def: LspServerDef, abs: string, workspace: string): string {
  const inside = abs.startsWith(workspace + path.sep);
  let dir = path.dirname(abs);
  for (;;) {
    if (def.rootMarkers.some((marker) => existsSync(path.join(dir, marker)))) return dir;
    if (dir === workspace || !inside) break;
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return inside ? workspace : path.dirname(abs);
}

/** The server's executable: a configured path as is (`~/` expanded), else node_modules/.bin of the root or the workspace, else PATH. */
export function findCommand(command: string, roots: readonly string[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (command.startsWith("~/")) command = path.join(env.HOME ?? "", command.slice(2));
  if (command.includes("/")) {
    const abs = path.resolve(roots[0] ?? ".", command);
    return existsSync(abs) ? abs : undefined;
  }
  const dirs = [...roots.map((root) => path.join(root, "node_modules", ".bin")), ...(env.PATH ?? "").split(path.delimiter).filter(Boolean)];
  for (const dir of dirs) {
    const candidate = path.join(dir, command);
    if (existsSync(candidate) && !isFolder(candidate)) return candidate;
  }
  return undefined;
}

/** initializationOptions for the built-in TypeScript server: the project's own tsserver when it has one. */
export function typescriptOptions(def: LspServerDef, roots: readonly string[]): unknown {
  if (!def.typescript) return def.initializationOptions;
  const own = roots.map((root) => path.join(root, "node_modules", "typescript", "lib", "tsserver.js")).find((p) => existsSync(p));
  if (!own) return def.initializationOptions;
  const given = (def.initializationOptions ?? {}) as Record<string, unknown>;
  return { ...given, tsserver: { path: own, ...(given.tsserver as object | undefined) } };
}
