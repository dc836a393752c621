import { peekConfig, type ConfigFile } from "../config/file.js";
import { MODES } from "../policy/modes.js";
import { usd } from "./session/budget.js";
import { modelOptionState, NO_MODEL } from "./model/model-config.js";
import type { SessionFrontEnd } from "./session/front-end.js";
import type { CostMeter } from "./turn/turn-types.js";

// `/model`, `/mode`, `/cost`, `/clear`: the session's settings and meter as commands, for clients
// that do not render config options. What they change, they change as session/set_config_option would.

/** What the setting commands reach of their session (agent/session/agent-session.ts's AgentSession). */
export interface SettingHost {
  session: {
    readonly model: string | undefined;
    /** An error message for an id that is not `provider/model`, else null. */
    setModel(value: string): string | null;
    readonly mode: string;
    setMode(id: string): boolean;
    readonly meter: CostMeter;
    /** The config file the session's tools were read with (its model choices). */
    readonly tools: { readonly toolset: { readonly configFile: ConfigFile } };
    /** Empties the conversation and runs the `clear` hooks. */
    clearConversation(signal: AbortSignal): Promise<void>;
  };
  /** `settingsChanged`: the front end shows the new mode or model (ACP: current_mode_update, config_option_update). */
  frontEnd: Pick<SessionFrontEnd, "say" | "settingsChanged">;
}

/** `/model` lists the model choices and the current one; `/model ID` picks one. */
export async function modelCommand(host: SettingHost, arg: string): Promise<void> {
  if (arg === "") {
    const state = modelOptionState(host.session.model, process.env, peekConfig(host.session.tools.toolset.configFile));
    const rows = state.values.map((id) => `- \`${id}\`${id === state.current ? " (current)" : ""}`);
    const current = state.current === NO_MODEL ? "No model is configured." : `The model is \`${state.current}\`.`;
    await host.frontEnd.say([current, "Models (`/model ID` picks one; any provider/model id works):", ...rows].join("\n"));
    return;
  }
  const error = host.session.setModel(arg);
  if (error) return void (await host.frontEnd.say(error));
  await host.frontEnd.settingsChanged?.();
  await host.frontEnd.say(`The model is now \`${host.session.model ?? NO_MODEL}\`.`);
}

/** `/mode` lists the modes and the current one; `/mode ID` switches. */
export async function modeCommand(host: SettingHost, arg: string): Promise<void> {
  if (arg === "") {
    const rows = MODES.map((m) => `- \`${m.id}\`${m.id === host.session.mode ? " (current)" : ""}: ${m.description}`);
    await host.frontEnd.say([`The mode is \`${host.session.mode}\`. Modes (\`/mode ID\` switches):`, ...rows].join("\n"));
    return;
  }
  if (!host.session.setMode(arg)) return void (await host.frontEnd.say(`Unknown mode ${arg}; modes: ${MODES.map((m) => m.id).join(", ")}`));
  await host.frontEnd.settingsChanged?.();
  await host.frontEnd.say(`The mode is now \`${host.session.mode}\`.`);
}

/** `/cost`: what the session has spent so far. */
export async function costCommand(host: SettingHost): Promise<void> {
  const { amount, requests, toolCalls, tokens } = host.session.meter;
  await host.frontEnd.say(
    `This session so far: ${usd(amount)} (models with a known price), ${tokens} tokens, ${requests} model requests, ${toolCalls} tool calls.`,
  );
}

/** `/clear`: a new conversation in the same session. */
export async function clearCommand(host: SettingHost, signal: AbortSignal): Promise<void> {
  await host.session.clearConversation(signal);
  await host.frontEnd.say("The conversation was cleared: the model starts afresh (the session, its settings and its cost stay).");
}
