import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { writeLauncher } from "../../src/runtime/sandbox/launcher.js";

// The launcher an editor terminal starts for a sandboxed command: it holds the wrapper's part of
// argv and runs the command it is given, word for word.

const run = promisify(execFile);

describe("writeLauncher", () => {
  it("runs its prefix, then its arguments exactly as given, and is removed after", async () => {
    const prefix = ["-c", `printf '[%s]' "$0" "$@"`, "it's $HOME"];
    const launcher = await writeLauncher("/bin/sh", prefix);
    expect((await fsp.stat(launcher.path)).mode & 0o777).toBe(0o700);
    const { stdout } = await run(launcher.path, ["a b", "'q'", "$(echo no)", "--", ""]);
    expect(stdout).toBe("[it's $HOME][a b]['q'][$(echo no)][--][]");
    await launcher.remove();
    await expect(fsp.access(launcher.path)).rejects.toThrow();
  });
});
