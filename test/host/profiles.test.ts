import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { selectProfileName } from "../../src/config/profile-name.js";
import { listProfiles, loadProfile } from "../../src/host/profiles.js";
import { tempDir, useAgentEnv } from "../helpers.js";

const t = useAgentEnv();

async function userProfile(name: string, json: unknown, files: Record<string, string> = {}) {
  const dir = path.join(t.home, "profiles", name);
  await fsp.mkdir(dir, { recursive: true });
  await fsp.writeFile(path.join(dir, "profile.json"), typeof json === "string" ? json : JSON.stringify(json));
  for (const [rel, text] of Object.entries(files)) await fsp.writeFile(path.join(dir, rel), text);
  return dir;
}

describe("profiles", () => {
  it("ships default, read-only and release, all valid", async () => {
    const { profiles, problems } = await listProfiles();
    expect(problems).toEqual([]);
    expect(profiles.map((p) => [p.name, p.origin])).toEqual([
      ["default", "shipped"],
      ["read-only", "shipped"],
      ["release", "shipped"],
    ]);
    const release = (await loadProfile("release")).profile;
    expect(release.prompt).toMatch(/release_notes/);
    expect(release.toolDirs).toEqual([path.join(t.home, "profiles", "release", "tools"), path.join(release.dir!, "tools")]);
  });

  it("reads a user profile with prompt.md, model, tools, requires and permission rules", async () => {
    const dir = await userProfile(
      "writer",
      {
        name: "writer",
        description: "Docs only",
        model: "anthropic/claude-sonnet-4-5",
        tools: { disable: ["bash"] },
        requires: { fs: { read: ["{user-data}/snippets/**"] } },
        permissions: [
          { permission: "write", pattern: "docs/**", action: "allow" },
          { permission: "fs.write", action: "ask" },
        ],
      },
      { "prompt.md": "You write documentation.\n" },
    );
    const { profile, problems } = await loadProfile("writer");
    expect(problems).toEqual([]);
    expect(profile).toMatchObject({
      name: "writer",
      origin: "user",
      dir,
      prompt: "You write documentation.\n",
      model: "anthropic/claude-sonnet-4-5",
      tools: { disable: ["bash"] },
      requires: { fs: { read: ["{user-data}/snippets/**"] } },
      permissions: [
        { permission: "write", pattern: "docs/**", action: "allow" },
        { permission: "fs.write", pattern: "*", action: "ask" },
      ],
      toolDirs: [path.join(dir, "tools")],
      skillDirs: [path.join(dir, "skills")],
    });
  });

  it("explains what is wrong with a profile.json, and falls back to read-only tools", async () => {
    const cases: [unknown, RegExp][] = [
      ["{ not json", /is not valid JSON/],
      [{ name: "bad", description: "d", tools: { disable: "bash" } }, /expected array, received string\n {2}→ at tools\.disable/],
      [{ name: "bad", description: "d", permissions: [{ permission: "bash", action: "maybe" }] }, /permissions\[0\]\.action/],
      [{ name: "bad", description: "d", colour: "blue" }, /Unrecognized key: "colour"/],
      [{ name: "bad" }, /description/],
      [{ name: "other", description: "d" }, /says name "other", but its folder is "bad"/],
      [{ name: "bad", description: "d", requires: { fs: { read: ["{home}/**"] } } }, /Undefined variable \{home\}/],
      [{ name: "bad", description: "d", tools: { kinds: ["reading"] } }, /tools\.kinds\[0\]/],
    ];
    for (const [json, message] of cases) {
      const dir = await userProfile("bad", json);
      const { profile, problems } = await loadProfile("bad");
      expect(problems).toEqual([{ file: path.join(dir, "profile.json"), message: expect.stringMatching(message) }]);
      expect(profile).toMatchObject({ origin: "fallback", toolDirs: [], tools: { kinds: ["read", "search", "think", "fetch"] } });
    }
    await userProfile("bad", { name: "bad", description: "d", prompt: "inline" }, { "prompt.md": "file" });
    expect((await loadProfile("bad")).problems[0]!.message).toMatch(/has a prompt and a prompt\.md/);
  });

  it("reports an unknown profile name and an invalid one", async () => {
    expect((await loadProfile("nope")).problems[0]!.message).toMatch(
      /no profile named "nope": looked for .*nope\/profile\.json and .*nope\/profile\.json/,
    );
    expect((await loadProfile("../etc")).problems[0]!.message).toMatch(/is not a profile name/);
  });

  it("a user folder with profile.json replaces the shipped profile; one without it adds its tools first", async () => {
    const extending = path.join(t.home, "profiles", "read-only", "tools");
    await fsp.mkdir(extending, { recursive: true });
    const extended = (await loadProfile("read-only")).profile;
    expect(extended.origin).toBe("shipped");
    expect(extended.toolDirs[0]).toBe(extending);

    await userProfile("read-only", { name: "read-only", description: "Mine" });
    const replaced = (await loadProfile("read-only")).profile;
    expect(replaced).toMatchObject({ origin: "user", description: "Mine", toolDirs: [extending] });
  });

  it("selects by the client's choice, then TOOLHOST_PROFILE, then config, then default", () => {
    expect(selectProfileName({ requested: "a", env: { TOOLHOST_PROFILE: "b" }, config: { profile: "c" } })).toBe("a");
    expect(selectProfileName({ env: { TOOLHOST_PROFILE: "b" }, config: { profile: "c" } })).toBe("b");
    expect(selectProfileName({ env: {}, config: { profile: "c" } })).toBe("c");
    expect(selectProfileName({ env: {} })).toBe("default");
  });

  it("lists user profiles next to the shipped ones and reports broken ones", async () => {
    await userProfile("mine", { name: "mine", description: "My own" });
    await userProfile("broken", "{");
    await fsp.mkdir(path.join(t.home, "profiles", "orphan", "tools"), { recursive: true });
    const { profiles, problems } = await listProfiles({ root: await tempDir() });
    expect(profiles).toEqual([{ name: "mine", description: "My own", origin: "user" }]);
    expect(problems.map((p) => path.basename(path.dirname(p.file)))).toEqual(["broken"]);
  });
});
