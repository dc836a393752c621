import { randomUUID } from "node:crypto";
import path from "node:path";
import { AgentSession, type SessionFrontEnd } from "../agent/session/agent-session.js";
import { loadedSessionRecorder, newSessionRecorder } from "../agent/record/session-recorder.js";
import { restoredState } from "../agent/record/session-restore.js";
import { SessionStore } from "../agent/record/session-store.js";
import { SessionTools } from "../agent/session/tools.js";
import { toolhostHome } from "../config/paths.js";
import { firstTimeSaid } from "../config/said-once.js";
import type { BudgetLimits } from "../config/budget.js";
import type { Workspace } from "../config/workspace.js";
import { trustChangeNotice } from "../host/toolset-report.js";
import { CLI_SIDECAR_PREFIX } from "../runtime/sidecars.js";
import type { ResumedSession } from "./run-resume.js";

/**
 * The session a CLI command runs on: the toolset of `workspace` (and `profile`), in `mode`. Its
 * sidecar folder is named as a CLI folder, so the sweep removes what a command left after a day;
 * a recorded session's (`record`) stays with its file instead.
 */
export async function headlessSession(options: {
  /** The workspace, resolved once by the command (cli.ts's checkWorkspace). */
  workspace: Workspace;
  profile?: string;
  mode: string;
  /** Caps over the config's budget (`toolhost run`'s flags). */
  budget?: BudgetLimits;
  frontEnd: SessionFrontEnd;
  /** Save the session (unless TOOLHOST_SESSIONS=off), as the editor's sessions are. */
  record?: boolean;
  /** A saved session to go on with (`run --continue`, `--resume`): its history, its file, its profile unless `profile` says another. */
  resume?: ResumedSession;
}): Promise<AgentSession> {
  const { workspace, resume } = options;
  const state = resume ? restoredState(resume.stored) : undefined;
  const tools = await SessionTools.create(workspace, { profile: options.profile ?? state?.profile });
  // Nobody can answer the trust question here: a project that changed since it was trusted loads none of it, and says why.
  const changed = trustChangeNotice(tools.toolset.report);
  if (changed) process.stderr.write(`toolhost: ${changed}\n`);
  // A trusted project's file whose imports are not the trusted ones: not loaded, and said why.
  for (const problem of tools.toolset.report.errors.filter((e) => e.untrusted))
    process.stderr.write(`toolhost: ${problem.file}: ${problem.message}\n`);
  const store = new SessionStore();
  const id = resume?.stored.header.id ?? `${CLI_SIDECAR_PREFIX}${randomUUID()}`;
  const recorder = resume
    ? loadedSessionRecorder(store, resume.stored, resume.hold)
    : options.record
      ? newSessionRecorder(store, id, workspace)
      : undefined;
  const session = new AgentSession({ id, tools, frontEnd: options.frontEnd, recorder, budget: options.budget });
  if (state) session.restore(state);
  if (!session.setMode(options.mode)) throw new Error(`Unknown mode ${options.mode}`);
  for (const line of configNotes(session)) process.stderr.write(`toolhost: ${line}\n`);
  return session;
}

/**
 * What is wrong in the user's config file (a bad key falls back to its default) and the permission
 * rules that could not be read (fail closed: they make calls ask), once per command on stderr.
 */
function configNotes(session: AgentSession): string[] {
  const file = path.join(toolhostHome(), "config.json");
  const config = session.tools.toolset.report.errors.filter((e) => e.file === file).map((e) => `${e.file}: ${e.message}`);
  // The rules' line first: for a config file that cannot be read it says the most (fail closed).
  return [...session.policy.problems, ...config].filter(firstTimeSaid);
}
