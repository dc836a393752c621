import { peekConfig } from "../../config/file.js";
import { parseUserConfig } from "../../config/schema.js";
import { childEnvironment } from "../../runtime/sandbox/child-env.js";
import { LspManager } from "../../runtime/lsp/manager.js";
import { LspSandbox } from "../../runtime/lsp/sandbox.js";
import type { SessionSandbox } from "../../runtime/sandbox/session-sandbox.js";
import type { RuntimeSession } from "../../runtime/session.js";
import type { SessionTools } from "./tools.js";
import type { EditDiagnostics } from "../turn/tool-runner.js";

// A session's language servers (runtime/lsp/), wired: the user's `lsp` config, the session's
// sandbox (every server runs in it, trusted project or not; its state says why none can), files
// read as the tools read them (editor buffers too). `TOOLHOST_LSP_WAIT_MS` changes the bound on
// an edit's wait (default 3 s).

/** The session's language servers; undefined when `lsp` is false. */
export function sessionLsp(tools: SessionTools, runtime: RuntimeSession, sandbox: SessionSandbox | undefined): LspManager | undefined {
  const { configFile } = tools.toolset;
  const config = parseUserConfig(configFile).config.lsp;
  if (config === false) return undefined;
  const wait = Number(process.env.TOOLHOST_LSP_WAIT_MS);
  return new LspManager({
    workspace: tools.workspace.cwd,
    config,
    sandbox: new LspSandbox({ runtime, state: sandbox ? () => sandbox.state() : undefined }),
    read: async (abs) => new TextDecoder().decode(await runtime.route(abs).readFile(abs)),
    env: childEnvironment(process.env, peekConfig(configFile).sandboxEnv),
    waitMs: Number.isFinite(wait) && wait > 0 ? wait : undefined,
  });
}

/** The tool runner's view of them. */
export function editDiagnostics(lsp: LspManager): EditDiagnostics {
  return {
    touched: (paths) => paths.forEach((p) => lsp.touch(p)),
    beginEdit: (paths) => lsp.beginEdit(paths),
  };
}
