import type { AnyTool } from "../tool/define.js";
import bash from "../tools/bash.js";
import edit from "../tools/edit.js";
import glob from "../tools/glob.js";
import grep from "../tools/grep.js";
import lsp from "../tools/lsp.js";
import processTool from "../tools/process.js";
import question from "../tools/question.js";
import read from "../tools/read.js";
import skill from "../tools/skill.js";
import task from "../tools/task.js";
import todo from "../tools/todo.js";
import toolSearch from "../tools/tool_search.js";
import webFetch from "../tools/web_fetch.js";
import webSearch from "../tools/web_search.js";
import write from "../tools/write.js";
import { ToolRegistry } from "./registry.js";

/** The locked tools this build implements, in the RFC's order, then the builtins outside the locked set (`process`, `lsp`). */
export const BUILTIN_TOOLS: readonly AnyTool[] = [
  read,
  write,
  edit,
  glob,
  grep,
  bash,
  todo,
  task,
  question,
  webSearch,
  webFetch,
  skill,
  toolSearch,
  processTool,
  lsp,
];

export function builtinRegistry(): ToolRegistry {
  const registry = new ToolRegistry();
  for (const tool of BUILTIN_TOOLS) registry.register(tool, "builtin");
  return registry;
}
