import { spawn } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { CLI_PATH, useAgentEnv } from "../helpers.js";
import { RemoteClient } from "../acp/remote.js";
import { runCli } from "./harness.js";

// `toolhost serve`'s command line: its help, its refusals of bad flags, and the token it makes.

const t = useAgentEnv({ files: { "a.txt": "a\n" } });

describe("toolhost serve's command line", () => {
  it("--help says how to run it, on stdout", async () => {
    const ran = await runCli(["serve", "--help"], { cwd: t.ws, env: t.env() });
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/toolhost serve \[--listen HOST:PORT \| --socket PATH\]/);
    expect(ran.stdout).toMatch(/Authorization: Bearer <token>/);
    expect(ran.stdout).toMatch(/--allow-origin/);
  });

  it("refuses bad flags with exit 2", async () => {
    for (const [args, env, says] of [
      [["--listen", "nonsense"], {}, /--listen takes HOST:PORT/],
      [["--listen", "127.0.0.1:0", "--socket", "/tmp/x.sock"], {}, /--listen or --socket, not both/],
      [["--grace=-1"], {}, /--grace takes a whole number of at least 0/],
      [["--max-connections", "0"], {}, /--max-connections takes a whole number of at least 1/],
      [["--bogus"], {}, /Unknown option '--bogus'/],
      [[], { TOOLHOST_SERVE_TOKEN: "short" }, /TOOLHOST_SERVE_TOKEN must be at least 16/],
    ] as const) {
      const ran = await runCli(["serve", ...args], { cwd: t.ws, env: t.env(env) });
      expect(ran.code, args.join(" ")).toBe(2);
      expect(ran.stderr).toMatch(says);
    }
  });

  it("a port in use is one line, exit 1, no stack", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const ran = await runCli(["serve", "--listen", `127.0.0.1:${port}`], { cwd: t.ws, env: t.env() });
      expect(ran.code).toBe(1);
      expect(ran.stderr).toBe(`toolhost serve: 127.0.0.1:${port} is in use\n`);
    } finally {
      taken.close();
    }
  });

  it("without TOOLHOST_SERVE_TOKEN makes a token, prints it once on stderr, and takes it", async () => {
    const env = t.env();
    delete env.TOOLHOST_SERVE_TOKEN;
    const child = spawn(process.execPath, [CLI_PATH, "serve", "--listen", "127.0.0.1:0"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const [address, token] = await new Promise<[string, string]>((resolve) =>
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        const m = /http:\/\/(127\.0\.0\.1:\d+)\/acp[\s\S]*token: (\S+)/.exec(stderr);
        if (m) resolve([m[1]!, m[2]!]);
      }),
    );
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const c = new RemoteClient(`ws://${address}/acp`, "ws", { token });
    await c.initialize();
    expect(await c.newSession(t.ws)).toBeTruthy();
    c.close();
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr.split(token)).toHaveLength(2);
    expect(stdout).toBe("");
    expect(c.checker.problems).toEqual([]);
  });
});
