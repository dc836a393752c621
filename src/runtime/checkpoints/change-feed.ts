import { randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GitRun } from "./shadow-git.js";

// What changed in the workspace since the last snapshot, from the kernel's watch of its folders
// (the sandbox's map: runtime/sandbox/folder-watch.ts), handed to git as an fsmonitor hook (protocol
// 2), so a snapshot costs what changed: git stats, and lists untracked files in, only the paths
// named; every other index entry and untracked-cache folder it takes as it was. When nothing at all
// changed, the scanner does not run git (workspace-tree.ts).
//
// Tokens: each mark that names changes gets a new token; the answer says "since the token the last
// scan stored, these paths". The hook answers a token it does not know with "everything" (`/`): an
// index another session seeded, a scan that failed before git stored its token, a git command of
// toolhost's that ran without the hook (it drops the index's fsmonitor data), a watch that lost
// events. So a wrong answer costs time, never a missed change. The hook and the answer live in
// the shadow repository's own folder, which no sandbox can reach.

/**
 * What changed below a root (its real path) since the last call: absolute paths, a folder's whole
 * with a final `/`; undefined: unknown (everything may have); null: nothing watches the workspace
 * (no sandbox running): git looks at everything, without the hook.
 */
export type ChangeFeed = (root: string) => Promise<string[] | undefined | null>;

/** git's fsmonitor hook: `$1` the protocol version, `$2` the token the index holds. */
const HOOK = [
  "# toolhost's checkpoints: git's fsmonitor hook (protocol 2); see runtime/checkpoints/change-feed.ts",
  'if [ "$1" = 2 ] && [ -n "$TH_FSMONITOR_TOKEN" ]; then',
  '  if [ "$2" = "$TH_FSMONITOR_TOKEN" ]; then printf \'%s\\0\' "$TH_FSMONITOR_TOKEN"; exit 0; fi',
  '  if [ -n "$TH_FSMONITOR_SINCE" ] && [ "$2" = "$TH_FSMONITOR_SINCE" ]; then exec cat "$TH_FSMONITOR_ANSWER"; fi',
  "  printf '%s\\0/\\0' \"$TH_FSMONITOR_TOKEN\"; exit 0",
  "fi",
  "exit 1",
  "",
].join("\n");

/** A snapshot's view of the feed: whether anything changed, and git's settings for the scan. */
export interface ChangeMark {
  /** Nothing changed since the last scan that completed: its tree still holds. */
  unchanged: boolean;
  /** For each git command of the scan on the session's index (none: no watch, git looks at everything). */
  git: GitRun["fsmonitor"];
  /** The scan completed: its token is the one the index holds. */
  completed(): void;
}

const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** One session index's marks. */
export class FsMonitor {
  /** The token of the last scan that completed (the one the index holds), if any. */
  private token: string | undefined;
  private serial = 0;
  private readonly id = randomUUID().slice(0, 8);
  private hookWritten: Promise<void> | undefined;

  constructor(
    private readonly feed: ChangeFeed,
    /** The work tree (a real path). */
    private readonly root: string,
    /** The shadow repository's own folder: the hook and the answer files. */
    private readonly ownDir: string,
    /** The session's index file: its answer file sits beside it. */
    private readonly index: string,
  ) {}

  private hook(): Promise<void> {
    this.hookWritten ??= (async () => {
      const file = path.join(this.ownDir, "fsmonitor-hook.sh");
      if ((await readFile(file, "utf8").catch(() => "")) !== HOOK) await writeFile(file, HOOK, { mode: 0o600 });
    })();
    return this.hookWritten;
  }

  /** Asks the feed what changed; the scan that follows runs git with the returned settings. */
  async mark(): Promise<ChangeMark> {
    const changed = await this.feed(this.root);
    if (changed === null) {
      this.token = undefined;
      return { unchanged: false, git: undefined, completed: () => {} };
    }
    await this.hook();
    const since = this.token;
    // The index holds `since` only once a scan completed; until then, or when the feed does not know, everything.
    this.token = undefined;
    const unchanged = changed !== undefined && changed.length === 0 && since !== undefined;
    const token = unchanged ? since : `toolhost-${this.id}-${++this.serial}`;
    const answer = `${this.index}.fsmonitor`;
    const known = changed !== undefined && since !== undefined;
    if (known && !unchanged) await writeFile(answer, [token, ...changed.map((p) => this.relative(p))].map((p) => `${p}\0`).join(""));
    return {
      unchanged,
      git: {
        hook: `/bin/sh ${shellQuote(path.join(this.ownDir, "fsmonitor-hook.sh"))}`,
        env: {
          TH_FSMONITOR_TOKEN: token,
          TH_FSMONITOR_SINCE: known && !unchanged ? since : "",
          TH_FSMONITOR_ANSWER: answer,
        },
      },
      completed: () => {
        this.token = token;
      },
    };
  }

  /** A path as git's answer names it: work-tree relative with `/`, a folder with a final `/` (the root itself: `/`, everything). */
  private relative(p: string): string {
    const folder = p.endsWith("/");
    const rel = path
      .relative(this.root, folder ? p.slice(0, -1) : p)
      .split(path.sep)
      .join("/");
    if (rel === "") return "/";
    return folder ? `${rel}/` : rel;
  }
}
