import { peekConfig, type ConfigFile } from "../config/file.js";
import type { LspConfig } from "../config/schema.js";
import { checkLanguageServers, describeServerCheck } from "../runtime/lsp/probe.js";
import { LspSandbox } from "../runtime/lsp/sandbox.js";
import { childEnvironment } from "../runtime/sandbox/child-env.js";
import { SessionSandbox, sandboxSettingOf } from "../runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../runtime/session.js";

/** `toolhost doctor`'s language servers: a line for each, and the problems (a configured server missing, one that does not work). */
export async function lspReport(
  cwd: string,
  configFile: ConfigFile,
  config: LspConfig | undefined,
): Promise<{ lines: string[]; problems: string[] }> {
  if (config === false) return { lines: ['off ("lsp": false)'], problems: [] };
  // Launched as a session launches them (agent/session/lsp.ts): the session's sandbox, confined.
  const peek = peekConfig(configFile);
  const sandbox = new SessionSandbox({ setting: sandboxSettingOf(peek) }).start();
  const runtime = new RuntimeSession({ workspace: cwd, spawnTransform: sandbox.transform });
  try {
    const { servers, problems } = await checkLanguageServers({
      workspace: cwd,
      config,
      launcher: new LspSandbox({ runtime, state: () => sandbox.state() }),
      env: childEnvironment(process.env, peek.sandboxEnv),
    });
    return {
      lines: servers.map(describeServerCheck),
      problems: [
        ...problems,
        ...servers.filter((s) => s.works === false || (!s.path && !s.builtin)).map((s) => `language server ${describeServerCheck(s)}`),
      ],
    };
  } finally {
    await runtime.close();
  }
}
