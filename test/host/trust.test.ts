import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { isTrusted, readTrust, trust, trustFile, untrust } from "../../src/host/trust.js";
import { tempDir } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

let home: string;
beforeEach(async () => {
  home = await useTempHome();
});

describe("project trust", () => {
  it("is stored per real path, so every spelling of a project agrees", async () => {
    const project = await tempDir();
    const link = path.join(await tempDir(), "link");
    await fsp.symlink(project, link);
    expect(await isTrusted(project)).toBe(false);
    expect(await trust(link)).toEqual({ path: project, already: false });
    expect(await isTrusted(project)).toBe(true);
    expect(await isTrusted(`${project}/`)).toBe(true);
    expect(await trust(project)).toEqual({ path: project, already: true });
    expect(await isTrusted(path.join(project, "sub"))).toBe(false);
    const store = JSON.parse(await fsp.readFile(trustFile(home), "utf8"));
    expect(Object.keys(store.projects)).toEqual([project]);
    expect((await fsp.stat(trustFile(home))).mode & 0o777).toBe(0o600);
    expect(await untrust(link)).toEqual({ path: project, was: true });
    expect(await isTrusted(project)).toBe(false);
  });

  it("writes atomically and keeps every concurrent grant", async () => {
    const projects = await Promise.all(Array.from({ length: 8 }, () => tempDir()));
    await Promise.all(projects.map((p) => trust(p)));
    for (const p of projects) expect(await isTrusted(p)).toBe(true);
    expect((await fsp.readdir(home)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("trusts nothing while the store is broken, and refuses to overwrite it", async () => {
    const project = await tempDir();
    await trust(project);
    await fsp.writeFile(trustFile(home), '{"version": 1, "projects": []}');
    expect(await isTrusted(project)).toBe(false);
    expect((await readTrust(home)).error).toMatch(/trusted\.json/);
    await expect(trust(project)).rejects.toThrow(/Fix or delete the file/);
    expect(await fsp.readFile(trustFile(home), "utf8")).toBe('{"version": 1, "projects": []}');
  });
});
