import path from "node:path";
import { SessionTree, type TreeEntry } from "../agent/record/session-format.js";
import { loadedSessionRecorder } from "../agent/record/session-recorder.js";
import { SessionHeldError, takeHold, type SessionHold } from "../agent/record/session-hold.js";
import type { SessionStore, StoredSession } from "../agent/record/session-store.js";
import { findPoint, promptPreview, rewindPoints, type RewindMode } from "../agent/rewind/engine.js";
import { forkStoredSession, pointLabels, RewindError, SessionRewind, sessionRoots } from "../agent/rewind/rewinder.js";
import { openWorkspaceCheckpoints } from "../runtime/checkpoints/roots.js";

// `toolhost sessions tree|rewind|fork ID` (issue 23 §3–4): a stored session's tree (its prompts,
// labels and the branches rewinds left), a rewind of its files and/or conversation without an
// editor, and a fork. A session open in another toolhost process cannot be rewound (its hold).

export interface TreeCommandOptions {
  json: boolean;
  /** rewind: the prompt (its number, or its message id); fork: the prompt whose turn the fork ends with. */
  to?: string;
  at?: string;
  mode?: RewindMode;
  dryRun?: boolean;
  force?: boolean;
  /** The real stdout. */
  out: (text: string) => Promise<void>;
}

const when = (iso: string) => iso.slice(0, 16).replace("T", " ");

/** The session's tree, as text: the prompts on the current path, numbered, then each branch left. */
function treeText(stored: StoredSession, tree: SessionTree): string {
  const points = rewindPoints(tree);
  const labels = pointLabels(tree);
  const lines = [`Session ${stored.header.id}  [${stored.header.cwd}]`];
  if (stored.header.forkedFrom) lines.push(`Forked from ${stored.header.forkedFrom.session} at ${stored.header.forkedFrom.entryId}`);
  lines.push(
    "",
    points.length
      ? "Points (the current path's prompts and the states rewinds left; `toolhost sessions rewind ID --to N`):"
      : "No prompt yet.",
  );
  points.forEach((p, i) => {
    const files = p.filesChanged ? `  ${p.filesChanged} file${p.filesChanged === 1 ? "" : "s"} changed` : "";
    const label = labels.get(p.messageId);
    lines.push(
      `  ${String(i + 1).padStart(3)}  ${p.messageId}  ${when(p.createdAt)}  ${p.preview || "(no text)"}${files}${label ? `  [${label.join(", ")}]` : ""}`,
    );
  });
  const left = tree.branches().filter((b) => b.length > 0);
  if (left.length) {
    lines.push("", "Branches left by rewinds (rewind --to a prompt's id moves there):");
    for (const branch of left) {
      const entries = branchEntries(tree, branch.tipId, branch.forkId);
      // A label a rewind passed stays with its turn, on the branch it is now on.
      const named = pointLabels(tree, tree.pathTo(branch.tipId));
      const prompts = entries.filter((e): e is Extract<TreeEntry, { type: "user" }> => e.type === "user");
      lines.push(`  from ${branch.forkId ?? "(a root)"}: ${branch.summary ?? `${prompts.length} prompt(s)`}`);
      for (const p of prompts)
        lines.push(
          `        ${p.id}  ${when(p.at)}  ${promptPreview(p.text) || "(no text)"}${named.get(p.id) ? `  [${named.get(p.id)?.join(", ")}]` : ""}`,
        );
    }
  }
  return `${lines.join("\n")}\n`;
}

/** The entries of a branch after its fork, up to its tip. */
function branchEntries(tree: SessionTree, tipId: string, forkId: string | null): TreeEntry[] {
  const path = tree.pathTo(tipId);
  const from = forkId === null ? 0 : path.findIndex((e) => e.id === forkId) + 1;
  return path.slice(from);
}

