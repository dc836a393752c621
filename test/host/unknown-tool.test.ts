import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { extensionLoader } from "../../src/agent/extension-loader.js";
import { projectToolDir } from "../../src/host/discovery.js";
import { invoke } from "../../src/host/invoke.js";
import { buildToolset, type Toolset } from "../../src/host/toolset.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { errorOf, tempDir } from "../helpers.js";
import { toolFile, useTempHome } from "./extension-fixtures.js";

// A model (or a user's slash command) that names a tool the session does not have learns why:
// a tool that exists but was skipped, failed to load, is disabled or unavailable is not "no tool".
const loader = extensionLoader();

let project: string;
let extra: string;
const sessions: RuntimeSession[] = [];
beforeEach(async () => {
  const home = await useTempHome();
  project = await tempDir({ "README.md": "# p\n" });
  extra = await tempDir();
  await fsp.writeFile(path.join(home, "config.json"), JSON.stringify({ toolDirs: [extra] }));
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

const write = async (file: string, text: string) => {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text);
  return file;
};

async function unknown(toolset: Toolset, id: string): Promise<string> {
  const session = new RuntimeSession({ workspace: project });
  sessions.push(session);
  return errorOf(await invoke(toolset.registry, id, {}, { session, manifest: toolset.manifest }), "unknown_tool");
}

describe("unknown_tool says why a tool that exists is missing", () => {
  it("names a tool that failed to load, with the file and the problem", async () => {
    const broken = await write(path.join(extra, "deploy.ts"), `export default defineTool({ id: "deploy", ,, });`);
    const halfway = await write(path.join(extra, "halfway.ts"), toolFile("halfway").replace('kind: "read"', 'kind: "reading"'));
    const toolset = await buildToolset({ loader, cwd: project });
    const deploy = await unknown(toolset, "deploy");
    expect(deploy).toMatch(
      new RegExp(`^The tool "deploy" failed to load from ${broken.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: failed to import`),
    );
    expect(deploy).toMatch(/Tell the user; once the file is fixed, \/reload loads it\./);
    const half = await unknown(toolset, "halfway");
    expect(half).toContain(`The tool "halfway" failed to load from ${halfway}: tool "halfway": `);
    expect(half).toMatch(/Available tools: read, write/);
  });

  it("names a tool the profile disables and a tool that is unavailable here", async () => {
    await write(path.join(extra, "shell_thing.ts"), toolFile("shell_thing").replace('kind: "read"', 'kind: "execute"'));
    await write(path.join(extra, "pkg.ts"), toolFile("pkg", "x", `isAvailable: ({ exists }) => exists("package.json"),`));
    const toolset = await buildToolset({ loader, cwd: project, profile: "read-only" });
    expect(await unknown(toolset, "bash")).toMatch(/^The tool "bash" is disabled in this session: the read-only profile disables it\./);
    expect(await unknown(toolset, "shell_thing")).toMatch(
      /^The tool "shell_thing" is disabled in this session: kind execute is not among the read-only profile's kinds\./,
    );
    expect(await unknown(toolset, "pkg")).toMatch(/^The tool "pkg" is not available in this workspace \(its isAvailable check said no\)\./);
  });

  it("points at an untrusted project's file of that name, which was never imported", async () => {
    const file = await write(path.join(projectToolDir(project), "deploy.ts"), toolFile("deploy"));
    const toolset = await buildToolset({ loader, cwd: project });
    expect(toolset.report.skipped).toHaveLength(1);
    expect(await unknown(toolset, "deploy")).toMatch(
      new RegExp(`^The tool "deploy" may be defined in ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}, which was not loaded: `),
    );
  });

  it("still says there is no such tool when nothing knows the id", async () => {
    const toolset = await buildToolset({ loader, cwd: project });
    expect(await unknown(toolset, "nope")).toMatch(/^There is no tool "nope"\. Available tools: read, write, edit/);
  });
});
