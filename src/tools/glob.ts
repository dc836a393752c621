import path from "node:path";
import picomatch from "picomatch";
import * as z from "zod";
import type { ToolContext } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import { absolutize, displayPath, isInside } from "../tool/paths.js";

/** RFC default: the 1001st entry triggers truncation (the host writes the sidecar). */
export const GLOB_MAX_SHOWN = 1000;
/** Files listed before the listing stops; keeps memory bounded on huge trees. */
const LIST_CEILING = 100_000;
const TIMEOUT_MS = 30_000;

const parameters = z.object({
  pattern: z.string().min(1).describe('"*.ts" top level only, "**/*.ts" any depth'),
  path: z.string().min(1).optional().describe("Directory (default: the workspace)"),
  limit: z
    .number()
    .int()
    .min(1)
    .max(GLOB_MAX_SHOWN)
    .optional()
    .describe(`Show at most this many paths (default and max ${GLOB_MAX_SHOWN})`),
});

type Args = z.output<typeof parameters>;

export interface GlobData {
  root: string;
  pattern: string;
  files: string[];
  total: number;
  /** The listing stopped early: total is a lower bound. */
  limited?: true;
  notice?: string;
}

/**
 * "**\/*.ts", "**\/*.d.ts": any depth, a name of one star and literal extensions. The engine's
 * file-name filter ("*.ts", dot files included, case-sensitive) keeps exactly these files, so
 * the listing needs no second match.
 */
const ANY_DEPTH_EXTENSION = /^\*\*\/\*(\.[\w-]+)+$/;

/** Lists `dir` (absolute) and keeps the paths, relative to `root`, that match `pattern`. */
async function matchUnder(ctx: ToolContext, root: string, pattern: string) {
  // List only below the pattern's literal base ("src" of "src/**/*.ts"): less for rg to walk.
  const scan = picomatch.scan(pattern);
  const base = scan.isGlob ? scan.base : "";
  const dir = base ? path.join(root, base) : root;
  if (base) {
    const s = await ctx.fs.stat(dir);
    if (s?.type !== "directory") return { all: [] as string[], matched: [] as string[], limited: false };
  }
  // The pattern lets the engine list only files whose name can match ("*.ts" of "**/*.ts").
  const listing = await ctx.search.files({ path: dir, maxResults: LIST_CEILING, timeoutMs: TIMEOUT_MS, glob: pattern });
  const prefix = base ? `${base.replace(/\/+$/, "")}/` : "";
  const all = prefix ? listing.files.map((f) => prefix + f) : listing.files;
  if (ANY_DEPTH_EXTENSION.test(pattern)) return { all, matched: all, limited: listing.limited };
  const isMatch = picomatch(pattern, { dot: true });
  return { all, matched: all.filter((f) => isMatch(f)), limited: listing.limited };
}

/** glob: files by pattern, via ripgrep's listing (so .gitignore is honoured and .git skipped). */
export default defineTool({
  id: "glob",
  kind: "search",
  description: [
    "List files whose path (relative to `path`) matches a glob, sorted; respects .gitignore, includes dot files.",
    'E.g. "**/*.ts", "{src,test}/**/*.ts". Use grep to search file contents.',
  ].join(" "),
  parameters,
  requires: { fs: { read: ["{workspace}/**", "{ad-hoc}/**"] } },
  output: { field: "files", maxItems: GLOB_MAX_SHOWN, formatItem: (f) => String(f) },
  title: (args) => `glob ${JSON.stringify(args.pattern)}${args.path ? ` in ${args.path.replace(/\/?$/, "/")}` : ""}`,
  locations: (args, { workspace }) => (args.path ? [{ path: absolutize(args.path, workspace) }] : []),
  shorthand: (text) => ({ pattern: text.trim() }),
  shorthandHint: "a glob pattern",
  async execute(args: Args, ctx): Promise<GlobData> {
    let root = await ctx.fs.resolve(args.path ?? ".", "read");
    let pattern = args.pattern.replace(/^\.\//, "");

    if (path.isAbsolute(pattern)) {
      // "/abs/ws/src/**/*.ts": inside the root it becomes relative; elsewhere its literal base is the root.
      if (isInside(pattern, root) && pattern !== root) {
        pattern = path.relative(root, pattern).split(path.sep).join("/");
      } else {
        const scan = picomatch.scan(pattern);
        const base = scan.isGlob ? scan.base || "/" : path.dirname(pattern);
        root = await ctx.fs.resolve(base, "read");
        pattern = scan.isGlob ? scan.glob : path.basename(pattern);
      }
    }

    // "../lib/*.ts" from path "src": climb first, so results stay plain relative paths (and get checked).
    if (pattern.startsWith("../")) {
      while (pattern.startsWith("../")) {
        root = path.dirname(root);
        pattern = pattern.slice(3);
      }
      root = await ctx.fs.resolve(root, "read");
    }

    // The listing starts at once; the stat beside it only words the error when root is no directory.
    const listing = matchUnder(ctx, root, pattern).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    const info = await ctx.fs.stat(root);
    if (!info) {
      throw new ToolError(
        "not_found",
        `Directory not found: ${displayPath(root, ctx.workspace)}. Check the path, or glob from the workspace root.`,
      );
    }
    if (info.type !== "directory") {
      throw new ToolError(
        "invalid_arguments",
        `${displayPath(root, ctx.workspace)} is a file; glob lists the files below a directory. Use read to open a file.`,
      );
    }

    const first = await listing;
    if ("error" in first) throw first.error;
    let result = first.value;
    // "src/**/*.ts" with path "src": the model repeated the directory; try the pattern without it.
    const rootRel = displayPath(root, ctx.workspace);
    if (!result.matched.length && rootRel !== "." && !path.isAbsolute(rootRel) && pattern.startsWith(`${rootRel}/`)) {
      const stripped = pattern.slice(rootRel.length + 1);
      const retry = await matchUnder(ctx, root, stripped);
      if (retry.matched.length) {
        result = retry;
        pattern = stripped;
      }
    }

    const prefix = rootRel === "." ? "" : rootRel.endsWith("/") ? rootRel : `${rootRel}/`;
    const files = (prefix ? result.matched.map((f) => prefix + f) : result.matched.slice()).sort();
    const data: GlobData = { root: rootRel, pattern, files, total: files.length };
    const notices: string[] = [];
    if (result.limited) {
      data.limited = true;
      notices.push(`The listing stopped after ${LIST_CEILING} files, so more matches may exist; narrow path or pattern.`);
    }
    if (!files.length) {
      const deepMatch = picomatch(`**/${pattern}`, { dot: true });
      const deeper = pattern.includes("/") ? 0 : result.all.filter((f) => deepMatch(f)).length;
      notices.push(
        deeper
          ? `No files match ${JSON.stringify(pattern)} directly in ${rootRel}; ${deeper} match at deeper levels: use "**/${pattern}".`
          : `No files match ${JSON.stringify(pattern)} in ${rootRel} (files ignored by .gitignore are not listed).`,
      );
    } else if (args.limit !== undefined && files.length > args.limit) {
      data.files = files.slice(0, args.limit);
      notices.push(
        `Showing ${args.limit} of ${files.length} files; raise limit (max ${GLOB_MAX_SHOWN}) or narrow the pattern to see the rest.`,
      );
    }
    if (notices.length) data.notice = notices.join(" ");
    return data;
  },
  display: (data) => ({ text: [...data.files, data.notice].filter(Boolean).join("\n") || "(no files)" }),
});
