import * as fsp from "node:fs/promises";
import path from "node:path";
import { readConfinedFile } from "../../config/safe-read.js";
import { utf8Head } from "../../tool/truncate.js";

/** Used when the active profile brings no prompt of its own. */
export const DEFAULT_PROMPT = `You are toolhost, a coding agent working inside the user's editor on the project in the working directory.

- Use the tools to look before you act: search (grep, glob) and read files instead of guessing their content.
- Change files with edit (exact string replacement) or write; read a file before you edit it. Keep changes minimal and in the project's style.
- Run commands with bash when they help (tests, builds, git status); explain anything destructive first.
- Delegate broad searches or independent pieces of work with task (several task calls in one step run in parallel); give each a complete prompt.
- Tool results are JSON. A result that was cut short names a file with the full output: read or grep it when you need the rest.
- A tool call can be refused by the user or the session's mode; then do not retry the same call, explain what you wanted to do.
- When a decision is the user's to make (unclear requirements, a choice between approaches), ask with question rather than guess; do not ask what you can find out yourself.
- Answer concisely in Markdown. When you changed something, say what and where.`;

/** Project instructions larger than this are cut: they are context, not the task. */
const MAX_INSTRUCTIONS_BYTES = 32 * 1024;

export interface SystemPromptOptions {
  cwd: string;
  /** The active profile's prompt (replaces the default prompt). */
  profilePrompt?: string;
  /** The session's skills, listed one line each (the skill tool loads one). */
  skills?: readonly { name: string; description: string }[];
  platform?: string;
  date?: Date;
}

/** Whether `dir` or one of its parents holds `.git` (a folder, or a file for worktrees). */
export async function isGitRepo(dir: string): Promise<boolean> {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    if (
      await fsp.stat(path.join(current, ".git")).then(
        () => true,
        () => false,
      )
    )
      return true;
    if (path.dirname(current) === current) return false;
  }
}

/**
 * The project's agent instructions: AGENTS.md, else CLAUDE.md, in the working directory. Only a
 * regular file inside it (config/safe-read.ts); a refused one is skipped with a line on stderr.
 */
export async function projectInstructions(cwd: string): Promise<{ file: string; text: string } | undefined> {
  for (const name of ["AGENTS.md", "CLAUDE.md"]) {
    const file = path.join(cwd, name);
    // A few bytes over the cap, so the cut lands on a whole character.
    const read = await readConfinedFile(file, { roots: [cwd], maxBytes: MAX_INSTRUCTIONS_BYTES + 4 });
    if (!read.ok) {
      if (!read.missing) process.stderr.write(`toolhost: ${read.reason}\n`);
      continue;
    }
    const text = read.data.toString("utf8");
    const bytes = read.size;
    if (bytes <= MAX_INSTRUCTIONS_BYTES) return { file: name, text };
    const head = utf8Head(text, MAX_INSTRUCTIONS_BYTES);
    return { file: name, text: `${head}\n… [cut at ${MAX_INSTRUCTIONS_BYTES} of ${bytes} bytes; read ${file} for the rest]` };
  }
  return undefined;
}

export async function buildSystemPrompt(options: SystemPromptOptions): Promise<string> {
  const [git, instructions] = await Promise.all([isGitRepo(options.cwd), projectInstructions(options.cwd)]);
  const date = (options.date ?? new Date()).toISOString().slice(0, 10);
  const sections = [
    options.profilePrompt?.trim() || DEFAULT_PROMPT,
    [
      "# Environment",
      `- Working directory: ${options.cwd}`,
      `- Platform: ${options.platform ?? process.platform}`,
      `- Date: ${date}`,
      `- Git repository: ${git ? "yes" : "no"}`,
    ].join("\n"),
  ];
  if (options.skills?.length) {
    sections.push(
      [
        "# Skills",
        "Load a skill with the skill tool when the task matches its description, then follow it:",
        ...options.skills.map((s) => `- ${s.name}: ${s.description}`),
      ].join("\n"),
    );
  }
  if (instructions) {
    sections.push(`# Project instructions (${instructions.file})\n\n${instructions.text.trim()}`);
  }
  return sections.join("\n\n");
}
