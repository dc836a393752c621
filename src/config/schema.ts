import * as z from "zod";
import { readConfigFile } from "./file.js";
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

/**
 * `~/.toolhost/config.json` (file.ts peeks at `model`, `profile`, `providers` and `sandbox` without zod:
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
     * The user's permission rules. Each rule is validated by policy/ruleset.ts (config/ may not
     * import policy/), so one broken rule is reported by its index and the rest of the file stays.
     */
    permissions: z.array(z.unknown()).optional(),
    /**
     * `"off"` runs every command unsandboxed, without extra prompts (default `"on"`: the OS sandbox
     * wherever it can run). Read from the user's file only: a project cannot switch it off.
     */
    sandbox: z
      .union([
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
          })
          .strict(),
      ])
      .optional(),
    /** The web_search tool's providers and bounds; without it the tool is not offered. */
    webSearch: WebSearchConfigSchema.optional(),
    /**
     * MCP servers by name, as Claude Code, Cursor and Zed users write them: `{ command, args?, env?, cwd? }`
     * or `{ url, headers?, type?: "http" | "sse" }`. Each entry is validated by mcp/servers.ts, so one
     * broken server is reported by name and the others (and the rest of the file) stay.
     */
    mcpServers: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export type UserConfig = z.infer<typeof UserConfigSchema>;

export interface LoadedConfig {
  config: UserConfig;
  path: string;
  /** A problem reading or validating the file; the config is then empty. */
  error?: string;
}

/** Reads the user config. A missing file is an empty config; a broken one is reported, never fatal. */
export function loadUserConfig(home = toolhostHome()): LoadedConfig {
  const raw = readConfigFile(home);
  if (raw.error) return { config: {}, path: raw.path, error: raw.error };
  if (raw.json === undefined) return { config: {}, path: raw.path };
  const parsed = UserConfigSchema.safeParse(raw.json);
  if (parsed.success) return { config: parsed.data, path: raw.path };
  return { config: {}, path: raw.path, error: `${raw.path}: ${z.prettifyError(parsed.error)}` };
}
