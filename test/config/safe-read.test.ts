import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readConfigTextSync, readConfinedFile, readConfinedFileSync } from "../../src/config/safe-read.js";
import { tempDir } from "../helpers.js";

const made: string[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((d) => fsp.rm(d, { recursive: true, force: true })));
});
async function dirs(): Promise<{ ws: string; outside: string }> {
  const ws = await tempDir({ "inside.md": "inside\n", "docs/real.md": "real\n", "big.txt": "x".repeat(100) });
  const outside = await tempDir({ "secret.txt": "SECRET\n" });
  made.push(ws, outside);
  return { ws, outside };
}

describe.each([
  { name: "async", read: readConfinedFile },
  { name: "sync", read: async (...args: Parameters<typeof readConfinedFileSync>) => readConfinedFileSync(...args) },
])("readConfinedFile ($name)", ({ read }) => {
  it("reads a regular file inside the roots, also through a link that stays inside, up to the cap", async () => {
    const { ws } = await dirs();
    await fsp.symlink(path.join(ws, "docs/real.md"), path.join(ws, "AGENTS.md"));
    const direct = await read(path.join(ws, "inside.md"), { roots: [ws], maxBytes: 1000 });
    expect(direct.ok && direct.data.toString()).toBe("inside\n");
    const linked = await read(path.join(ws, "AGENTS.md"), { roots: [ws], maxBytes: 1000 });
    expect(linked.ok && linked.data.toString()).toBe("real\n");
    const big = await read(path.join(ws, "big.txt"), { roots: [ws], maxBytes: 10 });
    expect(big.ok && [big.data.length, big.size]).toEqual([10, 100]);
    expect(await read(path.join(ws, "none.md"), { roots: [ws], maxBytes: 10 })).toEqual({ ok: false, missing: true });
  });

  it("refuses a symlink that leads out of the roots, naming where it leads", async () => {
    const { ws, outside } = await dirs();
    await fsp.symlink(path.join(outside, "secret.txt"), path.join(ws, "AGENTS.md"));
    await fsp.symlink("/proc/self/environ", path.join(ws, "CLAUDE.md"));
    const out = await read(path.join(ws, "AGENTS.md"), { roots: [ws], maxBytes: 1000 });
    expect(out).toMatchObject({ ok: false, missing: false });
    expect(!out.ok && !out.missing && out.reason).toContain(path.join(outside, "secret.txt"));
    expect(JSON.stringify(out)).not.toContain("SECRET");
    const environ = await read(path.join(ws, "CLAUDE.md"), { roots: [ws], maxBytes: 1000 });
    expect(environ).toMatchObject({ ok: false, missing: false, reason: expect.stringMatching(/outside/) });
  });

  it("refuses a FIFO and a device without blocking", async () => {
    const { ws } = await dirs();
    execFileSync("mkfifo", [path.join(ws, "AGENTS.md")]);
    const fifo = await read(path.join(ws, "AGENTS.md"), { roots: [ws], maxBytes: 1000 });
    expect(fifo).toMatchObject({ ok: false, missing: false, reason: expect.stringMatching(/not a regular file/) });
    const device = await read("/dev/zero", { roots: ["/dev"], maxBytes: 1000 });
    expect(device).toMatchObject({ ok: false, missing: false, reason: expect.stringMatching(/not a regular file/) });
  });
});

describe("readConfigTextSync", () => {
  it("gives a config file's text, null when missing, and an error for one refused", async () => {
    const { ws, outside } = await dirs();
    await fsp.writeFile(path.join(ws, ".mcp.json"), "{}");
    expect(readConfigTextSync(path.join(ws, ".mcp.json"), [ws])).toEqual({ text: "{}" });
    expect(readConfigTextSync(path.join(ws, "none.json"), [ws])).toEqual({ text: null });
    await fsp.symlink(path.join(outside, "secret.txt"), path.join(ws, "leak.json"));
    expect(readConfigTextSync(path.join(ws, "leak.json"), [ws])).toMatchObject({ text: null, error: expect.stringMatching(/outside/) });
  });
});
