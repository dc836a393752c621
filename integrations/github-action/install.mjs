#!/usr/bin/env node
// The action's install step: `npm install -g` of toolhost (the `tarball` input: a packed package;
// the `version` input: the npm registry's; by default the action's own source, built), then,
// on Linux, bubblewrap and socat for the sandbox when they are missing (apt-get), and the sandbox's
// state as `toolhost doctor` reports it, so a job whose commands cannot be sandboxed says so here.
// Inputs: version, tarball, sandbox, working-directory. Outputs: version (the installed toolhost's).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { annotate, fail, input, setOutputs } from "./action-io.mjs";

const MIN_NODE = [20, 19];
const ACTION_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Runs `cmd args`, its output shown in the log; its exit status (null when it could not start). */
const show = (cmd, args, options = {}) => spawnSync(cmd, args, { stdio: ["ignore", "inherit", "inherit"], ...options }).status;
const onPath = (cmd) => spawnSync("sh", ["-c", 'command -v "$1"', "sh", cmd], { stdio: "ignore" }).status === 0;

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1]))
  fail(`toolhost needs Node ${MIN_NODE.join(".")} or newer; this job has ${process.versions.node} (set the node-version input)`);

// What to install: a packed tarball; the registry's toolhost at a version; by default, the action's
// own source (the commit the workflow's `uses:` names) built and packed here.
const tarball = input("tarball");
const version = input("version");
let spec;
if (tarball) {
  spec = path.resolve(process.env.GITHUB_WORKSPACE ?? process.cwd(), tarball);
  if (!existsSync(spec)) fail(`tarball: ${spec} does not exist (a path to the file \`npm pack\` made, relative to the workspace)`);
} else if (version) {
  spec = `toolhost@${version}`;
} else {
  // dist/ is not in git: npm ci builds it (its prepare script) unless a checkout already has it.
  if (!existsSync(path.join(ACTION_ROOT, "dist", "cli.js"))) {
    process.stderr.write(`building toolhost from the action's source (${ACTION_ROOT}): npm ci\n`);
    if (show("npm", ["ci", "--no-audit", "--no-fund"], { cwd: ACTION_ROOT }) !== 0)
      fail("npm ci in the action's folder failed (its output is above)");
  }
  const into = mkdtempSync(path.join(process.env.RUNNER_TEMP || os.tmpdir(), "toolhost-pack-"));
  const packed = spawnSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", into], {
    cwd: ACTION_ROOT,
    encoding: "utf8",
  });
  if (packed.status !== 0) fail(`npm pack in the action's folder failed: ${packed.stderr}`);
  spec = path.join(into, JSON.parse(packed.stdout)[0].filename);
}
process.stderr.write(`npm install -g ${spec}\n`);
if (show("npm", ["install", "-g", "--no-audit", "--no-fund", spec]) !== 0) fail(`npm install -g ${spec} failed (its output is above)`);

const installed = spawnSync("toolhost", ["--version"], { encoding: "utf8" });
if (installed.status !== 0)
  fail(`toolhost is installed but \`toolhost --version\` failed: ${installed.error?.message ?? installed.stderr}`);
setOutputs({ version: installed.stdout.trim() });

// The sandbox: bubblewrap runs the commands, socat carries a call's allowed hosts.
const sandbox = input("sandbox").toLowerCase();
if (sandbox !== "off" && process.platform === "linux" && !(onPath("bwrap") && onPath("socat"))) {
  const root = process.getuid?.() === 0;
  const apt = (args) => (root ? show("apt-get", args) : show("sudo", ["-n", "apt-get", ...args]));
  const installed = onPath("apt-get") && apt(["update", "-qq"]) === 0 && apt(["install", "-y", "-qq", "bubblewrap", "socat"]) === 0;
  if (!installed) annotate("warning", "could not install bubblewrap and socat (apt-get): commands will not be sandboxed");
}
// What the sandbox will be, as toolhost sees it (doctor's exit code counts other problems, such as no model yet).
const doctor = spawnSync("toolhost", ["doctor"], {
  cwd: path.resolve(process.env.GITHUB_WORKSPACE ?? process.cwd(), input("working-directory", ".")),
  encoding: "utf8",
  env: { ...process.env, ...(sandbox ? { TOOLHOST_SANDBOX: sandbox } : {}) },
});
const state = doctor.stdout?.split("\n").find((line) => line.startsWith("sandbox:"));
if (state) process.stderr.write(`${state}\n`);
if (sandbox !== "off" && state && !state.startsWith("sandbox: active"))
  annotate(
    "warning",
    `${state.slice(0, 300)} — without it every command is refused (nobody can approve one here); see integrations/github-action/README.md, "The sandbox"`,
  );
