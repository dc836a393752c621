import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { RuntimeSession } from "../../src/runtime/session.js";
import { tempDir } from "../helpers.js";

// RuntimeSession.allowRead: a loaded skill's folder joins every call's read scope, never its write scope.

let base: string;
beforeEach(async () => {
  base = await tempDir({ "ws/a.txt": "a\n", "skills/one/notes.md": "notes\n", "weird/{x}/f.md": "f\n" });
  await fsp.symlink(path.join(base, "skills"), path.join(base, "linked"));
});
afterEach(async () => {
  await fsp.rm(base, { recursive: true, force: true });
});

it("adds a folder (and its real path) to the read scope of every requirement set, not the write scope", async () => {
  const runtime = new RuntimeSession({ workspace: path.join(base, "ws") });
  const requires = { fs: { read: ["{workspace}/**"], write: ["{workspace}/**"] } };
  const file = path.join(base, "linked/one/notes.md");
  expect(runtime.scope(requires).read.matches(file)).toBe(false);
  runtime.allowRead(path.join(base, "linked/one"));
  const scope = runtime.scope(requires);
  expect(scope.read.matches(file)).toBe(true);
  expect(scope.read.matches(path.join(base, "skills/one/notes.md"))).toBe(true);
  expect(scope.write.matches(file)).toBe(false);
  expect(runtime.scope({}).read.matches(file)).toBe(true);
  expect(scope.read.matches(path.join(base, "skills/other.md"))).toBe(false);
  // A folder whose path reads as a scope variable stays out, and breaks nothing.
  runtime.allowRead(path.join(base, "weird/{x}"));
  expect(runtime.scope(requires).read.matches(path.join(base, "weird/{x}/f.md"))).toBe(false);
  await runtime.close();
});
