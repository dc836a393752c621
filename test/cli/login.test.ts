import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { credentialsPath, mergeLogin, readCredentials } from "../../src/config/credentials.js";
import { readConfigFile } from "../../src/config/file.js";
import { modelReadiness } from "../../src/agent/model/model-config.js";
import { PROVIDERS } from "../../src/agent/model/provider-table.js";
import { keyHint } from "../../src/agent/model/provider-errors.js";
import { bubblewrapArgs } from "../../src/runtime/sandbox/bubblewrap.js";
import { secretPath } from "../../src/policy/watchdog/secrets.js";
import { CLI_PATH, runToEnd, useAgentEnv, type Ran } from "../helpers.js";
import { runCli } from "./harness.js";

// Issue 26 §1 through the built CLI: `toolhost login` (answers on stdin, as a terminal login
// types them), `login --status`, `logout`; the file's mode, where it may live, what wins over it.

const t = useAgentEnv({ files: { "a.txt": "alpha\n" } });

function login(answers: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Ran> {
  return runToEnd([process.execPath, CLI_PATH, "login"], {
    cwd: options.cwd ?? t.ws,
    env: options.env ?? t.env(),
    stdin: answers.map((a) => `${a}\n`).join(""),
  });
}

const file = () => path.join(t.home, "credentials.json");

describe("toolhost login", () => {
  it("asks provider, key and model; stores them 0600 in toolhost's home; --status and logout report and remove them", async () => {
    // A wrong answer is asked again; the key is an answer of its own; model 2 of the list.
    const done = await login(["9", "anthropic", "sk-ant-test-1234", "2"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("Answer 1 to 4");
    expect(done.stdout).not.toContain("sk-ant-test-1234");
    expect((await fsp.stat(file())).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await fsp.readFile(file(), "utf8"))).toEqual({
      model: "anthropic/claude-opus-4-5",
      providers: { anthropic: { apiKey: "sk-ant-test-1234" } },
    });

    const status = await runCli(["login", "--status"], { cwd: t.ws, env: t.env() });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("model: anthropic/claude-opus-4-5");
    expect(status.stdout).toContain("Ready: anthropic/claude-opus-4-5 (from the stored login)");
    expect(status.stdout).not.toContain("sk-ant-test-1234");
    // The environment wins, and --status says so.
    const envStatus = await runCli(["login", "--status"], {
      cwd: t.ws,
      env: t.env({ TOOLHOST_MODEL: "openai/gpt-5", OPENAI_API_KEY: "k" }),
    });
    expect(envStatus.stdout).toContain("Set in the environment (these win): TOOLHOST_MODEL, OPENAI_API_KEY");
    expect(envStatus.stdout).toContain("Ready: openai/gpt-5 (from the environment)");

    // A second login keeps the other provider's key.
    expect((await login(["2", "sk-openai", ""])).code).toBe(0);
    expect(JSON.parse(await fsp.readFile(file(), "utf8"))).toEqual({
      model: "openai/gpt-5",
      providers: { anthropic: { apiKey: "sk-ant-test-1234" }, openai: { apiKey: "sk-openai" } },
    });

    const out = await runCli(["logout"], { cwd: t.ws, env: t.env() });
    expect(out.stdout).toContain(`Removed the stored login (${file()})`);
    await expect(fsp.stat(file())).rejects.toMatchObject({ code: "ENOENT" });
    const after = await runCli(["login", "--status"], { cwd: t.ws, env: t.env() });
    expect(after.code).toBe(1);
    expect(after.stdout).toContain("Stored login: none");
    expect(after.stdout).toContain("Not ready: no model is configured");
    expect((await runCli(["logout"], { cwd: t.ws, env: t.env() })).stdout).toContain("nothing changed");
  });

  it("saves nothing when the input ends before the answers do", async () => {
    const done = await login(["1"]);
    expect(done.code).toBe(1);
    expect(done.stderr).toContain("nothing was saved");
    await expect(fsp.stat(file())).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses to store the login inside the current folder (a workspace)", async () => {
    const inside = path.join(t.ws, ".toolhost-home");
    const done = await login(["1", "k", ""], { env: t.env({ TOOLHOST_HOME: inside }) });
    expect(done.code).toBe(1);
    expect(done.stderr).toContain("inside the current folder");
    await expect(fsp.stat(path.join(inside, "credentials.json"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("the stored login as sessions read it", () => {
  it("merges under the environment and over config.json; a file others may read is refused", async () => {
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ model: "openai/gpt-5", providers: { anthropic: { baseURL: "http://proxy/v1" } } }),
    );
    await fsp.writeFile(file(), JSON.stringify({ model: "anthropic/claude-haiku-4-5", providers: { anthropic: { apiKey: "a" } } }), {
      mode: 0o600,
    });
    const config = readConfigFile(t.home);
    expect(config.json).toEqual({
      model: "anthropic/claude-haiku-4-5",
      providers: { anthropic: { baseURL: "http://proxy/v1", apiKey: "a" } },
    });
    expect(modelReadiness({}, config)).toEqual({ ready: true, id: "anthropic/claude-haiku-4-5", source: "login" });
    expect(modelReadiness({ TOOLHOST_MODEL: "openai/gpt-5" }, config)).toEqual({
      ready: false,
      reason: "openai/gpt-5 needs an API key (OPENAI_API_KEY)",
    });

    await fsp.chmod(file(), 0o644);
    const refused = readCredentials(t.home);
    expect(refused.credentials).toBeUndefined();
    expect(refused.error).toMatch(/others may read it \(mode 644\); run chmod 600/);
    expect(readConfigFile(t.home).json).toMatchObject({ model: "openai/gpt-5" });
    expect(mergeLogin(undefined, undefined)).toBeUndefined();
  });

  it("is hidden from sandboxed commands and refused to the file tools", async () => {
    const home = process.env.HOME ?? "/root";
    expect(secretPath(path.join(home, ".toolhost", "credentials.json"), home, [t.ws])).toMatch(/credentials/);
    // Wherever TOOLHOST_HOME puts it.
    expect(credentialsPath()).toBe(file());
    expect(secretPath(file(), home, [t.ws])).toMatch(/stored login/);
    await fsp.writeFile(file(), "{}", { mode: 0o600 });
    const sidecars = path.join(t.home, "sidecars");
    await fsp.mkdir(sidecars);
    const context = { backend: "local", roots: [t.ws], sidecarDir: sidecars, scope: { read: { roots: [t.ws, t.home] } } };
    const args = bubblewrapArgs({ file: "true", args: [], cwd: t.ws }, context as unknown as Parameters<typeof bubblewrapArgs>[1]);
    // toolhost's home is hidden whole; a call that may read in it still finds /dev/null at the login.
    expect(args.join(" ")).toContain(`--tmpfs ${t.home}`);
    expect(args.join(" ")).toContain(`--ro-bind /dev/null ${file()}`);
    expect(args.join(" ").lastIndexOf(file())).toBeGreaterThan(args.join(" ").indexOf(`--tmpfs ${t.home}`));
  });
});

describe("one provider table for login, doctor and the errors (issue 34 §8)", () => {
  it("each provider of the table is offered by login; each keyed one is named by doctor, the readiness check and a 401's hint", async () => {
    // The menu lists the table, in order; an answer past its end names its size.
    const menu = await login(["0"]);
    PROVIDERS.forEach((p, i) => expect(menu.stdout).toContain(`${i + 1}. ${p.id} — ${p.label}`));
    expect(menu.stdout).toContain(`Answer 1 to ${PROVIDERS.length}`);
    const keyed = PROVIDERS.filter((p) => p.asks === "key");
    expect(keyed.length).toBeGreaterThan(1);
    for (const p of keyed) {
      const model = `${p.id}/${p.models[0]}`;
      const doctor = await runCli(["doctor"], { cwd: t.ws, env: t.env({ TOOLHOST_MODEL: model }) });
      expect(doctor.stdout).toContain(`model ${model} needs an API key: set ${p.keyEnv}`);
      const ready = modelReadiness({ TOOLHOST_MODEL: model }, readConfigFile(path.join(t.home, "none.json")));
      expect(ready).toMatchObject({ ready: false, reason: expect.stringContaining(p.keyEnv as string) });
      expect(keyHint(p.id, "/c.json")).toBe(`${p.keyEnv} (or providers.${p.id}.apiKey in /c.json)`);
    }
    expect(keyHint("openai-compatible", "/c.json")).toBe('TOOLHOST_API_KEY (or providers["openai-compatible"].apiKey in /c.json)');
  });
});
