import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import { absolutize, displayPath } from "../tool/paths.js";
import type { LspItem } from "../tool/services.js";

// lsp: the session's language servers asked directly (issue 25 §3), outside the locked set like
// `process`: a file's diagnostics, where a symbol is defined or used, its type, the file's or the
// project's symbols. Each answer is a list of `path:line:col text`, and the editor gets the places
// as locations to follow. The servers are the ones the diagnostics after an edit use (ctx.host.lsp).

const ACTIONS = ["diagnostics", "definition", "references", "hover", "symbols"] as const;
const AT_POSITION: ReadonlySet<string> = new Set(["definition", "references", "hover"]);

const parameters = z
  .object({
    action: z.enum(ACTIONS),
    path: z.string().min(1),
    line: z.number().int().positive().optional(),
    character: z.number().int().positive().optional(),
    query: z.string().optional(),
  })
  .superRefine((args, ctx) => {
    if (AT_POSITION.has(args.action) && args.line === undefined)
      ctx.addIssue({ code: "custom", message: `${args.action} needs a line (and a character)`, path: ["line"] });
  });

type Args = z.output<typeof parameters>;

interface LspResult {
  server: string;
  /** The answer as the model reads it. */
  text: string;
  /** The places it names (absolute, 1-based lines), for the editor to follow. */
  locations: { path: string; line: number }[];
}

/** Each place once, at most 50. */
function places(items: readonly LspItem[]): LspResult["locations"] {
  const seen = new Map<string, { path: string; line: number }>();
  for (const { path, line } of items) if (seen.size < 50) seen.set(`${path}:${line}`, { path, line });
  return [...seen.values()];
}

const at = (args: Args) => (args.line === undefined ? "" : `:${args.line}${args.character === undefined ? "" : `:${args.character}`}`);

export default defineTool({
  id: "lsp",
  kind: "read",
  description:
    "Ask the language server about code: diagnostics of a file; definition, references, hover at path:line:character (1-based); symbols (the file's, or with query the project's). Answers are path:line:col lines.",
  parameters,
  requires: { fs: { read: ["{workspace}/**", "{ad-hoc}/**"] } },
  title: (args) => `LSP ${args.action} ${args.path}${at(args)}${args.query ? ` "${args.query}"` : ""}`,
  locations: (args, { workspace }) => [{ path: absolutize(args.path, workspace), ...(args.line ? { line: args.line } : {}) }],
  async execute(args, ctx): Promise<LspResult> {
    const lsp = ctx.host.lsp;
    if (!lsp) throw new ToolError("unavailable", 'Language servers are off in this session ("lsp": false in config.json).');
    const abs = await ctx.fs.resolve(args.path, "read");
    const answer = await lsp.query(
      { action: args.action, path: abs, line: args.line, character: args.character, query: args.query },
      ctx.signal,
    );
    const lines = answer.items.map((item) => `${displayPath(item.path, ctx.workspace)}:${item.line}:${item.column} ${item.text}`);
    const what =
      args.action === "hover"
        ? answer.text || "Nothing to show at that position."
        : lines.join("\n") || `No ${args.action === "diagnostics" ? "problems" : "results"}.`;
    const text = [what, ...(answer.note ? [answer.note] : [])].join("\n\n");
    return { server: answer.server, text, locations: places(answer.items) };
  },
  display: (data) => ({ text: data.text, locations: data.locations }),
});
