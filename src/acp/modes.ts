import type { SessionConfigOption, SessionModeState } from "@agentclientprotocol/sdk";
import { MODES, type ModeId } from "../policy/modes.js";

/** The modes as ACP session modes. Light on purpose: session/new answers with it before the tools load. */
export function modeState(mode: ModeId): SessionModeState {
  return { currentModeId: mode, availableModes: MODES.map((m) => ({ id: m.id, name: m.name, description: m.description })) };
}

/** The same modes as the `mode` config option (the forward path; v2 drops session modes). */
export function configOptions(mode: ModeId): SessionConfigOption[] {
  return [
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
}
