import { existsSync, readFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { sandboxStatus } from "../sandbox-status.js";
import { useAgentEnv } from "../helpers.js";
import { runCli } from "./harness.js";

// `toolhost doctor` checks each configured language server as a session starts it: found (where),
// its version, and a real initialize handshake inside the sandbox. The real
// typescript-language-server of the dev dependencies, and a fake server (test/fixtures) that
// answers, one that dies at start and one that is not installed. The fake one tries to write
// into the workspace first: inside the sandbox the workspace is read-only, so the file must stay
// absent; with the sandbox off no server runs at all.

const BIN = fileURLToPath(new URL("../../node_modules/.bin", import.meta.url));
const FAKE = fileURLToPath(new URL("../fixtures/lsp-doctor-server.mjs", import.meta.url));
const TS_VERSION = (JSON.parse(readFileSync(path.join(BIN, "../typescript-language-server/package.json"), "utf8")) as { version: string })
  .version;

const t = useAgentEnv({ shared: true });
const sandbox = await sandboxStatus("cli/doctor-lsp.test.ts");

async function doctor(extraEnv: NodeJS.ProcessEnv = {}) {
  const touched = path.join(t.ws, "touched");
  const fake = (...args: string[]) => ({ command: process.execPath, args: [FAKE, ...args] });
  const lsp = {
    pyright: { disabled: true },
    fake: { ...fake("--touch", touched), extensions: [".fake"] },
    dead: { ...fake("--die"), extensions: [".dead"] },
    gone: { command: "no-such-language-server", extensions: [".gone"] },
  };
  await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ lsp }));
  // PATH: the dev dependencies' servers, and no bash-language-server (a built-in not installed).
  const env = { ...t.env(), PATH: `${BIN}${path.delimiter}${path.dirname(process.execPath)}${path.delimiter}/usr/bin:/bin`, ...extraEnv };
  const ran = await runCli(["doctor"], { cwd: t.ws, env });
  const block = ran.stdout.split("\nlanguage servers")[1]?.split("\n\n")[0] ?? "";
  const problems = ran.stdout.split(/\nproblems \(\d+\):\n/)[1] ?? "";
  return { ran, block, problems, touched: existsSync(touched) };
}

describe.skipIf(!sandbox.available)("toolhost doctor's language servers", () => {
  it("each one found, its version, and an initialize answered inside the sandbox", async () => {
    const { ran, block, problems, touched } = await doctor();
    expect(ran.code).toBe(1);
    expect(block).toContain(
      `typescript: ${path.join(BIN, "typescript-language-server")}, version ${TS_VERSION}, works (initialize answered, in the sandbox)`,
    );
    expect(block).toContain(`fake: ${process.execPath}, version 1.2.3, works`);
    expect(block).toMatch(/dead: .*, does not work: exited \(code 3\): fake-lsp: missing its runtime/);
    expect(block).toContain("gone: no-such-language-server not found");
    expect(block).toContain("bash: bash-language-server not found");
    expect(block).not.toContain("pyright");
    // The broken and the missing configured ones are problems; a built-in not installed is not.
    expect(problems).toMatch(/language server dead: .*does not work/);
    expect(problems).toContain("language server gone: no-such-language-server not found");
    expect(problems).not.toContain("bash-language-server");
    // The server ran in the sandbox: its write into the workspace was refused.
    expect(touched).toBe(false);
  });

  it("with the sandbox off none is run, and doctor says why", async () => {
    const { block, touched } = await doctor({ TOOLHOST_SANDBOX: "off" });
    expect(block).toMatch(/fake: .*not run: language servers run only inside the sandbox/);
    expect(block).not.toContain("works");
    expect(touched).toBe(false);
  });
});
