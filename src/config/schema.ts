import * as z from "zod";
import { BudgetSchema } from "./budget.js";
import { readConfigFile, type ConfigFile } from "./file.js";
import { toolhostHome } from "./paths.js";

const ProviderSettings = z
  .object({
    apiKey: z.string().optional(),
    baseURL: z.string().optional(),
  })
  .strict();

const HttpURL = z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" });

/** A provider with an API key: from the environment (BRAVE_API_KEY…, or the variable `apiKeyEnv` names) or `apiKey`. */
const keyedProvider = <T extends "brave" | "tavily" | "exa">(type: T) =>
  z
    .object({
      type: z.literal(type),
      apiKey: z.string().min(1).optional(),
      apiKeyEnv: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
        .optional(),
      baseURL: HttpURL.optional(),
    })
    .strict();

const WebSearchProviderEntry = z.discriminatedUnion(
  "type",
  [
    z.object({ type: z.literal("searxng"), baseURL: HttpURL }).strict(),
    keyedProvider("brave"),
    keyedProvider("tavily"),
    keyedProvider("exa"),
  ],
  { error: 'each provider needs "type": "searxng", "brave", "tavily" or "exa"' },
);

export type WebSearchConfig = z.infer<typeof WebSearchConfigSchema>;

/** `webSearch`: the providers web_search may use and the RFC's bounds (config/web-search.ts resolves it). */
export const WebSearchConfigSchema = z
  .object({
    providers: z.array(WebSearchProviderEntry).min(1, "list at least one provider"),
    maxCallsPerSession: z.number().int().min(1).max(10_000).optional(),
    timeoutMs: z.number().int().min(1000).max(120_000).optional(),
  })
  .strict();

/** One language server of `lsp` (a built-in's name changes that one; any other name adds a server). */
export const LspServerSchema = z
  .object({
    /** The executable: a name looked up in node_modules/.bin and on PATH, or a path. */
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    /** File extensions it serves (`.ts` or `ts`). */
    extensions: z.array(z.string().min(1)).optional(),
    /** Files whose folder is the server's root (the nearest one above the file). */
    rootMarkers: z.array(z.string().min(1)).optional(),
    initializationOptions: z.unknown().optional(),
    /** Report new warnings after an edit too (default: errors only). */
    warnings: z.boolean().optional(),
    disabled: z.boolean().optional(),
  })
  .strict();
export type LspServerConfig = z.infer<typeof LspServerSchema>;

/** `lsp`: `false` turns language servers off; else servers by name (runtime/lsp/servers.ts merges them with the built-ins). */
export const LspConfigSchema = z.union([z.literal(false), z.record(z.string(), LspServerSchema)], {
  error: "must be false or { name: { command, args, extensions, rootMarkers, initializationOptions, warnings, disabled } }",
});
export type LspConfig = z.infer<typeof LspConfigSchema>;

/**
 * `~/.toolhost/config.json` (file.ts peeks at `model`, `profile`, `providers`, `sandbox` and `checkpoints` without zod:
 * keep the two in step). Every field is optional; the most specific source wins elsewhere
 * (ACP config option, then environment, then this file).
 */
