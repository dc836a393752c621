import { statSync } from "node:fs";
import path from "node:path";
import { isReadOnlyKind } from "../../tool/kinds.js";
import { displayPath, isInside } from "../../tool/paths.js";
import { gitDirLayout, projectControlPath } from "../../tool/project-control.js";
import { realPath } from "../../config/real-path.js";
import type { CheckInput, Finding, WatchdogCheck } from "./shell.js";

// Files that other programs later run as code, outside any sandbox (tool/project-control.ts):
// a file tool that writes one is asked about in every mode, `full` and `accept-edits` included,
// naming the program that would run it. A symlink inside the workspace that leads to one counts.
// A repository's own folder need not be named `.git` (a bare layout): a write that makes one, or
// writes into one, counts as `.git`. Commands need no such check here: the sandbox shows these
// paths read-only (and quarantines new repositories), and a command outside it is asked about anyway.

/** Who runs what lies under each entry of PROJECT_CONTROL_PATHS. */
const RUNS_IT: Record<string, string> = {
  ".git": "git runs later (hooks, and config keys that name programs)",
  ".toolhost": "toolhost loads in a trusted project's next session (tools, agents, skills, permission rules)",
  ".mcp.json": "the next session reads to start the MCP servers it names",
  ".claude": "Claude Code reads for its settings, hooks, agents and skills",
  ".vscode": "VS Code reads for its tasks, launch configurations and the programs its settings name",
  ".idea": "JetBrains IDEs read for their run configurations and tools",
  ".zed": "Zed reads for its tasks and the language servers it starts",
  ".devcontainer": "the dev container tooling reads for its lifecycle commands",
  ".envrc": "direnv runs on entering the folder",
  ".husky": "git runs as hooks (through husky)",
  ".pre-commit-config.yaml": "pre-commit reads for the hooks it runs on every commit",
  ".nvim.lua": "Neovim runs on opening the folder",
  ".exrc": "Vim and Neovim run on opening the folder",
  ".dir-locals.el": "Emacs evaluates on opening a file below it",
};

/**
 * Whether git takes `dir` for a repository's own folder once `target` is written (a bare layout,
 * tool/project-control.ts's rule). Its `config` then runs for the user's git there
 * (`core.worktree` gives it a work tree, `core.fsmonitor` a program), and no name in it is `.git`:
 * a file tool that completes or writes into that layout is asked about as `.git` is.
 */
function gitDirShaped(dir: string, target: string): boolean {
  return gitDirLayout((name) => {
    const p = path.join(dir, name);
    const folder = name === "objects" || name === "refs";
    if (target === p || (folder && isInside(target, p))) return true;
    try {
      const stat = statSync(p, { throwIfNoEntry: false });
      return folder ? stat?.isDirectory() === true : stat !== undefined;
    } catch {
      return false; // not to be looked at: git cannot either
    }
  });
}

/** The folder of `abs` and each one above it, up to the workspace root that holds it. */
function foldersUp(abs: string, roots: readonly string[]): string[] {
  const root = roots.find((r) => isInside(abs, r) && abs !== r);
  if (!root) return [];
  const folders: string[] = [];
  for (let dir = path.dirname(abs); isInside(dir, root); dir = path.dirname(dir)) {
    folders.push(dir);
    if (dir === root) break;
  }
  return folders;
}

function controlled(abs: string, roots: readonly string[]): string | null {
  const real = realPath(abs);
  const realRoots = roots.map(realPath);
  const named = projectControlPath(abs, roots) ?? projectControlPath(real, roots) ?? projectControlPath(real, realRoots);
  if (named) return named;
  return foldersUp(real, realRoots).some((dir) => gitDirShaped(dir, real)) ? ".git" : null;
}

export const projectConfigCheck: WatchdogCheck = {
  name: "project-config",
  check({ call }: CheckInput): Finding | null {
    if (isReadOnlyKind(call.tool.kind) || call.tool.kind === "execute") return null;
    for (const target of call.targets.paths) {
      const entry = controlled(target, call.roots);
      if (!entry) continue;
      const shown = displayPath(target, call.roots[0] ?? path.dirname(target));
      const runs = RUNS_IT[entry] ?? "another program runs later";
      return { action: "ask", reason: `${call.tool.id} writes ${shown}, which ${runs}, outside the sandbox` };
    }
    return null;
  },
};
