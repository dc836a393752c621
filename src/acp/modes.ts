import type { SessionConfigOption, SessionModeState, SessionUpdate } from "@agentclientprotocol/sdk";
import { NO_MODEL, type ModelOptionState } from "../agent/model/model-config.js";
import { supportsThinking, THOUGHT_LEVELS, type ThoughtLevel } from "../agent/model/thinking.js";
import type { AgentSession } from "../agent/session/agent-session.js";
import { isModeId, MODES, type ModeId } from "../policy/modes.js";

/** The modes as ACP session modes. Light on purpose: session/new answers with it before the tools load. */
export function modeState(mode: ModeId): SessionModeState {
  return { currentModeId: mode, availableModes: MODES.map((m) => ({ id: m.id, name: m.name, description: m.description })) };
}

/** Which profile the session runs, among the shipped and the user's profiles. */
export interface ProfileOptionState {
  current: string;
  names: string[];
}

const THOUGHT_NAMES: Record<ThoughtLevel, { name: string; description: string }> = {
  default: { name: "Default", description: "The model's own setting" },
  low: { name: "Low", description: "Think briefly before answering" },
  medium: { name: "Medium", description: "Think more before answering" },
  high: { name: "High", description: "Think the longest (slower, costs more)" },
};

/** What the options are read from: a session's settings, or for session/new's answer what config.json and the profile folders say. */
export interface ConfigState {
  mode: ModeId;
  model?: ModelOptionState;
  profile?: ProfileOptionState;
  /** Absent: no thought_level option (session/new's answer). */
  thought?: ThoughtLevel;
}

/** What a set reaches of the session (acp/session.ts's AcpSession). */
export interface ConfigTarget {
  agent: Pick<AgentSession, "mode" | "setMode" | "setModel" | "setThoughtLevel">;
  /** Switches the profile and tells the user; why not, or null. */
  setProfile(name: string): Promise<string | null>;
  update(update: SessionUpdate): Promise<void>;
}

/** Why a value was refused: the error's data and message (session/set_config_option answers invalid params). */
export interface ConfigRefusal {
  data: Record<string, unknown>;
  message: string;
}

type Choice = { value: string; name: string; description?: string };

interface ConfigOptionRow {
  id: string;
  name: string;
  description: string;
  category?: "mode" | "model" | "thought_level";
  /** The current value and the choices, or null when the option is not offered in this state. */
  read(state: ConfigState): { current: string; choices: Choice[] } | null;
  /** Checked before the session is ready. */
  check?(value: string): ConfigRefusal | null;
  /** Applies a value to the session: null when done, else why not. */
  set(session: ConfigTarget, value: string): Promise<ConfigRefusal | null>;
}

const refusedValue = (value: string, message: string | null): ConfigRefusal | null =>
  message === null ? null : { data: { value }, message };

/** An unknown mode (session/set_mode, and the `mode` option), or null. */
export function modeRefusal(mode: string): ConfigRefusal | null {
  return isModeId(mode) ? null : { data: { mode }, message: `Unknown mode ${mode}; modes: read-only, ask, accept-edits, full` };
}

/**
 * The config options, in the order the editor gets them: `mode` (the forward path; v2 drops
 * session modes), `model`, `thought_level` and `profile` when the state has them.
 */
const CONFIG_OPTIONS: readonly ConfigOptionRow[] = [
  {
    id: "mode",
    name: "Mode",
    description: "What runs without asking",
    category: "mode",
    read: (state) => ({ current: state.mode, choices: MODES.map((m) => ({ value: m.id, name: m.name, description: m.description })) }),
    check: modeRefusal,
    async set(session, value) {
      session.agent.setMode(value);
      await session.update({ sessionUpdate: "current_mode_update", currentModeId: session.agent.mode });
      return null;
    },
  },
  {
    // The current and the configured model, plus well-known models of providers that have a key;
    // any other `provider/model` id is accepted too.
    id: "model",
    name: "Model",
    description: "provider/model: anthropic/…, openai/…, ollama/…, openai-compatible/…",
    category: "model",
    read: ({ model }) =>
      model
        ? {
            current: model.current,
            choices: model.values.map((value) =>
              value === NO_MODEL
                ? { value, name: "No model configured", description: 'Set TOOLHOST_MODEL, or "model" in ~/.toolhost/config.json' }
                : { value, name: value },
            ),
          }
        : null,
    set: async (session, value) => refusedValue(value, session.agent.setModel(value)),
  },
  {
    // Offered only for a model that takes it (Anthropic extended thinking, OpenAI reasoning effort).
    id: "thought_level",
    name: "Thinking",
    description: "How hard the model thinks before it answers",
    category: "thought_level",
    read: ({ model, thought }) =>
      model && thought && supportsThinking(model.current)
        ? { current: thought, choices: THOUGHT_LEVELS.map((value) => ({ value, ...THOUGHT_NAMES[value] })) }
        : null,
    set: async (session, value) =>
      refusedValue(
        value,
        session.agent.setThoughtLevel(value) ? null : `Unknown thought level ${value}; levels: default, low, medium, high`,
      ),
  },
  {
    id: "profile",
    name: "Profile",
    description: "Prompt, tools and permissions (profiles/ and ~/.toolhost/profiles/)",
    read: ({ profile }) =>
      profile
        ? {
            current: profile.current,
            choices: (profile.names.includes(profile.current) ? profile.names : [profile.current, ...profile.names]).map((name) => ({
              value: name,
              name,
            })),
          }
        : null,
    set: async (session, value) => refusedValue(value, await session.setProfile(value)),
  },
];

/** The option a session/set_config_option names, or undefined for an unknown id. */
export function configOptionRow(id: string): Pick<ConfigOptionRow, "check" | "set"> | undefined {
  return CONFIG_OPTIONS.find((row) => row.id === id);
}

/** The config options the editor is sent for this state. */
export function configOptions(state: ConfigState): SessionConfigOption[] {
  return CONFIG_OPTIONS.flatMap((row) => {
    const read = row.read(state);
    if (!read) return [];
    return [
      {
        id: row.id,
        name: row.name,
        description: row.description,
        ...(row.category ? { category: row.category } : {}),
        type: "select" as const,
        currentValue: read.current,
        options: read.choices,
      },
    ];
  });
}
