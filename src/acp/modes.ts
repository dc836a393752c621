import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import type { SessionConfigOption, SessionModeState } from "@agentclientprotocol/sdk";
import { packageRoot, toolhostHome } from "../config/paths.js";
import { NO_MODEL, type ModelOptionState } from "../agent/model-config.js";
import { supportsThinking, THOUGHT_LEVELS, type ThoughtLevel } from "../agent/thinking.js";
import { MODES, type ModeId } from "../policy/modes.js";

/** The modes as ACP session modes. Light on purpose: session/new answers with it before the tools load. */
export function modeState(mode: ModeId): SessionModeState {
  return { currentModeId: mode, availableModes: MODES.map((m) => ({ id: m.id, name: m.name, description: m.description })) };
}

/**
 * The model picker: the current and the configured model, plus well-known models of providers
 * that have a key. session/set_config_option accepts any other `provider/model` id too.
 */
function modelOption(model: ModelOptionState): SessionConfigOption {
  return {
    id: "model",
    name: "Model",
    description: "provider/model: anthropic/…, openai/…, ollama/…, openai-compatible/…",
    category: "model",
    type: "select",
    currentValue: model.current,
    options: model.values.map((value) =>
      value === NO_MODEL
        ? { value, name: "No model configured", description: 'Set TOOLHOST_MODEL, or "model" in ~/.toolhost/config.json' }
        : { value, name: value },
    ),
  };
}

/** Which profile the session runs, among the shipped and the user's profiles. */
export interface ProfileOptionState {
  current: string;
  names: string[];
}

/** A profile folder's name (host/profiles.ts checks the same when it loads one). */
const PROFILE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * The profile names for session/new's answer, from a directory listing alone (no zod, no
 * profile is read): each user or shipped folder with a profile.json, and a user folder that
 * extends a shipped profile of its name. The list after loading leaves out a broken profile.json.
 */
export function listProfileNames(home = toolhostHome(), root = packageRoot()): string[] {
  const names = new Set<string>();
  const has = (dir: string, name: string) => existsSync(path.join(dir, "profiles", name, "profile.json"));
  for (const dir of [home, root]) {
    let entries: string[];
    try {
      entries = readdirSync(path.join(dir, "profiles"));
    } catch {
      continue;
    }
    for (const name of entries) if (PROFILE_NAME.test(name) && (has(home, name) || has(root, name))) names.add(name);
  }
  return [...names].sort();
}

function profileOption(profile: ProfileOptionState): SessionConfigOption {
  const names = profile.names.includes(profile.current) ? profile.names : [profile.current, ...profile.names];
  return {
    id: "profile",
    name: "Profile",
    description: "Prompt, tools and permissions (profiles/ and ~/.toolhost/profiles/)",
    type: "select",
    currentValue: profile.current,
    options: names.map((name) => ({ value: name, name })),
  };
}

const THOUGHT_NAMES: Record<ThoughtLevel, { name: string; description: string }> = {
  default: { name: "Default", description: "The model's own setting" },
  low: { name: "Low", description: "Think briefly before answering" },
  medium: { name: "Medium", description: "Think more before answering" },
  high: { name: "High", description: "Think the longest (slower, costs more)" },
};

/** How hard the model thinks: offered only for a model that takes it (Anthropic extended thinking, OpenAI reasoning effort). */
function thoughtOption(current: ThoughtLevel): SessionConfigOption {
  return {
    id: "thought_level",
    name: "Thinking",
    description: "How hard the model thinks before it answers",
    category: "thought_level",
    type: "select",
    currentValue: current,
    options: THOUGHT_LEVELS.map((value) => ({ value, ...THOUGHT_NAMES[value] })),
  };
}

/** The `mode` config option (the forward path; v2 drops session modes), then `model`, `thought_level` and `profile` when given. */
export function configOptions(
  mode: ModeId,
  model?: ModelOptionState,
  profile?: ProfileOptionState,
  thought?: ThoughtLevel,
): SessionConfigOption[] {
  const options: SessionConfigOption[] = [
    {
      id: "mode",
      name: "Mode",
      description: "What runs without asking",
      category: "mode",
      type: "select",
      currentValue: mode,
      options: MODES.map((m) => ({ value: m.id, name: m.name, description: m.description })),
    },
  ];
  if (model) options.push(modelOption(model));
  if (model && thought && supportsThinking(model.current)) options.push(thoughtOption(thought));
  if (profile) options.push(profileOption(profile));
  return options;
}
