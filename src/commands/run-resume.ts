import { SessionStore, type StoredSession } from "../agent/record/session-store.js";
import { SessionHeldError, takeHold, type SessionHold } from "../agent/record/session-hold.js";
import { resolveWorkspace, type Workspace } from "../config/workspace.js";
import { resolveSessionId } from "./sessions.js";

/** `run --continue` (the workspace's newest session) or `run --resume ID` (an id or a unique prefix). */
export type ResumeChoice = { continue: true } | { id: string };

/** A saved session to go on with: read, held (no other process may write it meanwhile), and its workspace. */
export interface ResumedSession {
  stored: StoredSession;
  hold: SessionHold;
  workspace: Workspace;
}

/** The shortest prefix `--resume` takes: shorter ones fit too many sessions to be a choice. */
const MIN_PREFIX = 8;

/**
 * The session `choice` names, held for this process, or why it cannot be gone on with (the text of
 * a usage error: exit 2). A session of another workspace is refused: its files are elsewhere.
 */
export async function resumeSession(choice: ResumeChoice, workspace: Workspace): Promise<ResumedSession | { error: string }> {
  const store = new SessionStore();
  let id: string;
  if ("continue" in choice) {
    const { sessions } = await store.list({ cwd: workspace.cwd, limit: Number.MAX_SAFE_INTEGER });
    const newest = sessions.find((s) => !s.problem);
    if (!newest) return { error: `--continue: no saved session in ${workspace.cwd} (toolhost sessions list --cwd DIR shows them)` };
    id = newest.id;
  } else {
    if (choice.id.length < MIN_PREFIX && !(await store.find(choice.id)))
      return { error: `--resume ${choice.id}: give the session's id or at least ${MIN_PREFIX} characters of it` };
    const found = await resolveSessionId(store, choice.id);
    if ("error" in found) return { error: `--resume: ${found.error}` };
    id = found.id;
  }
  const stored = await store.read(id);
  if (!stored) return { error: `session ${id} cannot be opened: ${(await store.problem(id)) ?? "its file is gone"}` };
  if (stored.header.cwd !== workspace.cwd)
    return { error: `session ${id} works in ${stored.header.cwd}, not ${workspace.cwd}: run it with --cwd ${stored.header.cwd}` };
  let hold: SessionHold;
  try {
    hold = takeHold(stored.file, id);
  } catch (err) {
    if (err instanceof SessionHeldError) return { error: err.message };
    throw err;
  }
  return { stored, hold, workspace: resolveWorkspace(stored.header.cwd, stored.header.additionalDirectories ?? []) };
}
