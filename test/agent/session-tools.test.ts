import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { SessionTools } from "../../src/agent/session-tools.js";
import { projectToolDir } from "../../src/host/discovery.js";
import { createExtensionLoader, type LoadFile } from "../../src/host/loader.js";
import { tempDir } from "../helpers.js";
import { toolFile, useTempHome } from "../host/extension-fixtures.js";

let project: string;
let extra: string;
beforeEach(async () => {
  const home = await useTempHome();
  project = await tempDir({ "README.md": "# p\n" });
  extra = await tempDir({ "hello.ts": toolFile("hello", "v1") });
  await fsp.writeFile(path.join(home, "config.json"), JSON.stringify({ toolDirs: [extra] }));
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
    await fsp.mkdir(projectToolDir(project), { recursive: true });
    await fsp.writeFile(path.join(projectToolDir(project), "local.ts"), toolFile("local"));
    const { load, seen } = countingLoader();
    const tools = await SessionTools.create(project, undefined, load);
    expect(await tools.registry.get("hello")!.execute({}, {} as never)).toMatchObject({ tag: "v1" });
    expect(tools.pendingTrust()).toEqual([path.join(projectToolDir(project), "local.ts")]);

    await fsp.writeFile(path.join(extra, "hello.ts"), toolFile("hello", "v2"));
    expect(await tools.reload()).toBe("No tools were added or removed.");
    expect(await tools.registry.get("hello")!.execute({}, {} as never)).toMatchObject({ tag: "v2" });

    expect(await tools.decideTrust("session")).toMatch(/Added: local/);
    expect(tools.registry.has("local")).toBe(true);
    expect(seen.files).toEqual(["hello.ts", "hello.ts", "local.ts", "hello.ts"]);
    expect(seen.apiLoads).toBe(1);
  });
});
