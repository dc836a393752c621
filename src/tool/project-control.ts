import path from "node:path";

// Paths inside a workspace whose contents other programs (git, the editor, direnv, toolhost's
// next session) later run as code, outside any sandbox. A sandboxed command sees them read-only,
// and write/edit of them asks in every mode: a file planted there would run later without the
// user's say. One list for the sandbox and the watchdog, so the two never disagree.

/** Names, relative to a workspace root, of files and folders that hold code or config run later. */
export const PROJECT_CONTROL_PATHS: readonly string[] = [
  ".git", // hooks, config keys that execute (core.fsmonitor, core.pager, aliases with `!`…)
  ".toolhost", // a trusted project's tools, agents, skills and permission rules
  ".mcp.json", // MCP servers the next session starts
  ".claude", // settings, agents, skills, hooks
  ".vscode", // tasks, launch configurations, settings that name executables
  ".idea",
  ".zed", // tasks, language-server binaries
  ".devcontainer", // lifecycle commands
  ".envrc", // direnv runs it on cd
  ".husky", // git hooks when core.hooksPath points here
  ".pre-commit-config.yaml",
  ".nvim.lua", // Neovim's exrc
  ".exrc",
  ".dir-locals.el",
];

/**
 * Whether git takes a folder for a repository's own (a bare layout: no name in it is `.git`):
 * `HEAD`, and `objects` and `refs` or a `commondir`. `has` says whether the folder has an entry
 * (the sandbox's map of folders, the watchdog's view of the disk after a write).
 */
export function gitDirLayout(has: (name: "HEAD" | "objects" | "refs" | "commondir") => boolean): boolean {
  return has("HEAD") && ((has("objects") && has("refs")) || has("commondir"));
}

/**
 * The entry of `PROJECT_CONTROL_PATHS` that `abs` is or lies below, for any of `roots` (also any
 * nested `.git`); null when it is none. Lexical: callers resolve symlinks first.
 */
export function projectControlPath(abs: string, roots: readonly string[]): string | null {
  for (const root of roots) {
    const rel = path.relative(root, abs);
    if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) continue;
    const parts = rel.split(path.sep);
    const first = parts[0] as string;
    if (PROJECT_CONTROL_PATHS.includes(first)) return first;
    // A nested repository's hooks run for the user's `git commit` in that folder just the same.
    if (parts.slice(0, -1).includes(".git") || parts.at(-1) === ".git") return ".git";
  }
  return null;
}
