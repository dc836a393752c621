import type { AuthMethod } from "@agentclientprotocol/sdk";

// The login as ACP sees it (light: the early reader answers `initialize` with it before the SDK
// loads). `toolhost login` (commands/login.ts) stores a provider's key or URL and a model; the
// editor runs it in a terminal (a `terminal` method), or asks whether a login is there (the
// `agent` method, through `authenticate`). The handlers are in acp/server.ts.

/** The terminal method: the client runs the agent's own command with these args, in a terminal. */
export const TERMINAL_LOGIN_ID = "toolhost-login";
/** The agent method: `authenticate` succeeds when a model and its key or URL are there. */
export const SAVED_LOGIN_ID = "saved-login";

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Whether the client runs terminal methods: `auth.terminal` (the schema's capability), or the
 * `_meta["terminal-auth"]` flag clients sent before it (Zed; the ACP registry's own probe).
 */
export function offersTerminalLogin(caps: unknown): { terminal: boolean; legacy: boolean } {
  if (!isObject(caps)) return { terminal: false, legacy: false };
  const auth = caps.auth;
  const meta = caps._meta;
  const legacy = isObject(meta) && meta["terminal-auth"] === true;
  return { terminal: (isObject(auth) && auth.terminal === true) || legacy, legacy };
}

/** `initialize`'s `authMethods` for a client with these capabilities. */
export function authMethods(caps: unknown): AuthMethod[] {
  const offer = offersTerminalLogin(caps);
  const saved: AuthMethod = {
    id: SAVED_LOGIN_ID,
    name: "Use the saved login or API keys",
    description:
      "A model and its key or URL from `toolhost login`, the agent's environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, TOOLHOST_MODEL…) or ~/.toolhost/config.json. Run `toolhost login` in a terminal first.",
  };
  if (!offer.terminal) return [saved];
  const terminal = {
    id: TERMINAL_LOGIN_ID,
    name: "Log in (toolhost login)",
    description:
      "Choose a model provider, enter its API key or server URL, and pick a model. Stored in ~/.toolhost, readable by you alone.",
    type: "terminal" as const,
    args: ["login"],
    // The older form of the same method, for clients that only know `_meta["terminal-auth"]`: the
    // command to run, this very process's.
    ...(offer.legacy
      ? { _meta: { "terminal-auth": { command: process.execPath, args: [...process.argv.slice(1, 2), "login"], label: "toolhost login" } } }
      : {}),
  };
  return [terminal, saved];
}
