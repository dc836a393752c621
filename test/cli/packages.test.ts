import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { closeAndCheck, Harness } from "../acp/harness.js";
import { useAgentEnv } from "../helpers.js";
import { toolFile } from "../host/extension-fixtures.js";
import { runCli } from "./harness.js";

// Issue 26 §4: tool packages. A fixture package is packed into a tarball (no registry needed) and
// installed with `toolhost install`; its tools are offered in the next session, in the documented
// discovery order; `packages` lists, disables and enables; a broken package is reported, never fatal.

const run = promisify(execFile);
const t = useAgentEnv({ files: { "notes.md": "hi\n" } });

const toolhost = (...args: string[]) => runCli(args, { cwd: t.ws, env: t.env({ TOOLHOST_MODEL: "ollama/qwen3" }) });
const put = async (file: string, text: string) => {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text);
  return file;
};

/** A toolhost package in a folder of its own, packed; `marker` is written if an install script runs. */
async function packed(name: string, tools: Record<string, string>, extra: Record<string, unknown> = {}) {
  const dir = await t.dir();
  const marker = path.join(dir, "INSTALL_SCRIPT_RAN");
  await put(
    path.join(dir, "package.json"),
    JSON.stringify({
      name,
      version: "1.0.0",
      keywords: ["toolhost-package"],
      toolhost: { tools: ["tools"], skills: ["skills"], agents: ["agents"] },
      scripts: { preinstall: `node -e "require('fs').writeFileSync(${JSON.stringify(marker)}, '')"` },
      ...extra,
    }),
  );
  for (const [id, tag] of Object.entries(tools)) await put(path.join(dir, "tools", `${id}.ts`), toolFile(id, tag));
  await put(
    path.join(dir, "skills", `${name}-skill`, "SKILL.md"),
    `---\nname: ${name}-skill\ndescription: A skill from ${name}.\n---\nDo it.\n`,
  );
  await put(path.join(dir, "agents", `${name}-agent.md`), `---\nname: ${name}-agent\ndescription: An agent from ${name}.\n---\nHelp.\n`);
  const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], { cwd: dir });
  return { tarball: path.join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename), marker, dir };
}

interface ToolsJson {
  tools: { id: string; source: string }[];
  shadowed: { id: string; file: string; winner: string }[];
  errors: { file: string; message: string }[];
  skipped: { file: string }[];
}
const toolsJson = async () => JSON.parse((await toolhost("tools", "--json")).stdout) as ToolsJson;
const sourceOf = (json: ToolsJson, id: string) => json.tools.find((tool) => tool.id === id)?.source;

