#!/usr/bin/env node
// The package as a user (or the ACP registry) gets it (issue 26 §2, §3): `npm pack`, installed
// into an empty folder with production dependencies only, then
//  1. `npx toolhost --version` is package.json's version;
//  2. the registry's auth check (agentclientprotocol/registry, .github/workflows/client.py, ported
//     below): spawn the agent with a fresh HOME and TERM=dumb, send its exact `initialize`, and
//     require an auth method of type "agent" or "terminal" (type field, else `_meta` key, else agent);
//  3. `npx toolhost` answers `initialize` and `session/new`, and a slash command runs a tool;
//  4. `toolhost call bash` runs a command through the policy (the bash grammar's wasm loads);
//  5. the installed footprint (node_modules, du) is at most 80 MB;
//  6. the GitHub Action's steps (action.yml) install the tarball with `npm install -g`, run a prompt and
//     summarize it; and its default install, from the action's own source (HEAD's files, built by npm ci).
// Usage: node scripts/check-package.mjs [--tarball FILE] [--json]. Needs `npm run build` first
// (packing runs no scripts) and the npm registry for the dependencies. Exit 0 when all pass.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { runAction } from "../integrations/github-action/local-run.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAX_MB = 80;
const { values } = parseArgs({ options: { tarball: { type: "string" }, json: { type: "boolean" } } });
const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
const work = mkdtempSync(path.join(os.tmpdir(), "toolhost-package-"));
const results = [];
const check = (name, ok, detail) => {
  results.push({ name, ok, detail });
  if (!values.json) process.stderr.write(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `: ${detail}` : ""}\n`);
};

/** Runs `cmd args` to its end; stdout as text. */
const run = (cmd, args, options = {}) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...options });

/** Sends JSON-RPC lines to a spawned agent and reads its answers by id. */
function agent(bin, args, cwd, env) {
  const child = spawn(bin, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  let buffer = "";
  let stderr = "";
  const waiting = new Map();
  const notifications = [];
  child.stdout.on("data", (d) => {
    buffer += d.toString();
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      if (message.id !== undefined && waiting.has(message.id)) {
        waiting.get(message.id)(message);
        waiting.delete(message.id);
      } else if (message.id === undefined) {
        notifications.push(message);
      } else if (message.method) {
        // A request of the agent's (permission…): refuse it, this client has no person.
        child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "not supported" } })}\n`);
      }
    }
  });
  child.stderr.on("data", (d) => (stderr += d.toString()));
  let seq = 0;
  return {
    notifications,
    request(method, params, timeoutMs = 60_000) {
      const id = ++seq;
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no answer to ${method} in ${timeoutMs} ms; stderr: ${stderr.slice(-500)}`)),
          timeoutMs,
        );
        waiting.set(id, (message) => {
          clearTimeout(timer);
          resolve(message);
        });
      });
    },
    async close() {
      child.stdin.end();
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("exit", resolve)));
      return child.exitCode;
    },
  };
}

/** The registry's parse_auth_methods and validate_auth_methods (client.py), as written there. */
function registryAuthCheck(authMethodsRaw) {
  const methods = (authMethodsRaw ?? []).map((method) => {
    let type = method.type;
    if (!type) {
      const meta = method._meta ?? {};
      if (meta && typeof meta === "object") {
        if ("terminal-auth" in meta) type = "terminal";
        else if ("agent-auth" in meta) type = "agent";
      }
    }
    return { id: method.id ?? "", type: type || "agent" };
  });
  if (!methods.length) return { ok: false, detail: "No authMethods in response" };
  const valid = methods.filter((m) => m.type === "agent" || m.type === "terminal");
  if (!valid.length)
    return { ok: false, detail: `No auth method with type 'agent' or 'terminal'. Found types: ${methods.map((m) => m.type)}` };
  return { ok: true, detail: `Found ${valid.length} valid auth method(s): ${valid.map((m) => `${m.id} (${m.type})`).join(", ")}` };
}

try {
  // 1. The tarball: as `npm publish` would make it (no scripts: dist/ is built already).
  let tarball = values.tarball && path.resolve(values.tarball);
  if (!tarball) {
    const out = JSON.parse(run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", work], { cwd: ROOT }));
    tarball = path.join(work, out[0].filename);
    check(
      "npm pack",
      true,
      `${out[0].filename}: ${out[0].entryCount} files, ${(out[0].size / 1e6).toFixed(1)} MB packed, ${(out[0].unpackedSize / 1e6).toFixed(1)} MB unpacked`,
    );
  }

  // 2. Installed into an empty folder, production dependencies only, its install scripts run (as npx does).
  const prefix = path.join(work, "install");
  mkdirSync(prefix);
  writeFileSync(path.join(prefix, "package.json"), '{ "private": true }\n');
  const started = Date.now();
  run("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", "--no-package-lock", tarball], { cwd: prefix });
  const installSeconds = (Date.now() - started) / 1000;
  const kb = Number(run("du", ["-sk", path.join(prefix, "node_modules")]).split(/\s/)[0]);
  const mb = kb / 1024;
  check(`installed footprint ≤ ${MAX_MB} MB`, mb <= MAX_MB, `${mb.toFixed(1)} MB in node_modules, install ${installSeconds.toFixed(1)} s`);
  const env = { ...process.env, HOME: mkdtempSync(path.join(work, "home-")), TERM: "dumb" };
  for (const name of ["TOOLHOST_HOME", "TOOLHOST_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TOOLHOST_BASE_URL"]) delete env[name];
  const bin = path.join(prefix, "node_modules", ".bin", "toolhost");

  // 3. --version from package.json.
  const version = run("npx", ["--no-install", "toolhost", "--version"], { cwd: prefix, env }).trim();
  check("toolhost --version", version === pkg.version, `${version} (package.json ${pkg.version})`);

  // 4. The registry's auth check, its initialize exactly.
  const probe = agent(bin, [], prefix, env);
  const init = await probe.request("initialize", {
    protocolVersion: 1,
    clientInfo: { name: "ACP Registry Validator", version: "1.0.0" },
    clientCapabilities: {
      terminal: true,
      fs: { readTextFile: true, writeTextFile: true },
      _meta: { terminal_output: true, "terminal-auth": true },
    },
  });
  const auth = init.error
    ? { ok: false, detail: `Agent error: ${JSON.stringify(init.error)}` }
    : registryAuthCheck(init.result?.authMethods);
  check("registry auth check (verify_agents.py --auth-check)", auth.ok, auth.detail);
  check("agentInfo.version", init.result?.agentInfo?.version === pkg.version, init.result?.agentInfo?.version);
  await probe.close();

  // 5. npx toolhost serves ACP: initialize, session/new, a slash command with no model.
  const project = mkdtempSync(path.join(work, "project-"));
  writeFileSync(path.join(project, "hello.txt"), "hello from the packed package\n");
  // `npx toolhost`, offline: the registry's own form (`npx --prefix DIR … PACKAGE`) over the install.
  const acp = agent("npx", ["--prefix", prefix, "--no-install", "toolhost"], project, env);
  const initialized = await acp.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  check(
    "npx toolhost: initialize",
    initialized.result?.protocolVersion === 1,
    JSON.stringify(initialized.error ?? initialized.result?.agentInfo),
  );
  const created = await acp.request("session/new", { cwd: project, mcpServers: [] });
  const sessionId = created.result?.sessionId;
  check("npx toolhost: session/new", typeof sessionId === "string", JSON.stringify(created.error ?? sessionId));
  const read = await acp.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/read hello.txt" }] });
  const shown = JSON.stringify(acp.notifications).includes("hello from the packed package");
  check(
    "npx toolhost: a slash command runs a tool with no model",
    read.result?.stopReason === "end_turn" && shown,
    JSON.stringify(read.error ?? read.result),
  );
  const code = await acp.close();
  check("npx toolhost: exits 0 when stdin closes", code === 0, String(code));

  // 6. A command through the policy: the bash grammar (its shipped wasm) parses the line.
  const call = JSON.parse(
    run(bin, ["call", "bash", JSON.stringify({ command: "echo packaged && cat hello.txt" }), "--mode", "full"], {
      cwd: project,
      env: { ...env, TOOLHOST_SANDBOX: "off" },
    }),
  );
  check(
    "toolhost call bash",
    JSON.stringify(call).includes("packaged") && JSON.stringify(call).includes("hello from"),
    JSON.stringify(call).slice(0, 200),
  );

  // 7. The GitHub Action's steps (action.yml, issue 35 §4) as a runner runs them: its install step
  // puts this tarball in a global prefix of its own, its run step runs a prompt, its summarize step reads the events.
  const globalPrefix = path.join(work, "global");
  const acted = await runAction({
    inputs: { prompt: "/read hello.txt", tarball, "node-version": "" },
    workspace: project,
    env: {
      ...env,
      NPM_CONFIG_PREFIX: globalPrefix,
      PATH: `${path.join(globalPrefix, "bin")}${path.delimiter}${env.PATH}`,
      TOOLHOST_HOME: "",
    },
  });
  const steps = acted.steps;
  check(
    "GitHub Action: install step (the tarball, npm install -g)",
    steps.install?.code === 0 && steps.install.outputs?.version === pkg.version,
    steps.install?.code === 0
      ? `toolhost ${steps.install.outputs?.version}`
      : (steps.install?.stdout ?? "") + (steps.install?.stderr ?? "").slice(-500),
  );
  check(
    "GitHub Action: run and summarize steps",
    steps.summarize?.code === 0 && acted.outputs["tool-calls"] === "1" && acted.outputs.answer.includes("hello from the packed package"),
    JSON.stringify({ ...acted.outputs, answer: acted.outputs.answer.slice(-80) }),
  );
  rmSync(acted.temp, { recursive: true, force: true });

  // 8. The action's default install: its own source as `uses:` checks it out (HEAD's files, no dist/,
  // no node_modules), built by npm ci and packed there (about two minutes here, most of it npm ci).
  const source = path.join(work, "action-source");
  mkdirSync(source);
  run("git", ["archive", "--output", path.join(work, "source.tar"), "HEAD"], { cwd: ROOT });
  run("tar", ["-xf", path.join(work, "source.tar"), "-C", source]);
  const sourcePrefix = path.join(work, "global-from-source");
  const fromSource = await runAction({
    root: source,
    inputs: { prompt: "/read hello.txt", "node-version": "" },
    workspace: project,
    env: {
      ...env,
      NPM_CONFIG_PREFIX: sourcePrefix,
      PATH: `${path.join(sourcePrefix, "bin")}${path.delimiter}${env.PATH}`,
      TOOLHOST_HOME: "",
    },
  });
  check(
    "GitHub Action: install step, default (the action's source, npm ci)",
    fromSource.steps.install?.code === 0 && fromSource.steps.summarize?.code === 0 && fromSource.outputs["tool-calls"] === "1",
    fromSource.steps.install?.code === 0
      ? `toolhost ${fromSource.steps.install.outputs?.version}`
      : ((fromSource.steps.install?.stdout ?? "") + (fromSource.steps.install?.stderr ?? "")).slice(-500),
  );
  rmSync(fromSource.temp, { recursive: true, force: true });
} catch (err) {
  check("ran to the end", false, err instanceof Error ? err.message : String(err));
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
process.exitCode = results.every((r) => r.ok) ? 0 : 1;
