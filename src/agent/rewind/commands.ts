import { randomUUID } from "node:crypto";
import type { Question, UserQuestions } from "../../tool/services.js";
import type { SessionFrontEnd } from "../session/front-end.js";
import { promptPreview, type RewindMode } from "./engine.js";
import { isRewindMode, pointLabels, RewindError, type RewindOutcome, type SessionRewind } from "./rewinder.js";

// The session's control commands (issue 23 §4): /rewind, /undo, /fork and /label. They move or
// name the session itself, so they are not prompts: nothing of them is recorded as a turn, and
// they are no rewind points. What they report goes to the front end; a rewind's own message is
// recorded (a load shows why the conversation changed there).

export interface ControlCommand {
  name: "rewind" | "undo" | "fork" | "label";
  /** The words after the name. */
  args: string[];
  /** The text after the name, as typed. */
  rest: string;
}

/** A control command, or null for any other text. */
export function parseControl(text: string): ControlCommand | null {
  const match = /^\/(rewind|undo|fork|label)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  const rest = (match[2] ?? "").trim();
  return { name: match[1] as ControlCommand["name"], args: rest ? rest.split(/\s+/) : [], rest };
}

export interface ControlHost {
  rewind: SessionRewind;
  /** Says what the command did (not recorded). */
  say(text: string): void | Promise<void>;
  /** Says what a rewind did, recorded (after the branch it made). */
  sayRecorded(text: string): void | Promise<void>;
  /** The front end, to show the question of `/rewind N` as a call (not recorded). */
  frontEnd: SessionFrontEnd;
  questions?: UserQuestions;
  signal: AbortSignal;
}

const MODE_CHOICES: readonly { label: string; mode: RewindMode; description: string }[] = [
  {
    label: "Files and conversation",
    mode: "both",
    description: "the files as they were before it, and the conversation without it and what came after",
  },
  { label: "Conversation only", mode: "conversation", description: "the files stay as they are now" },
  { label: "Files only", mode: "files", description: "the conversation goes on from here" },
];

/** Runs a control command; a problem it meets is said, not thrown. */
export async function runControl(command: ControlCommand, host: ControlHost): Promise<void> {
  try {
    switch (command.name) {
      case "rewind":
        return command.args.length ? await rewindTo(command.args, host) : await host.say(await listing(host.rewind));
      case "undo": {
        const flags = readFlags(command.args, "/undo takes nothing, dry-run or force");
        if (typeof flags === "string") return await host.say(flags);
        return await report(await host.rewind.undo(flags), host, flags.dryRun);
      }
      case "fork": {
        if (command.args.length) return await host.say("/fork takes nothing: it starts a new session from this point.");
        const id = await host.rewind.fork();
        return await host.say(
          `Forked: session ${id} starts from here, and this one stays as it is. Open it from the editor's session list, or \`toolhost sessions tree ${id}\`.`,
        );
      }
      case "label": {
        if (!command.rest) return await host.say("/label takes a name: `/label before-refactor` names this point of the session.");
        host.rewind.label(command.rest);
        return await host.say(`This point is labelled "${command.rest.trim()}" (\`toolhost sessions tree\` shows it).`);
      }
    }
  } catch (error) {
    if (!(error instanceof RewindError)) throw error;
    await host.say(error.message);
  }
}

/** `/rewind`: the points, numbered, with what each changed and their labels. */
async function listing(rewind: SessionRewind): Promise<string> {
  const tree = await rewind.tree();
  const points = await rewind.points();
  if (!points.length) return "There is no prompt to rewind to yet.";
  const labels = pointLabels(tree);
  const rows = points.map((p, i) => {
    const named = labels.get(p.messageId);
    const files = p.filesChanged ? `, ${p.filesChanged} file${p.filesChanged === 1 ? "" : "s"} changed` : "";
    return `${i + 1}. ${p.preview || "(no text)"} (${p.createdAt.slice(0, 16).replace("T", " ")}${files})${named ? ` [${named.join(", ")}]` : ""}`;
  });
  return [
    "Points you can rewind to (`/rewind N` puts things back as they were just before prompt N, or as a rewind found them):",
    "",
    ...rows,
    "",
    "`/rewind N both` (files and conversation), `conversation` or `files`; add `dry-run` to see what would change, `force` to overwrite files changed outside toolhost. `/undo` puts back the files of the last prompt that changed files.",
  ].join("\n");
}

