import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AgentSession, headlessFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { parseUserConfig } from "../../src/config/schema.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { serverDefinitions, serverFor } from "../../src/runtime/lsp/servers.js";
import { useAgentEnv } from "../helpers.js";

// The `lsp` config: the built-ins changed, dropped or joined by the user's servers; `false` turns
// them off, and then the session offers no lsp tool and has no language servers at all.

const t = useAgentEnv({ files: { "a.ts": "export const a = 1;\n" } });

async function session(): Promise<AgentSession> {
  return new AgentSession({ tools: await SessionTools.create(resolveWorkspace(t.ws)), frontEnd: headlessFrontEnd(), mode: "ask" });
}

describe("the lsp config", () => {
  it("merges the user's servers with the built-ins", () => {
    const { servers, problems } = serverDefinitions({
      typescript: { args: ["--stdio", "--log-level", "1"] },
      bash: { disabled: true },
      gopls: { command: "gopls", args: ["serve"], extensions: ["go"], rootMarkers: ["go.mod"] },
      broken: { command: "x" },
    });
    expect(servers.map((s) => s.name)).toEqual(["typescript", "pyright", "gopls"]);
    expect(servers[0]).toMatchObject({ command: "typescript-language-server", args: ["--stdio", "--log-level", "1"] });
    expect(serverFor(servers, "/p/main.go")?.name).toBe("gopls");
    expect(serverFor(servers, "/p/run.sh")).toBeUndefined();
    expect(serverFor(servers, "/p/a.tsx")?.name).toBe("typescript");
    expect(problems).toEqual(["lsp.broken needs a command and extensions"]);
    expect(serverDefinitions(false).servers).toEqual([]);
  });

  it("is validated by the config schema: false or servers by name", () => {
    expect(parseUserConfig({ path: "c.json", json: { lsp: false } }).config.lsp).toBe(false);
    const bad = parseUserConfig({ path: "c.json", json: { lsp: { ts: { command: 3 } } } });
    expect(bad.config.lsp).toBeUndefined();
    expect(bad.problems[0]).toMatch(/^"lsp" is ignored \(the built-in language servers\)/);
  });

  it('"lsp": false: no language servers, no lsp tool', async () => {
    const on = await session();
    expect(on.lsp).toBeDefined();
    expect((await on.declarations()).map((d) => d.id)).toContain("lsp");
    await on.close();
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ lsp: false }));
    const off = await session();
    expect(off.lsp).toBeUndefined();
    expect((await off.declarations()).map((d) => d.id)).not.toContain("lsp");
    await off.close();
  });
});