/** `sessions tree ID`. */
export async function runTree(stored: StoredSession, options: TreeCommandOptions): Promise<number> {
  const tree = new SessionTree(stored.entries);
  if (options.json) {
    const labels = Object.fromEntries(tree.labels());
    await options.out(
      `${JSON.stringify({ id: stored.header.id, points: rewindPoints(tree), branches: tree.branches(), labels }, null, 2)}\n`,
    );
  } else await options.out(treeText(stored, tree));
  return 0;
}

/**
 * A SessionRewind over a stored session, with its checkpoints of every root it had (its header's,
 * and any its checkpoints name); `hold`: this process writes to it.
 */
function rewinder(store: SessionStore, stored: StoredSession, hold?: SessionHold) {
  const recorder = loadedSessionRecorder(store, stored, hold);
  const project = path.basename(path.dirname(stored.file));
  const roots = sessionRoots(stored.header, stored.entries);
  const opened = openWorkspaceCheckpoints({ roots, project, session: stored.header.id });
  const rewind = new SessionRewind({
    recorder,
    checkpoints: async () => {
      const o = await opened;
      return o.available ? { checkpoints: o.checkpoints } : { reason: o.reason };
    },
  });
  const close = async () => {
    recorder.close();
    const o = await opened;
    if (o.available) await o.checkpoints.close();
  };
  return { rewind, close };
}

/** `sessions rewind ID --to N|MESSAGE_ID [--files|--conversation] [--dry-run] [--force]`. */
export async function runRewind(store: SessionStore, stored: StoredSession, options: TreeCommandOptions): Promise<number> {
  if (!options.to) {
    process.stderr.write(
      "toolhost: sessions rewind needs --to N (a prompt's number) or --to MESSAGE_ID (toolhost sessions tree ID lists them)\n",
    );
    return 2;
  }
  const point = findPoint(new SessionTree(stored.entries), options.to);
  if ("problem" in point) {
    process.stderr.write(`toolhost: ${point.problem}\n`);
    return 1;
  }
  let hold: SessionHold | undefined;
  if (!options.dryRun) {
    try {
      hold = takeHold(stored.file, stored.header.id);
    } catch (error) {
      if (!(error instanceof SessionHeldError)) throw error;
      process.stderr.write(`toolhost: ${error.message}\n`);
      return 1;
    }
  }
  const { rewind, close } = rewinder(store, stored, hold);
  try {
    const outcome = await rewind.rewind(point.point.id, options.mode ?? "both", { dryRun: options.dryRun, force: options.force });
    await options.out(options.json ? `${JSON.stringify(outcome, null, 2)}\n` : `${outcome.message}\n`);
    return outcome.failed.length ? 1 : 0;
  } finally {
    await close();
  }
}

/** `sessions fork ID [--at N]`: a new session from the end of prompt N's turn (default: where the session is now). */
export async function runFork(store: SessionStore, stored: StoredSession, options: TreeCommandOptions): Promise<number> {
  const tree = new SessionTree(stored.entries);
  let at: string | undefined;
  if (options.at !== undefined) {
    const point = findPoint(tree, options.at);
    if ("problem" in point || point.point.type !== "user") {
      process.stderr.write(
        `toolhost: ${"problem" in point ? point.problem : `${options.at} is a saved state, not a prompt: a fork ends with a prompt's turn.`}\n`,
      );
      return 1;
    }
    // The last entry of that prompt's turn on the current path: up to the next prompt.
    const path = tree.pathTo();
    const start = path.findIndex((e) => e.id === point.point.id);
    const next = path.findIndex((e, i) => i > start && e.type === "user");
    at = (next < 0 ? path.at(-1) : path[next - 1])?.id;
  }
  try {
    const id = await forkStoredSession(store, stored, at);
    await options.out(options.json ? `${JSON.stringify({ id })}\n` : `Forked session ${stored.header.id} as ${id}.\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof RewindError)) throw error;
    process.stderr.write(`toolhost: ${error.message}\n`);
    return 1;
  }
}
