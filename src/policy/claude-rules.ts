import path from "node:path";
import { readConfigTextSync } from "../config/safe-read.js";
import type { PermissionRule } from "./rules.js";

// Claude Code's permission rules (issue 34 §4): `permissions.allow/deny/ask` of its settings files
// (`~/.claude/settings.json`, a project's `.claude/settings.json` and `.claude/settings.local.json`)
// read as toolhost rules, with Claude's tool names mapped as the hooks map them:
//   Bash, Bash(npm test), Bash(npm run test:*), Bash(git * main)   bash, its command line
//   Read(path), Edit(path)                                         fs.read, fs.write over the path
//   Write(path), Glob, Grep, WebSearch, Task, TodoWrite, …         the tool (its path for Write)
//   WebFetch, WebFetch(domain:example.com)                         web_fetch, its host
//   mcp__server__tool, mcp__server, mcp__server__*                 the MCP tool, every tool of the server
// A path: `//x` is absolute, `~/x` in the home folder, `/x` relative to the settings' root (the
// project, or the home folder for the user's file), `x` and `./x` relative to the workspace; a
// pattern without a `/` matches at any depth, as in gitignore. `:*` is a prefix: an allow covers
// the command alone or followed by arguments, a deny or ask any line that starts so.
// What cannot be read fails closed: a file that is not JSON, `permissions` of the wrong shape, a
// deny or ask rule toolhost cannot map (its tool, or every call, asks). A setting toolhost has no
// use for (another key, a tool it does not have) is a note, said once.

type Action = PermissionRule["action"];

/** The rules of one settings file, what is wrong with it, and what toolhost does not use of it. */
export interface ClaudeRules {
  rules: (PermissionRule & { claude?: string; failClosed?: string })[];
  problems: string[];
  notes: string[];
}

/** Claude Code's tool names and toolhost's permission for them (a tool id or a capability). */
const TOOLS: Readonly<Record<string, { permission: string; spec?: "command" | "path" | "host" }>> = {
  Bash: { permission: "bash", spec: "command" },
  Read: { permission: "fs.read", spec: "path" },
  Edit: { permission: "fs.write", spec: "path" },
  MultiEdit: { permission: "fs.write", spec: "path" },
  Write: { permission: "write", spec: "path" },
  Glob: { permission: "glob" },
  Grep: { permission: "grep" },
  WebFetch: { permission: "web_fetch", spec: "host" },
  WebSearch: { permission: "web_search" },
  Task: { permission: "task" },
  TodoWrite: { permission: "todo" },
  BashOutput: { permission: "process" },
  KillShell: { permission: "process" },
  Skill: { permission: "skill" },
};

/** Keys of a settings file toolhost reads (hooks are read by host/hooks/). */
const USED_KEYS = new Set(["permissions", "hooks", "disableAllHooks", "$schema"]);
const LISTS: readonly Action[] = ["allow", "deny", "ask"];

const GLOB = /[\\?[\]{}!*]/g;
const escape = (text: string, keepStar = false) => text.replace(GLOB, (c) => (keepStar && c === "*" ? c : `\\${c}`));
const mcpPart = (part: string) => part.toLowerCase().replace(/[^a-z0-9_]+/g, "_");

