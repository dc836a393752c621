import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { extensionLoader } from "../../src/agent/extension-loader.js";
import type { LoadFile } from "../../src/host/loader.js";
import { loadProfile } from "../../src/host/profiles.js";
import { buildToolset } from "../../src/host/toolset.js";
import { loadProfileWatchdog } from "../../src/host/watchdog-module.js";
import type { WatchdogCall } from "../../src/policy/watchdog.js";
import { tempDir } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

// A profile's own watchdog.ts, imported like an extension file (jiti, for real), and failing
// closed: every way it can go wrong refuses the call and names the file.

const loader = extensionLoader();
let home: string;
let project: string;
beforeEach(async () => {
  home = await useTempHome();
  project = await tempDir({ "README.md": "# p\n" });
});

const call = (command: string): WatchdogCall => ({
  tool: { id: "bash", kind: "execute" },
  args: { command },
  targets: { commands: [command], paths: [project], hosts: [] },
  manifest: { profile: "default", requires: {}, permissions: [] },
  sessionId: "s1",
  roots: [project],
  sandboxed: true,
});
const signal = new AbortController().signal;

/** Writes `~/.toolhost/profiles/<name>/watchdog.ts` (a user folder over the shipped profile, or with its own profile.json). */
async function watchdogFile(source: string, name = "default"): Promise<string> {
  const dir = path.join(home, "profiles", name);
  await fsp.mkdir(dir, { recursive: true });
  if (name !== "default") {
    await fsp.writeFile(path.join(dir, "profile.json"), JSON.stringify({ name, description: "Guarded" }));
  }
  const file = path.join(dir, "watchdog.ts");
  await fsp.writeFile(file, source);
  return file;
}

async function load(timeoutMs?: number, name = "default") {
  const { profile } = await loadProfile(name, { home });
  return loadProfileWatchdog(profile, loader.importModule, timeoutMs);
}

describe("profile watchdog", () => {
  it("is absent when the profile has no watchdog file", async () => {
    expect(await load()).toEqual({ files: [], problems: [] });
  });

  it("loads watchdog.ts beside a user profile and judges calls with it", async () => {
    const file = await watchdogFile(`
import type { WatchdogCall, WatchdogVerdict } from "toolhost";
export default function (call: WatchdogCall): WatchdogVerdict | { action: "ask"; reason: string } {
  const command = String(call.args.command ?? "");
  if (command.includes("make deploy")) return { action: "deny", reason: "deploys go through CI", check: "deploy" };
  if (command.startsWith("docker")) return { action: "ask", reason: "docker is slow" };
  return { action: "allow" };
}
`);
    const { watchdog, files, problems } = await load();
    expect(files).toEqual([file]);
    expect(problems).toEqual([]);
    expect(await watchdog!(call("make deploy"), signal)).toEqual({
      action: "deny",
      reason: "deploys go through CI",
      check: `profile default (${file}): deploy`,
    });
    expect(await watchdog!(call("docker ps"), signal)).toMatchObject({ action: "ask", check: `profile default (${file})` });
    expect(await watchdog!(call("make test"), signal)).toEqual({ action: "allow" });
  });

  it("takes an async watchdog of a user's own profile", async () => {
    await watchdogFile(
      `export default async (call) => { await new Promise((r) => setTimeout(r, 5)); return call.sessionId === "s1" ? { action: "allow" } : { action: "deny", reason: "who?" }; };`,
      "guarded",
    );
    const { watchdog } = await load(undefined, "guarded");
    expect(await watchdog!(call("ls"), signal)).toEqual({ action: "allow" });
  });

  it.each([
    ["throws", `export default () => { throw new Error("kaput"); };`, /it threw: kaput/],
    ["answers garbage", `export default () => ({ action: "perhaps" });`, /answered \{"action":"perhaps"\}, which is not a verdict/],
    ["answers nothing", `export default () => undefined;`, /which is not a verdict/],
    ["denies without a reason", `export default () => ({ action: "deny" });`, /not a verdict/],
    ["never answers", `export default () => new Promise(() => {});`, /did not answer within 0.2 s/],
  ])("fails closed when it %s", async (_, source, reason) => {
    await watchdogFile(source);
    const { watchdog, problems } = await load(200);
    expect(problems).toEqual([]);
    expect(await watchdog!(call("ls"), signal)).toMatchObject({ action: "deny", reason });
  });

  it.each([
    ["does not parse", `export default (call => {`, /failed to load/],
    ["exports no function", `export const watchdog = () => ({ action: "allow" });`, /does not default-export a function/],
    ["throws while loading", `throw new Error("at import");`, /failed to load: .*at import/],
  ])("refuses every call when the module %s, and reports the file", async (_, source, message) => {
    const file = await watchdogFile(source);
    const { watchdog, problems } = await load();
    expect(problems).toEqual([{ file, message: expect.stringMatching(message) }]);
    expect(problems[0]?.message).toMatch(/every call is refused until it is fixed/);
    expect(await watchdog!(call("ls"), signal)).toMatchObject({ action: "deny", check: `profile default (${file})`, reason: message });
  });

  it("refuses every call when nothing can import it", async () => {
    await watchdogFile(`export default () => ({ action: "allow" });`);
    const { profile } = await loadProfile("default", { home });
    const { watchdog } = await loadProfileWatchdog(profile, undefined);
    expect(await watchdog!(call("ls"), signal)).toMatchObject({ action: "deny", reason: /cannot be loaded here/ });
  });

  it("is on the toolset, and a broken one is in its report", async () => {
    const file = await watchdogFile(`export default 42;`);
    const toolset = await buildToolset({ cwd: project, loader });
    expect(toolset.report.errors).toContainEqual({ file, message: expect.stringMatching(/does not default-export a function/) });
    expect(await toolset.watchdog!(call("ls"), signal)).toMatchObject({ action: "deny" });
    await fsp.rm(file);
    const plain: LoadFile = () => Promise.reject(new Error("no extension files here"));
    expect((await buildToolset({ cwd: project, loader: plain })).watchdog).toBeUndefined();
  });
});
