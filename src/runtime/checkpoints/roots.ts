import { realpath } from "node:fs/promises";
import path from "node:path";
import { isInside } from "../../tool/paths.js";
import type { ChangeFeed } from "./change-feed.js";
import type { Checkpoints, Snapshot } from "./checkpoints.js";
import { openCheckpoints } from "./repository.js";

// A session's checkpoints over all its roots: the primary root (the project's folder) and the
// further ones (ACP's additionalDirectories), each in a shadow repository of its own
// (repository.ts), each with everything one root has: its snapshots, its restore with the conflict
// check, its left-out files, its lock. A root inside another root is left out of the outer one's
// snapshots (`Checkpoints.exclude`): every file belongs to one root's checkpoints. A root that is the
// same folder as one before it (through a link) is checkpointed once, as the first. A further root
// whose checkpoints cannot be opened (it is gone, not a folder) is listed with the reason; without
// the primary root's there are none at all.

export interface RootCheckpoints {
  /** The root as the session spells it (absolute). */
  root: string;
  /** Its real path (the work tree). */
  real: string;
  checkpoints: Checkpoints;
}

export interface RootSnapshot {
  root: string;
  /** The snapshot, or why there is none. */
  snapshot?: Snapshot;
  error?: unknown;
}

export type OpenedWorkspaceCheckpoints = { available: true; checkpoints: WorkspaceCheckpoints } | { available: false; reason: string };

export interface WorkspaceCheckpointsOptions {
  /** The primary root first, then the further roots: absolute, as the session spells them. */
  roots: readonly string[];
  /** The project's folder name under `checkpoints/`. */
  project: string;
  session: string;
  home?: string;
  maxFileBytes?: number;
  /** What changed below a root since the last snapshot (the sandbox's watch), for every root's checkpoints. */
  changes?: ChangeFeed;
}

/** Opens a session's checkpoints of every root, or says why there are none (the primary root's could not be opened). */
export async function openWorkspaceCheckpoints(options: WorkspaceCheckpointsOptions): Promise<OpenedWorkspaceCheckpoints> {
  const [primaryRoot = "", ...further] = options.roots;
  const { project, session, home, maxFileBytes, changes } = options;
  const common = { project, session, home, maxFileBytes, changes };
  const primary = await openCheckpoints({ ...common, root: primaryRoot });
  if (!primary.available) return primary;
  const opened: RootCheckpoints[] = [{ root: primaryRoot, real: primary.checkpoints.root, checkpoints: primary.checkpoints }];
  const unavailable: { root: string; reason: string }[] = [];
  for (const root of further) {
    const real = await realpath(root).catch(() => undefined);
    if (real !== undefined && opened.some((o) => o.real === real)) continue;
    const one = await openCheckpoints({ ...common, root, further: true });
    if (one.available) opened.push({ root, real: one.checkpoints.root, checkpoints: one.checkpoints });
    else unavailable.push({ root, reason: one.reason });
  }
  for (const outer of opened) {
    const inner = opened
      .filter((o) => o.real !== outer.real && isInside(o.real, outer.real))
      .map((o) => path.relative(outer.real, o.real).split(path.sep).join("/"));
    if (inner.length) await outer.checkpoints.exclude(inner);
  }
  return { available: true, checkpoints: new WorkspaceCheckpoints(opened, unavailable) };
}

/** One session's checkpoints of all its roots. */
export class WorkspaceCheckpoints {
  constructor(
    /** The roots checkpointed: the primary first. */
    readonly roots: readonly RootCheckpoints[],
    /** Further roots whose checkpoints could not be opened, and why. */
    readonly unavailable: readonly { root: string; reason: string }[] = [],
  ) {}

  /** The primary root's checkpoints. */
  get primary(): Checkpoints {
    return (this.roots[0] as RootCheckpoints).checkpoints;
  }

  /** The further roots checkpointed. */
  get further(): readonly RootCheckpoints[] {
    return this.roots.slice(1);
  }

  /**
   * The checkpoints of a further root a session's record names (as it spelled it), found by its
   * spelling or its real path; undefined when it is no further root checkpointed here.
   */
  async find(root: string): Promise<Checkpoints | undefined> {
    const further = this.further;
    const named = further.find((r) => r.root === root || r.root === path.resolve(root));
    if (named) return named.checkpoints;
    const real = await realpath(root).catch(() => undefined);
    return further.find((r) => r.real === real)?.checkpoints;
  }

  /** Records every root as it is now, side by side; a root whose snapshot failed has its error instead. */
  snapshot(label: string): Promise<RootSnapshot[]> {
    return Promise.all(
      this.roots.map(({ root, checkpoints }) =>
        checkpoints.snapshot(label).then(
          (snapshot): RootSnapshot => ({ root, snapshot }),
          (error: unknown): RootSnapshot => ({ root, error }),
        ),
      ),
    );
  }

  /** Brings every root's index up to date (see `Checkpoints.warm`). */
  async warm(): Promise<void> {
    await Promise.all(this.roots.map(({ checkpoints }) => checkpoints.warm()));
  }

  /** Waits for the calls under way in every root; later calls are refused. */
  async close(): Promise<void> {
    await Promise.all(this.roots.map(({ checkpoints }) => checkpoints.close()));
  }
}