/** Reads `dry-run` and `force` (and, for /rewind, a mode); a usage message for anything else. */
function readFlags(args: readonly string[], usage: string, modes = false): { dryRun: boolean; force: boolean; mode?: RewindMode } | string {
  const flags: { dryRun: boolean; force: boolean; mode?: RewindMode } = { dryRun: false, force: false };
  for (const arg of args) {
    const word = arg.toLowerCase().replace(/^--/, "");
    if (word === "dry-run" || word === "dry") flags.dryRun = true;
    else if (word === "force") flags.force = true;
    else if (modes && isRewindMode(word) && !flags.mode) flags.mode = word;
    else return `${usage}, not ${JSON.stringify(arg)}.`;
  }
  return flags;
}

/** `/rewind N [mode] [dry-run] [force]`: without a mode, asks which through the question flow. */
async function rewindTo(args: readonly string[], host: ControlHost): Promise<void> {
  const [n, ...rest] = args;
  const points = await host.rewind.points();
  const index = /^\d+$/.test(n ?? "") ? Number(n) - 1 : -1;
  const point = points[index];
  if (!point) {
    const range = points.length ? `1 to ${points.length}` : "none yet";
    return host.say(`/rewind takes the number of a prompt (${range}; \`/rewind\` lists them), not ${JSON.stringify(n)}.`);
  }
  const flags = readFlags(rest, "/rewind N takes a mode (both, conversation or files), dry-run and force", true);
  if (typeof flags === "string") return host.say(flags);
  const mode = flags.mode ?? (await askMode(host, index + 1, point.preview));
  if (!mode) return;
  await report(await host.rewind.rewind(point.messageId, mode, flags), host, flags.dryRun);
}

/** Asks what goes back, shown on a call of its own (the question needs one); undefined when not answered. */
async function askMode(host: ControlHost, n: number, preview: string): Promise<RewindMode | undefined> {
  if (!host.questions) {
    await host.say(
      `Say what goes back: \`/rewind ${n} both\` (files and conversation), \`/rewind ${n} conversation\` or \`/rewind ${n} files\`.`,
    );
    return undefined;
  }
  // An id of its own, not the session's call numbering: nothing of it is recorded, and a recorded call must never reuse it.
  const callId = `rewind_${randomUUID().slice(0, 8)}`;
  const title = `Rewind to before prompt ${n}: ${promptPreview(preview)}`;
  const info = { callId, toolId: "rewind", kind: "other" as const, title, locations: [], args: { prompt: n } };
  await host.frontEnd.pending(info);
  const question: Question = {
    question: `Put back what was there before prompt ${n} ("${promptPreview(preview)}")?`,
    header: "Rewind",
    options: MODE_CHOICES.map(({ label, description }) => ({ label, description })),
  };
  const answer = await host.questions.ask({ callId, title, questions: [question] }, host.signal);
  const picked = answer.outcome === "answered" ? MODE_CHOICES.find((c) => answer.answers[0]?.includes(c.label)) : undefined;
  const text = picked ? `Rewinding: ${picked.label.toLowerCase()}.` : "Nothing was rewound.";
  await host.frontEnd.done(callId, { type: "output", data: text, metadata: { duration_ms: 0 } }, info);
  if (!picked && answer.outcome === "unsupported")
    await host.say(`The editor cannot ask which: \`/rewind ${n} both\`, \`/rewind ${n} conversation\` or \`/rewind ${n} files\`.`);
  return picked?.mode;
}

async function report(outcome: RewindOutcome, host: ControlHost, dryRun: boolean): Promise<void> {
  await (dryRun || !outcome.applied ? host.say(outcome.message) : host.sayRecorded(outcome.message));
}
