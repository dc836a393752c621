import type * as v1 from "@agentclientprotocol/sdk";
import type * as v2 from "@agentclientprotocol/sdk/experimental/v2/unstable";

// The v2 answers to `initialize` and `session/new` as mappings of the v1 agent's, light on purpose
// (types only from the SDK): the v2 side (v2/agent.ts) maps its inner agent's answers with them,
// and the early reader (acp/stdio.ts) gives the same answers before the SDK has loaded.

/** The MCP transports a v2 client may give (v2 has no SSE). */
export const MCP: v2.McpCapabilities = { stdio: {}, http: {} };

/** A v2 `initialize` (asking for 2 or later, without v1's clientCapabilities or clientInfo): the v2 side's. */
export function isV2Initialize(params: Record<string, unknown>): boolean {
  return (
    typeof params.protocolVersion === "number" &&
    params.protocolVersion >= 2 &&
    !("clientCapabilities" in params) &&
    !("clientInfo" in params)
  );
}

/** The v2 client's capabilities as the inner agent's client has them: form elicitation, the terminal login, plan operations. */
export function v1Capabilities(caps: v2.ClientCapabilities | undefined): v1.ClientCapabilities {
  return {
    ...(caps?.elicitation?.form != null ? { elicitation: { form: {} } } : {}),
    ...(caps?.auth?.terminal != null ? { auth: { terminal: true } } : {}),
    // plan_update with items: v2's only plans.
    plan: {},
    // Told of the turns the agent starts by itself, to show them as v2 states.
    _meta: { toolhost: { ownTurns: true } },
  } as v1.ClientCapabilities;
}

/** A v1 auth method as v2's: `methodId` for `id`, the type always said, a terminal method's env as a list. */
function authMethod(method: v1.AuthMethod): v2.AuthMethod {
  const { id, name, description } = method;
  const described = description ? { description } : {};
  if (!("type" in method) || method.type !== "terminal") return { type: "agent", methodId: id, name, ...described };
  const env = Object.entries(method.env ?? {}).map(([envName, value]) => ({ name: envName, value }));
  return { type: "terminal", methodId: id, name, ...described, args: method.args ?? [], ...(env.length ? { env } : {}) };
}

/** The inner agent's extensions, from its initialize answer. */
export function toolhostExtensions(answer: v1.InitializeResponse): { rewind?: unknown; cancelToolCall?: unknown } {
  return (answer.agentCapabilities?._meta?.toolhost ?? {}) as { rewind?: unknown; cancelToolCall?: unknown };
}

/** The v1 agent's initialize answer as v2's. */
export function v2InitializeResponse(answer: v1.InitializeResponse): v2.InitializeResponse {
  const caps = answer.agentCapabilities ?? {};
  const prompt = caps.promptCapabilities ?? {};
  const info = answer.agentInfo ?? { name: "toolhost", version: "0" };
  const toolhost = toolhostExtensions(answer);
  return {
    protocolVersion: 2,
    info: { name: info.name, title: info.title ?? null, version: info.version },
    capabilities: {
      session: {
        prompt: {
          ...(prompt.image ? { image: {} } : {}),
          ...(prompt.audio ? { audio: {} } : {}),
          ...(prompt.embeddedContext ? { embeddedContext: {} } : {}),
        },
        mcp: MCP,
        delete: {},
        additionalDirectories: {},
        // session/fork (unstable v2): the agent's capability is all the draft has; a client that
        // does not know it never asks.
        ...((caps.sessionCapabilities as { fork?: unknown } | undefined)?.fork != null ? { fork: {} } : {}),
      },
      // _session/rewind_points and _session/rewind, as the v1 agent advertises them.
      ...(toolhost.rewind ? { _meta: { toolhost: { rewind: toolhost.rewind } } } : {}),
    },
    // Non-empty: auth/login and auth/logout are answered (the v1 agent's authenticate and logout).
    authMethods: (answer.authMethods ?? []).map(authMethod),
  } as v2.InitializeResponse;
}

/** v1 config options as v2's (`configId` for `id`). */
export function configOptions(options: v1.SessionConfigOption[] | null | undefined): v2.SessionConfigOption[] {
  return (options ?? []).map(({ id, ...option }) => ({ configId: id, ...option }) as v2.SessionConfigOption);
}

/** The v1 agent's session/new answer as v2's (no modes API: the mode is a config option). */
export function v2NewSessionResponse(answer: v1.NewSessionResponse): v2.NewSessionResponse {
  return { sessionId: answer.sessionId, configOptions: configOptions(answer.configOptions) };
}