export const UserConfigSchema = z
  .object({
    /** Default model, `provider/model` (e.g. `anthropic/claude-sonnet-4-5`). */
    model: z.string().optional(),
    /** Provider keys and endpoints by provider id (anthropic, openai, ollama, openai-compatible). */
    providers: z.record(z.string(), ProviderSettings).optional(),
    /** Default profile name. */
    profile: z.string().optional(),
    /** Extra tool folders, searched after the profile's and the project's. */
    toolDirs: z.array(z.string()).optional(),
    /**
     * The user's permission rules, as written: policy/ruleset.ts validates them (config/ may not
     * import policy/), each rule on its own, and fails closed where one cannot be read.
     */
    permissions: z.unknown().optional(),
    /**
     * `"off"` runs every command unsandboxed, without extra prompts (default `"on"`: the OS sandbox
     * wherever it can run). Read from the user's file only: a project cannot switch it off.
     */
    sandbox: z
      .union(
        [
          z.enum(["on", "off"]),
          z
            .object({
              mode: z.enum(["on", "off"]).optional(),
              /** More variables sandboxed commands (and MCP servers) get: names, or `PREFIX_*`. */
              env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*\*?$/, "must be a variable name or PREFIX_*")).optional(),
              /** More paths hidden from sandboxed commands: absolute, or `~/` for the home folder. */
              denyRead: z
                .array(z.string().refine((p) => p.startsWith("/") || p.startsWith("~/"), "must be absolute or start with ~/"))
                .optional(),
              /** Sandboxed commands may create unix sockets (default false: refused, but in a call with allowed hosts). */
              allowUnixSockets: z.boolean().optional(),
            })
            .strict(),
        ],
        { error: 'must be "on", "off" or { mode, env, denyRead, allowUnixSockets }' },
      )
      .optional(),
    /** The web_search tool's providers and bounds; without it the tool is not offered. */
    webSearch: WebSearchConfigSchema.optional(),
    /**
     * `false` takes no checkpoints of the workspace (default on: a snapshot before each prompt's first
     * change, in a shadow git repository under `~/.toolhost/checkpoints/`, for rewind).
     */
    checkpoints: z.boolean().optional(),
    /**
     * MCP servers by name, as Claude Code, Cursor and Zed users write them: `{ command, args?, env?, cwd? }`
     * or `{ url, headers?, type?: "http" | "sse" }`. Each entry is validated by mcp/servers.ts, so one
     * broken server is reported by name and the others (and the rest of the file) stay.
     */
    mcpServers: z.record(z.string(), z.unknown()).optional(),
    /**
     * Lifecycle hooks by event (`tool_call`, or Claude Code's `PreToolUse`…), in Claude Code's shape.
     * Each entry is checked by host/hooks/config.ts on its own, so a bad one is reported by name.
     */
    hooks: z.unknown().optional(),
    /** The caps of an editor session (config/budget.ts; a profile may replace them, a trusted project only lower them). */
    budget: BudgetSchema.optional(),
    /** Language servers for diagnostics after edits and the lsp tool (runtime/lsp/); `false`: none. */
    lsp: LspConfigSchema.optional(),
    /** How long a model request may wait for its first part and between parts, and how often it is retried (agent/model/request-limits.ts). */
    modelRequest: z
      .object({
        firstByteTimeoutMs: z.number().int().min(1).optional(),
        idleTimeoutMs: z.number().int().min(1).optional(),
        retries: z.number().int().min(0).max(20).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type UserConfig = z.infer<typeof UserConfigSchema>;

export interface LoadedConfig {
  config: UserConfig;
  path: string;
  /**
   * What is wrong with the file, one problem a line, each naming the key; a broken key is left
   * out (its default applies) and the other keys hold. Undefined when the file is fine.
   */
  error?: string;
  /** The same problems without the file's name in front (empty when the file is fine). */
  problems: string[];
  /**
   * The file exists but could not be read as a JSON object (invalid JSON, refused): its
   * permission rules are unknown, so policy/ruleset.ts makes every call ask (fail closed).
   */
  unreadable?: boolean;
}

/** What a broken key falls back to, for the message. */
const FALLBACK: Partial<Record<keyof UserConfig, string>> = {
  model: "no model from the file",
  profile: "the default profile",
  sandbox: "the sandbox stays on and passes nothing extra",
  webSearch: "web_search is not offered",
  providers: "no provider settings from the file",
  toolDirs: "no extra tool folders",
  mcpServers: "no MCP servers from the file",
  checkpoints: "checkpoints stay on",
  budget: "no budget from the file",
  lsp: "the built-in language servers",
  modelRequest: "the default timeouts (120 s) and retries (3)",
};

/**
 * Reads the user config. A missing file is an empty config; a broken one is reported, never fatal.
 * Each key is validated on its own: a bad value (`"model": 42`) is reported by name and falls back
 * to its default, and every other key (the permission rules above all) still holds.
 */
export function loadUserConfig(home = toolhostHome()): LoadedConfig {
  return parseUserConfig(readConfigFile(home));
}

/** A config file already read (a session's, read once at its start), validated key by key as `loadUserConfig` says. */
export function parseUserConfig(raw: ConfigFile): LoadedConfig {
  if (raw.error) {
    const problem = raw.error.startsWith(`${raw.path} is `) ? raw.error.slice(raw.path.length + 4) : raw.error;
    return { config: {}, path: raw.path, error: raw.error, problems: [problem], unreadable: true };
  }
  if (raw.json === undefined) return { config: {}, path: raw.path, problems: [] };
  if (typeof raw.json !== "object" || raw.json === null || Array.isArray(raw.json))
    return {
      config: {},
      path: raw.path,
      error: `${raw.path}: must be a JSON object`,
      problems: ["must be a JSON object"],
      unreadable: true,
    };
  const shape = UserConfigSchema.shape;
  const config: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, value] of Object.entries(raw.json)) {
    if (!Object.hasOwn(shape, key)) {
      problems.push(`unknown key "${key}" (ignored)`);
      continue;
    }
    // Parsed under its key, so each message says where (`→ at webSearch.providers[0].type`).
    const parsed = z.object({ [key]: shape[key as keyof typeof shape] }).safeParse({ [key]: value });
    if (parsed.success) config[key] = parsed.data[key];
    else {
      const detail = z.prettifyError(parsed.error).replace(/✖ /g, "");
      problems.push(`"${key}" is ignored (${FALLBACK[key as keyof UserConfig] ?? "its default applies"}): ${detail}`);
    }
  }
  if (!problems.length) return { config: config as UserConfig, path: raw.path, problems };
  return { config: config as UserConfig, path: raw.path, error: problems.map((p) => `${raw.path}: ${p}`).join("\n"), problems };
}