/** One rule string as toolhost rules; a string when it cannot be mapped (why), null for a tool toolhost does not have. */
function mapRule(text: string, action: Action, root: string): { permission: string; pattern: string }[] | string | null {
  const match = /^([A-Za-z][A-Za-z0-9_]*)(?:\(([\s\S]*)\))?$/.exec(text.trim());
  if (!match) return "it is not Tool or Tool(specifier)";
  const [, name = "", spec] = match;
  if (name.startsWith("mcp__")) {
    if (spec !== undefined) return "an MCP rule takes no specifier";
    const [server, tool, ...rest] = name.slice(5).split("__");
    if (!server || rest.length) return "it is not mcp__server or mcp__server__tool";
    return [{ permission: `mcp__${mcpPart(server)}__${tool && tool !== "*" ? mcpPart(tool) : "*"}`, pattern: "*" }];
  }
  const tool = TOOLS[name];
  if (!tool) return null;
  const permission = tool.permission;
  if (spec === undefined || spec === "" || spec === "*") return [{ permission, pattern: "*" }];
  switch (tool.spec) {
    case "command": {
      if (!spec.endsWith(":*")) return [{ permission, pattern: escape(spec.trim(), true) }];
      const prefix = escape(spec.slice(0, -2).trim());
      // A prefix: an allow covers the command alone or with arguments; a deny or ask, any line that starts so.
      return action === "allow"
        ? [
            { permission, pattern: prefix },
            { permission, pattern: `${prefix} *` },
          ]
        : [{ permission, pattern: `${prefix}*` }];
    }
    case "path": {
      const pattern = spec.startsWith("//")
        ? spec.slice(1)
        : spec.startsWith("~/")
          ? spec
          : spec.startsWith("/")
            ? path.join(root, spec)
            : spec.replace(/^\.\//, "").replace(/\/$/, "/**");
      return [
        { permission, pattern: pattern.startsWith("/") || pattern.startsWith("~") || pattern.includes("/") ? pattern : `**/${pattern}` },
      ];
    }
    case "host": {
      const host = /^domain:(.+)$/.exec(spec)?.[1]?.trim();
      return host ? [{ permission, pattern: host.toLowerCase() }] : "WebFetch takes domain:HOST";
    }
    default:
      return `${name} takes no specifier in toolhost`;
  }
}

/** The permission a rule that cannot be mapped meant: its tool's, or every call (`*`) when that is not known. */
function meant(text: string): string {
  const name = /^([A-Za-z][A-Za-z0-9_]*)/.exec(text.trim())?.[1] ?? "";
  return TOOLS[name]?.permission ?? "*";
}

/** The rules of one Claude Code settings object (`root`: where `/x` paths start). */
export function claudeRulesOf(json: unknown, file: string, root: string): ClaudeRules {
  const out: ClaudeRules = { rules: [], problems: [], notes: [] };
  const closed = (why: string, permission = "*") => out.rules.push({ permission, pattern: "*", action: "ask", failClosed: why });
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    closed("the file is not a JSON object");
    out.problems.push(`${file}: it is not a JSON object; until it is fixed every call asks (fail closed)`);
    return out;
  }
  const settings = json as Record<string, unknown>;
  const unused = Object.keys(settings).filter((k) => !USED_KEYS.has(k));
  const permissions = settings.permissions;
  if (permissions !== undefined && (typeof permissions !== "object" || permissions === null || Array.isArray(permissions))) {
    closed("its permissions are not an object");
    out.problems.push(
      `${file}: permissions must be an object of allow, deny and ask lists; until it is fixed every call asks (fail closed)`,
    );
  } else if (permissions) {
    const lists = permissions as Record<string, unknown>;
    unused.push(
      ...Object.keys(lists)
        .filter((k) => !(LISTS as readonly string[]).includes(k))
        .map((k) => `permissions.${k}`),
    );
    for (const action of LISTS) {
      const list = lists[action];
      if (list === undefined) continue;
      if (!Array.isArray(list)) {
        if (action === "allow") out.problems.push(`${file}: permissions.allow must be a list of rules (left out)`);
        else {
          closed(`permissions.${action} is not a list`);
          out.problems.push(`${file}: permissions.${action} must be a list of rules; until it is fixed every call asks (fail closed)`);
        }
        continue;
      }
      list.forEach((item: unknown, i) => {
        const at = `permissions.${action}[${i}] ${JSON.stringify(item)}`;
        const mapped = typeof item === "string" ? mapRule(item, action, root) : "it is not a string";
        if (mapped === null) {
          out.notes.push(`${file}: ${at}: toolhost has no such tool (not used)`);
          return;
        }
        if (typeof mapped !== "string") {
          for (const rule of mapped) out.rules.push({ ...rule, action, claude: item as string });
          return;
        }
        if (action === "allow") {
          out.problems.push(`${file}: ${at}: ${mapped} (left out)`);
          return;
        }
        const permission = typeof item === "string" ? meant(item) : "*";
        closed(`${at} could not be read`, permission);
        out.problems.push(
          `${file}: ${at}: ${mapped}; until it is fixed ${permission === "*" ? "every call" : `every ${permission} call`} asks (fail closed)`,
        );
      });
    }
  }
  if (unused.length)
    out.notes.push(`${file}: ${unused.map((k) => JSON.stringify(k)).join(", ")}: Claude Code settings toolhost does not use`);
  return out;
}

/** Reads one settings file (a regular file inside `roots`); a missing file has no rules. */
export function readClaudeRules(file: string, roots: readonly string[], root: string): ClaudeRules {
  const { text, error } = readConfigTextSync(file, roots);
  const broken = (why: string): ClaudeRules => ({
    rules: [{ permission: "*", pattern: "*", action: "ask", failClosed: `the file ${why}` }],
    problems: [`${file}: ${why}; until it is fixed every call asks (fail closed)`],
    notes: [],
  });
  if (error) return broken(`could not be read (${error})`);
  if (text === null) return { rules: [], problems: [], notes: [] };
  try {
    return claudeRulesOf(JSON.parse(text), file, root);
  } catch (err) {
    return broken(`is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
}
