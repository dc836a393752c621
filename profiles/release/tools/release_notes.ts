// The release profile's own tool: the commits since the last tag, grouped the way release notes
// are written (Conventional Commits: feat, fix, perf, ...), with the semver bump they call for.
import { defineTool, ToolError, z, type ToolContext } from "toolhost";

// A ref the model may pass: a tag, branch, hash or HEAD~n; never something git reads as an option.
const REF = /^(?!-)[\w./~^@{}+-]{1,200}$/;
const LOG_FORMAT = "--format=%H%x1f%an%x1f%s%x1e";

const SECTIONS: [type: string, title: string][] = [
  ["feat", "Features"],
  ["fix", "Fixes"],
  ["perf", "Performance"],
  ["refactor", "Refactoring"],
  ["docs", "Documentation"],
  ["test", "Tests"],
  ["build", "Build and CI"],
  ["ci", "Build and CI"],
  ["chore", "Maintenance"],
];
const CONVENTIONAL = /^(\w+)(?:\(([^)]*)\))?(!)?:\s*(.+)$/;

interface Entry {
  hash: string;
  author: string;
  subject: string;
  scope?: string;
  breaking: boolean;
}

async function git(ctx: ToolContext, args: string[]) {
  const result = await ctx.shell.exec("git", args, { timeoutMs: 30_000, env: { GIT_OPTIONAL_LOCKS: "0" } });
  return { ok: result.exit_code === 0, stdout: result.stdout, stderr: result.stderr.trim() };
}

export default defineTool({
  id: "release_notes",
  description:
    "Release notes from the git history: the commits since the last tag (or a given ref), grouped as Features, Fixes, Performance, … from their Conventional Commit prefixes, with breaking changes marked, a Markdown draft and the semver bump they call for (major, minor or patch).",
  kind: "read",
  parameters: z.object({
    since: z
      .string()
      .regex(REF, "a tag, branch or commit")
      .optional()
      .describe("Start after this tag, branch or commit (default: the latest tag reachable from `until`; all history when there is none)"),
    until: z.string().regex(REF, "a tag, branch or commit").default("HEAD").describe("End at this ref (default HEAD)"),
    max_commits: z.number().int().min(1).max(2000).default(500).describe("Read at most this many commits"),
  }),
  requires: {
    // Exactly the two git commands this tool runs, and nothing else.
    shell: [
      { cmd: "git", args: ["describe", "--tags", "--abbrev=0", { wildcard: true }] },
      { cmd: "git", args: ["log", "--no-merges", { prefix: "--max-count=" }, LOG_FORMAT, { wildcard: true }] },
    ],
    fs: { read: ["{workspace}/**"] },
  },
  title: (args) => `Release notes ${args.since ?? "last tag"}..${args.until}`,

  async execute({ since, until, max_commits }, ctx) {
    let from = since;
    if (from === undefined) {
      const tag = await git(ctx, ["describe", "--tags", "--abbrev=0", until]);
      if (tag.ok) from = tag.stdout.trim();
      else if (!/no names found|cannot describe/i.test(tag.stderr))
        throw new ToolError("execution_failed", `git describe failed: ${tag.stderr}`);
    }
    const range = from ? `${from}..${until}` : until;
    const log = await git(ctx, ["log", "--no-merges", `--max-count=${max_commits}`, LOG_FORMAT, range]);
    if (!log.ok) {
      const notRepo = /not a git repository/i.test(log.stderr);
      throw new ToolError(
        notRepo ? "not_found" : "execution_failed",
        notRepo ? "The workspace is not inside a git repository" : `git log ${range} failed: ${log.stderr}`,
      );
    }

    const groups = new Map<string, Entry[]>();
    for (const record of log.stdout.split("\x1e")) {
      const [hash, author, subject] = record.trim().split("\x1f");
      if (!hash || subject === undefined) continue;
      const match = CONVENTIONAL.exec(subject);
      const known = SECTIONS.find(([t]) => t === match?.[1]?.toLowerCase());
      // "area: subject" without a Conventional type keeps its prefix: it is part of the message.
      const entry: Entry = {
        hash: hash.slice(0, 10),
        author: author ?? "",
        subject: known ? match![4]! : subject,
        scope: (known && match![2]) || undefined,
        breaking: (known !== undefined && match![3] === "!") || /BREAKING CHANGE/.test(subject),
      };
      const title = known?.[1] ?? "Other changes";
      groups.set(title, [...(groups.get(title) ?? []), entry]);
    }

    const order = [...new Set([...SECTIONS.map(([, title]) => title), "Other changes"])];
    const sections = order.filter((title) => groups.has(title)).map((title) => ({ title, entries: groups.get(title)! }));
    const all = sections.flatMap((s) => s.entries);
    const bump = all.some((e) => e.breaking) ? "major" : groups.has("Features") ? "minor" : all.length ? "patch" : "none";
    const line = (e: Entry) =>
      `- ${e.breaking ? "**BREAKING** " : ""}${e.scope ? `**${e.scope}:** ` : ""}${e.subject} (${e.hash.slice(0, 7)})`;
    const markdown = sections.map((s) => `### ${s.title}\n\n${s.entries.map(line).join("\n")}`).join("\n\n");
    return { range, since: from ?? null, until, commits: all.length, suggested_bump: bump, sections, markdown };
  },
});
