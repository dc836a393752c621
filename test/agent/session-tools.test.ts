import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { defineTool } from "../../src/tool/define.js";
import { projectToolDir } from "../../src/host/discovery.js";
import { createExtensionLoader, type LoadFile } from "../../src/host/loader.js";
import { useAgentEnv } from "../helpers.js";
import { toolFile } from "../host/extension-fixtures.js";

const t = useAgentEnv({ files: { "README.md": "# p\n" } });
let extra: string;
beforeEach(async () => {
  extra = await t.dir({ "hello.ts": toolFile("hello", "v1") });
  await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ toolDirs: [extra] }));
});

/** A real loader that counts how often its API loads and which files it imported. */
function countingLoader() {
  const seen = { apiLoads: 0, files: [] as string[] };
  const real = createExtensionLoader({
    api: () => {
      seen.apiLoads++;
      return import("../../src/public.js");
    },
  });
  const load: LoadFile = (file) => {
    seen.files.push(path.basename(file));
    return real(file);
  };
  return { load, seen };
}

describe("SessionTools", () => {
  it("keeps one loader for the session: every rebuild goes through it, and still sees edits", async () => {
    await fsp.mkdir(projectToolDir(t.ws), { recursive: true });
    await fsp.writeFile(path.join(projectToolDir(t.ws), "local.ts"), toolFile("local"));
    const { load, seen } = countingLoader();
    const tools = await SessionTools.create(resolveWorkspace(t.ws), { loader: load });
    expect(await tools.registry.get("hello")!.execute({}, {} as never)).toMatchObject({ tag: "v1" });
    expect(tools.pendingTrust()).toEqual([path.join(projectToolDir(t.ws), "local.ts")]);

    await fsp.writeFile(path.join(extra, "hello.ts"), toolFile("hello", "v2"));
    expect(await tools.reload()).toBe("No tools were added or removed.");
    expect(await tools.registry.get("hello")!.execute({}, {} as never)).toMatchObject({ tag: "v2" });

    expect(await tools.decideTrust("session")).toMatch(/Added: local/);
    expect(tools.registry.has("local")).toBe(true);
    // The user's tool folders (config toolDirs) load before the project's (issue 26 §4's order).
    expect(seen.files).toEqual(["hello.ts", "hello.ts", "hello.ts", "local.ts"]);
    expect(seen.apiLoads).toBe(1);
  });
});

describe("SessionTools: tools that arrive at run time (MCP servers)", () => {
  const tool = (id: string, kind: "read" | "execute") =>
    defineTool({ id, description: `${id}.`, kind, parameters: { type: "object" }, requires: {}, execute: async () => "ok" });

  it("adds, replaces and removes one source's tools, keeps them across rebuilds and profile changes, and applies the profile's kinds", async () => {
    const tools = await SessionTools.create(resolveWorkspace(t.ws));
    expect(tools.setSourceTools("mcp:x", [tool("mcp__x__look", "read"), tool("mcp__x__act", "execute"), tool("read", "read")])).toEqual([
      '"read" of mcp:x is already registered from builtin; it was left out',
    ]);
    const mine = () =>
      tools.registry
        .list()
        .filter((t) => t.source === "mcp:x")
        .map((t) => t.tool.id);
    expect(mine()).toEqual(["mcp__x__look", "mcp__x__act"]);
    expect(tools.registry.entry("read")?.source).toBe("builtin");
    await tools.reload();
    expect(mine()).toEqual(["mcp__x__look", "mcp__x__act"]);
    // The read-only profile keeps only read-only kinds, MCP tools included.
    await tools.reload({ profile: "read-only" });
    expect(mine()).toEqual(["mcp__x__look"]);
    await tools.reload({ profile: "default" });
    tools.setSourceTools("mcp:x", [tool("mcp__x__new", "read")]);
    expect(mine()).toEqual(["mcp__x__new"]);
    tools.setSourceTools("mcp:x", []);
    await tools.reload();
    expect(mine()).toEqual([]);
  });
});
