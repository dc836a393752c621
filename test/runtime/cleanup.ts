import * as fsp from "node:fs/promises";
import { afterEach } from "vitest";
import { tempDir } from "../helpers.js";

// What a checkpoints test opens, closed after each test: handles (closed first), then folders.

export function useCleanup<H extends { close(): Promise<void> }>() {
  const cleanup: string[] = [];
  const handles: H[] = [];
  afterEach(async () => {
    for (const h of handles.splice(0)) await h.close().catch(() => {});
    for (const dir of cleanup.splice(0)) await fsp.rm(dir, { recursive: true, force: true });
  });
  /** A temporary folder with `files`, removed after the test. */
  const folder = async (files: Record<string, string | Uint8Array> = {}): Promise<string> => {
    const dir = await tempDir(files);
    cleanup.push(dir);
    return dir;
  };
  return { cleanup, handles, folder };
}
