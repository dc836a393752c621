// `git_diff`: the changes in the working tree, the index or between commits, as a per-file
// summary and a unified patch. It runs git through ctx.shell.exec, so the host checks the call
// against `requires` and kills git on cancel; a large patch is cut by the host into a sidecar file.
import { defineTool, ToolError, z, type ToolContext } from "toolhost";

// A ref the model may pass (main, HEAD~3, v1.2.0, main...HEAD): never one git would read as an option.
const REF = /^(?!-)[\w./~^@{}+-]{1,200}$/;

interface FileStat {
  path: string;
  added: number | null;
  removed: number | null;
}

function parseNumstat(text: string): FileStat[] {
  return text
    .split("\n")
    .map((line) => /^(\d+|-)\t(\d+|-)\t(.+)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map(([, added, removed, path]) => ({
      path: path!,
      // git prints "-" for binary files
      added: added === "-" ? null : Number(added),
      removed: removed === "-" ? null : Number(removed),
    }));
}

async function git(ctx: ToolContext, args: string[], maxOutputBytes?: number) {
  const result = await ctx.shell.exec("git", ["-c", "core.quotePath=false", "--no-pager", ...args], {
    timeoutMs: 60_000,
    maxOutputBytes,
    // Do not take the index lock just to refresh stat data: a diff must not block the user's git.
    env: { GIT_OPTIONAL_LOCKS: "0" },
  });
  if (result.exit_code !== 0) {
    const stderr = result.stderr.trim();
    if (/not a git repository/i.test(stderr)) throw new ToolError("not_found", "The workspace is not inside a git repository");
    throw new ToolError("execution_failed", `git ${args.join(" ")} failed: ${stderr || `exit ${result.exit_code}`}`);
  }
  return result;
}

export default defineTool({
  id: "git_diff",
  description:
    "Show what changed in the git repository: unstaged changes by default, staged ones with `staged`, or against a commit, branch or tag with `ref` (also `main...HEAD` for a branch's own changes). Returns added/removed line counts per file and the unified diff; `stat` skips the diff. Limit to some files with `paths`.",
  kind: "read",
  parameters: z.object({
    ref: z
      .string()
      .regex(REF, "a commit, branch, tag or range such as main...HEAD")
      .optional()
      .describe("Compare against this commit, branch, tag or range (default: the index, i.e. unstaged changes)"),
    staged: z.boolean().default(false).describe("Staged changes: the index against HEAD (or against ref)"),
    paths: z.array(z.string().min(1)).max(100).optional().describe("Only these files or folders, relative to the workspace"),
    stat: z.boolean().default(false).describe("Only the per-file counts, without the diff"),
    context: z.number().int().min(0).max(100).default(3).describe("Lines of context around each change"),
  }),
  requires: { shell: [{ cmd: "git" }], fs: { read: ["{workspace}/**"] } },
  output: { field: "diff", maxBytes: 100 * 1024 },
  title: (args) => ["git diff", args.staged ? "--cached" : "", args.ref ?? "", ...(args.paths ?? [])].filter(Boolean).join(" "),

  async execute({ ref, staged, paths, stat, context }, ctx) {
    // Paths go through the scoped fs first: nothing outside the workspace reaches git.
    const files = await Promise.all((paths ?? []).map((p) => ctx.fs.resolve(p, "read")));
    const base = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", ...(staged ? ["--cached"] : []), ...(ref ? [ref] : [])];
    const numstat = await git(ctx, [...base, "--numstat", "--", ...files]);
    const summary = parseNumstat(numstat.stdout);
    const result = {
      ref: ref ?? null,
      staged,
      files: summary,
      added: summary.reduce((n, f) => n + (f.added ?? 0), 0),
      removed: summary.reduce((n, f) => n + (f.removed ?? 0), 0),
    };
    if (stat || summary.length === 0) return result;
    const patch = await git(ctx, [...base, `-U${context}`, "--", ...files], 16 * 1024 * 1024);
    // Past 16 MB the shell keeps head and tail; the whole patch is in its sidecar.
    return { ...result, diff: patch.stdout, ...(patch.truncated ? { full_diff_path: patch.output_path } : {}) };
  },
});
