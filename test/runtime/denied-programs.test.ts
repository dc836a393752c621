import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deniedProgramBinds } from "../../src/runtime/sandbox/denied-programs.js";

// Which files a denied program's stub is bound over (the attack test, test/attack/deny-bypass.test.ts,
// shows the effect): the real file a name resolves to, a multi-call binary only by the name's own entry.

let dir: string;
beforeAll(async () => {
  dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "th-denied-")));
  const exe = async (name: string) => fsp.writeFile(path.join(dir, name), "#!/bin/sh\n", { mode: 0o755 });
  await exe("th-tool");
  await exe("th-py3.11");
  await fsp.symlink("th-py3.11", path.join(dir, "th-py"));
  await exe("busybox");
  await fsp.symlink("busybox", path.join(dir, "th-applet"));
  await fsp.link(path.join(dir, "busybox"), path.join(dir, "th-nc"));
});
afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

const targets = (names: string[], keep: string[] = []) => deniedProgramBinds(names, dir, keep).map((b) => b.target);

describe("deniedProgramBinds", () => {
  it("binds the stub over the real file a name resolves to, on the PATH and in the system's folders", () => {
    expect(targets(["th-tool"])).toEqual([path.join(dir, "th-tool")]);
    expect(targets(["th-py"])).toEqual([path.join(dir, "th-py3.11")]);
    // /bin/rm and /usr/bin/rm are one file on merged-usr: bound once, at its real path.
    const rm = targets(["rm"]);
    expect(rm.length).toBeGreaterThan(0);
    expect(new Set(rm).size).toBe(rm.length);
  });

  it("a multi-call binary: only the name's own hard link; a symlink to it is left out (the mount would cover every applet)", () => {
    expect(targets(["th-nc"])).toEqual([path.join(dir, "th-nc")]);
    expect(targets(["th-applet"])).toEqual([]);
  });

  it("never stubs the sandbox's own shell, a name that is not a program name, or one that is not installed", () => {
    expect(targets(["sh"], ["/bin/sh"])).toEqual([]);
    expect(targets(["../etc/passwd", "a b", "no-such-program-here"])).toEqual([]);
  });

  it("the stub is read-only and refuses with the program's name", async () => {
    const [bind] = deniedProgramBinds(["th-tool"], dir, []);
    const stat = await fsp.stat(bind?.stub ?? "");
    expect(stat.mode & 0o777).toBe(0o555);
    expect((await fsp.stat(path.dirname(bind?.stub ?? ""))).mode & 0o777).toBe(0o700);
    expect(await fsp.readFile(bind?.stub ?? "", "utf8")).toMatch(/toolhost: th-tool is denied by a permission rule.*exit 126/s);
  });
});
