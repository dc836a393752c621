import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { asWorkspace, projectFolderName, resolveWorkspace } from "../../src/config/workspace.js";
import { tempDir } from "../helpers.js";

// config/workspace.ts: a session's workspace, resolved once — its roots as given, their real
// paths, the trust key, the session store's folder name, whether it is the home folder.

let real: string;
let other: string;
let link: string;
const made: string[] = [];

beforeEach(async () => {
  real = await tempDir({ "a.txt": "a\n" });
  other = await tempDir();
  const parent = await tempDir();
  link = path.join(parent, "project");
  await fsp.symlink(real, link);
  made.push(real, other, parent);
});
afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => fsp.rm(dir, { recursive: true, force: true })));
});

describe("resolveWorkspace", () => {
  it("keeps a symlinked cwd as it was given and resolves it once: real roots, trust key, project folder", () => {
    const ws = resolveWorkspace(link, [other]);
    expect(ws).toEqual({
      cwd: link,
      additionalRoots: [other],
      roots: [link, other],
      realRoots: [real, other],
      trustKey: real,
      projectFolder: projectFolderName(link),
      isHome: false,
    });
  });

  it("makes a relative folder absolute, and a folder that does not exist its own real path", () => {
    const missing = path.join(other, "gone");
    const ws = resolveWorkspace(path.relative(process.cwd(), missing));
    expect(ws.cwd).toBe(missing);
    expect(ws.trustKey).toBe(missing);
  });

  it("knows the home folder, also through a link to it", async () => {
    expect(resolveWorkspace(os.homedir()).isHome).toBe(true);
    const toHome = path.join(other, "home");
    await fsp.symlink(os.homedir(), toHome);
    expect(resolveWorkspace(toHome)).toMatchObject({ cwd: toHome, isHome: true });
    expect(resolveWorkspace(real).isHome).toBe(false);
    // An additional root that is the home folder hands tools all of it too.
    expect(resolveWorkspace(real, [toHome]).isHome).toBe(true);
    expect(resolveWorkspace(real, [other]).isHome).toBe(false);
  });

  it("asWorkspace passes a Workspace through untouched and resolves a folder", () => {
    const ws = resolveWorkspace(link);
    expect(asWorkspace(ws)).toBe(ws);
    expect(asWorkspace(link)).toEqual(ws);
  });
});