// npm pack and install, then a session that loads the package: a minute on a busy two-core machine.
describe("toolhost install (user packages)", { timeout: 90_000 }, () => {
  it("installs a packed package with no install scripts, pins it, offers its tools next session; list, disable, enable, uninstall", async () => {
    const pkg = await packed("toolhost-hello", { hello_pkg: "package" });
    const installed = await toolhost("install", pkg.tarball);
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
    expect(installed.stdout).toContain("Installed toolhost-hello@1.0.0 (user");
    await expect(fsp.stat(pkg.marker)).rejects.toMatchObject({ code: "ENOENT" });
    const lock = JSON.parse(await fsp.readFile(path.join(t.home, "packages", "toolhost-lock.json"), "utf8"));
    expect(lock.packages["toolhost-hello"]).toMatchObject({ version: "1.0.0", enabled: true, disabled: [] });
    expect(lock.packages["toolhost-hello"].integrity).toMatch(/^sha512-/);

    const json = await toolsJson();
    const file = path.join(await fsp.realpath(t.home), "packages", "node_modules", "toolhost-hello", "tools", "hello_pkg.ts");
    expect(sourceOf(json, "hello_pkg")).toBe(file);
    // The next ACP session offers it (its command menu lists it).
    const h = new Harness({ env: { TOOLHOST_HOME: t.home } });
    t.defer(() => closeAndCheck(h));
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    const menu = () => h.updatesOf(sessionId, "available_commands_update").flatMap((u) => u.availableCommands.map((c) => c.name));
    await h.waitFor(() => menu().includes("hello_pkg"));
    const called = await toolhost("call", "hello_pkg", '{"name":"Ada"}');
    expect(JSON.parse(called.stdout)).toMatchObject({ type: "output", data: { tag: "package", hello: "Ada" } });
    expect((await toolhost("skills", "--json")).stdout).toContain("toolhost-hello-skill");
    expect((await toolhost("agents", "--json")).stdout).toContain("toolhost-hello-agent");
    expect((await toolhost("packages", "disable", "toolhost-hello/toolhost-hello-agent")).code).toBe(0);
    expect((await toolhost("agents", "--json")).stdout).not.toContain("toolhost-hello-agent");
    expect((await toolhost("packages", "enable", "toolhost-hello/toolhost-hello-agent")).code).toBe(0);

    const listed = JSON.parse((await toolhost("packages", "--json")).stdout) as { scope: string; packages: { name: string }[] }[];
    expect(listed.find((s) => s.scope === "user")?.packages.map((p) => p.name)).toEqual(["toolhost-hello"]);

    expect((await toolhost("packages", "disable", "toolhost-hello/hello_pkg")).code).toBe(0);
    expect(sourceOf(await toolsJson(), "hello_pkg")).toBeUndefined();
    expect((await toolhost("packages", "enable", "toolhost-hello/hello_pkg")).code).toBe(0);
    expect(sourceOf(await toolsJson(), "hello_pkg")).toBe(file);
    expect((await toolhost("packages", "disable", "toolhost-hello")).code).toBe(0);
    expect(sourceOf(await toolsJson(), "hello_pkg")).toBeUndefined();
    expect((await toolhost("skills", "--json")).stdout).not.toContain("toolhost-hello-skill");
    expect((await toolhost("packages", "enable", "toolhost-hello")).code).toBe(0);

    expect((await toolhost("uninstall", "toolhost-hello")).code).toBe(0);
    expect(sourceOf(await toolsJson(), "hello_pkg")).toBeUndefined();
    expect(JSON.parse(await fsp.readFile(path.join(t.home, "packages", "toolhost-lock.json"), "utf8")).packages).toEqual({});
  });

  it("refuses a package that is not a toolhost package, and keeps nothing of it", async () => {
    const pkg = await packed("plain-pkg", { plain_tool: "x" }, { keywords: [] });
    const installed = await toolhost("install", pkg.tarball);
    expect(installed.code).toBe(1);
    expect(installed.stderr).toContain('its keywords lack "toolhost-package"');
    await expect(fsp.stat(path.join(t.home, "packages", "node_modules", "plain-pkg"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses to install over a lockfile it cannot read, and leaves that file as it was", async () => {
    const pkg = await packed("toolhost-locked", { locked_tool: "x" });
    const lockFile = path.join(t.home, "packages", "toolhost-lock.json");
    await put(lockFile, '{"lockfileVersion": 1, "packages": {"other": ');
    const installed = await toolhost("install", pkg.tarball);
    expect(installed.code).toBe(1);
    expect(installed.stderr).toMatch(/toolhost-lock\.json is not valid JSON/);
    expect(await fsp.readFile(lockFile, "utf8")).toBe('{"lockfileVersion": 1, "packages": {"other": ');
  });

  it("reports a broken package and skips it; the session's other tools load", async () => {
    const pkg = await packed("toolhost-broken", { broken_tool: "x" });
    expect((await toolhost("install", pkg.tarball)).code).toBe(0);
    // The installed copy is no longer what the lock pins.
    const pkgJson = path.join(t.home, "packages", "node_modules", "toolhost-broken", "package.json");
    await fsp.writeFile(pkgJson, (await fsp.readFile(pkgJson, "utf8")).replace('"version":"1.0.0"', '"version":"6.6.6"'));
    const json = await toolsJson();
    expect(sourceOf(json, "broken_tool")).toBeUndefined();
    expect(sourceOf(json, "read")).toBe("builtin");
    expect(json.errors.map((e) => e.message).join("\n")).toContain(
      "package toolhost-broken is skipped: installed is toolhost-broken@6.6.6, the lock pins toolhost-broken@1.0.0",
    );
    const doctor = await toolhost("doctor");
    expect(doctor.stdout + doctor.stderr).toContain("toolhost-broken is skipped");
  });
});

describe("a package's hooks", () => {
  it("run as the user's in-process hooks: a tool_call hook of an installed package refuses a call", async () => {
    const pkg = await packed("toolhost-guard", {}, { toolhost: { hooks: ["hooks/guard.ts"] } });
    await put(
      path.join(pkg.dir, "hooks", "guard.ts"),
      `export const hooks = { tool_call: { matcher: "read", handler: () => ({ decision: "deny", reason: "the guard package says no" }) } };\n`,
    );
    const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", pkg.dir], { cwd: pkg.dir });
    const tarball = path.join(pkg.dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
    expect((await toolhost("install", tarball)).code).toBe(0);
    const listed = await toolhost("hooks", "list", "--json");
    expect(listed.stdout).toContain(path.join("node_modules", "toolhost-guard", "hooks", "guard.ts"));
    const refused = await toolhost("call", "read", '{"path":"notes.md"}');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("the guard package says no");
    expect((await toolhost("packages", "disable", "toolhost-guard")).code).toBe(0);
    expect((await toolhost("call", "read", '{"path":"notes.md"}')).code).toBe(0);
  });
});

describe(
  "discovery order: builtin → profile → user packages → user tool dir → project packages → project tool dir",
  { timeout: 90_000 },
  () => {
    it("first found wins, locked ids stay the builtins', collisions are reported (doctor too), project packages need trust", async () => {
      const userPkg = await packed("toolhost-user", {
        from_user_pkg: "user-package",
        contested: "user-package",
        profile_wins: "user-package",
        read: "x",
      });
      expect((await toolhost("install", userPkg.tarball)).code).toBe(0);
      const projectPkg = await packed("toolhost-project", {
        contested: "project-package",
        in_project: "project-package",
        project_pair: "project-package",
      });
      const projectInstall = await toolhost("install", projectPkg.tarball, "--project");
      expect(projectInstall.code).toBe(0);
      expect(projectInstall.stdout).toContain("once the project is trusted");
      const profileTool = await put(path.join(t.home, "profiles/default/tools/profile_wins.ts"), toolFile("profile_wins", "profile"));
      const userDir = await t.dir();
      await put(path.join(t.home, "config.json"), JSON.stringify({ toolDirs: [userDir] }));
      await put(path.join(userDir, "contested.ts"), toolFile("contested", "user-dir"));
      await put(path.join(t.ws, ".toolhost/tools/in_project.ts"), toolFile("in_project", "project-dir"));

      const untrusted = await toolsJson();
      expect(sourceOf(untrusted, "profile_wins")).toBe(profileTool);
      expect(sourceOf(untrusted, "contested")).toContain(path.join("node_modules", "toolhost-user"));
      expect(sourceOf(untrusted, "read")).toBe("builtin");
      expect(untrusted.errors.map((e) => e.message).join("\n")).toContain('"read" is a locked tool id');
      // An untrusted project's packages are listed, never imported.
      expect(sourceOf(untrusted, "project_pair")).toBeUndefined();
      expect(untrusted.skipped.map((s) => path.basename(s.file))).toContain("project_pair.ts");

      expect((await toolhost("trust")).code).toBe(0);
      const trusted = await toolsJson();
      expect(sourceOf(trusted, "project_pair")).toContain(path.join(".toolhost", "packages", "node_modules", "toolhost-project"));
      // The project's package comes before the project's own folder.
      expect(sourceOf(trusted, "in_project")).toContain(path.join("node_modules", "toolhost-project"));
      const userPkgTools = path.join(await fsp.realpath(t.home), "packages", "node_modules", "toolhost-user", "tools");
      const projectPkgTools = path.join(t.ws, ".toolhost", "packages", "node_modules", "toolhost-project", "tools");
      expect(trusted.shadowed).toEqual(
        expect.arrayContaining([
          { id: "profile_wins", file: path.join(userPkgTools, "profile_wins.ts"), winner: profileTool },
          { id: "contested", file: path.join(userDir, "contested.ts"), winner: path.join(userPkgTools, "contested.ts") },
          { id: "contested", file: path.join(projectPkgTools, "contested.ts"), winner: path.join(userPkgTools, "contested.ts") },
          { id: "in_project", file: path.join(t.ws, ".toolhost/tools/in_project.ts"), winner: path.join(projectPkgTools, "in_project.ts") },
        ]),
      );
      const doctor = await toolhost("doctor");
      expect(doctor.stdout).toContain(
        `contested: ${path.join(userDir, "contested.ts")} lost to ${path.join(userPkgTools, "contested.ts")}`,
      );

      // Installing another project package changes what trust covers: the project asks again.
      const more = await packed("toolhost-more", { more_tool: "x" });
      expect((await toolhost("install", more.tarball, "--project")).code).toBe(0);
      const changed = await toolsJson();
      expect(sourceOf(changed, "project_pair")).toBeUndefined();
      expect(sourceOf(changed, "more_tool")).toBeUndefined();
    });
  },
);
