import { Worker } from "node:worker_threads";
import { workerFile } from "../../tool/worker-file.js";
import type { GitFinding, NestedGitCheck, Plant } from "./nested-git.js";

// A session's map of nested repositories, asked of its worker thread (`nested-git-worker.ts`):
// the agent's thread sends the roots and awaits what to protect, and after the command awaits the
// plants. Started on the first scan (the first walk is the worker's); unref'd while idle, so it
// keeps no process alive. A worker that dies fails the call that waits on it (the command is
// refused, or its check reports the failure) and the next scan starts a new one, walking afresh.

export type MapRequest =
  | { id: number; op: "scan"; roots: readonly string[]; skip: readonly string[] }
  | { id: number; op: "changes"; check: number }
  | { id: number; op: "feed"; root: string }
  | { id: number; op: "prepare"; roots: readonly string[]; skip: readonly string[] }
  | { id: number; op: "failed"; check: number; plant: Plant }
  | { id: number; op: "release"; check: number }
  | { id: number; op: "close" };

export type MapReply =
  | { id: number; found: GitFinding[]; passMs: number }
  | { id: number; plants: Plant[]; passMs: number }
  | { id: number; paths: string[] | undefined }
  | { id: number; closed: true }
  | { id: number; prepared: true }
  | { id: number; error: string };

/** The map's worker, its store (a folder no sandbox reaches, `nested-git-store.ts`) read as it starts. */
const newMapWorker = (store: string | undefined) =>
  new Worker(workerFile(import.meta.url, "nested-git-worker.js"), { workerData: { store } });

/** How long a map started before its session (`prewarmMap`) waits to be taken before it ends. */
const UNCLAIMED_MS = 30_000;

/** Maps started before their session exists, by roots and store, until a session's `prepare` takes one. */
const prewarmed = new Map<string, { worker: Worker; timer: NodeJS.Timeout }>();

const prewarmKey = (roots: readonly string[], store: string | undefined) => JSON.stringify([roots, store ?? null]);

function dropPrewarmed(key: string): Worker | undefined {
  const entry = prewarmed.get(key);
  if (!entry) return undefined;
  prewarmed.delete(key);
  clearTimeout(entry.timer);
  return entry.worker;
}

/**
 * Starts a map's worker and its first pass over `roots` before the session that will use them
 * exists (an ACP session/new answered, the session still loading): the session's `prepare` with the
 * same roots and store takes it. One not taken within `unclaimedMs` is closed (its map kept) and ends. Unref'd: it keeps no
 * process alive. `skip` as for `scan`.
 */
export function prewarmMap(roots: readonly string[], skip: readonly string[], store: string | undefined, unclaimedMs = UNCLAIMED_MS): void {
  const key = prewarmKey(roots, store);
  if (prewarmed.has(key)) return;
  const worker = newMapWorker(store);
  worker.unref();
  const drop = () => {
    if (prewarmed.get(key)?.worker === worker) dropPrewarmed(key);
  };
  worker.on("error", drop);
  worker.on("exit", drop);
  const timer = setTimeout(() => {
    drop();
    // Closed as a session's is (its map kept, its fence folder removed), then ended.
    const end = setTimeout(() => void worker.terminate(), 5000);
    end.unref();
    worker.on("message", (reply: MapReply) => {
      if (!("closed" in reply)) return;
      clearTimeout(end);
      void worker.terminate();
    });
    worker.postMessage({ id: 0, op: "close" } satisfies MapRequest);
  }, unclaimedMs);
  timer.unref();
  prewarmed.set(key, { worker, timer });
  worker.postMessage({ id: 0, op: "prepare", roots, skip } satisfies MapRequest);
}

/** How many maps started before their session wait to be taken. */
export const prewarmedMaps = (): number => prewarmed.size;

export class NestedGitWorker {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (reply: MapReply) => void; reject: (err: Error) => void }>();
  /** A check the command no longer holds lets the worker drop the map of its start. */
  private readonly released = new FinalizationRegistry<number>((check) => this.send({ id: 0, op: "release", check }));
  /** How long the worker's last pass took (ms): a background process's check is spaced by it. */
  lastPassMs = 0;

  /** `store`: a folder no sandbox can reach where the map is kept between sessions (`nested-git-store.ts`), asked when the worker starts. */
  constructor(private readonly store: () => string | undefined = () => undefined) {}

  private start(taken?: Worker): Worker {
    if (this.worker) return this.worker;
    const worker = taken ?? newMapWorker(this.store());
    // A taken one's own listeners (its drop from the waiting list) go: it is this session's now.
    worker.removeAllListeners();
    worker.unref();
    const fail = (err: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on("message", (reply: MapReply) => {
      const w = this.waiting.get(reply.id);
      if (!w) return;
      this.waiting.delete(reply.id);
      if (!this.waiting.size) worker.unref();
      if ("error" in reply) w.reject(new Error(reply.error));
      else w.resolve(reply);
    });
    worker.on("error", (err) => fail(new Error(`the map of nested repositories failed: ${err.message}`)));
    worker.on("exit", (code) => fail(new Error(`the map of nested repositories ended (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private send(request: MapRequest): void {
    this.worker?.postMessage(request);
  }

  private ask(request: MapRequest): Promise<MapReply> {
    const worker = this.start();
    return new Promise((resolve, reject) => {
      this.waiting.set(request.id, { resolve, reject });
      worker.ref();
      worker.postMessage(request);
    });
  }

  /** As `NestedGitMap.scan`, in the worker: what to protect in `roots`, and the command's check. */
  async scan(roots: readonly string[], skip: readonly string[] = []): Promise<NestedGitCheck> {
    const id = this.nextId++;
    const reply = await this.ask({ id, op: "scan", roots, skip });
    if (!("found" in reply)) throw new Error("unexpected reply from the map of nested repositories");
    this.lastPassMs = reply.passMs;
    const worker = this.worker;
    const check: NestedGitCheck = {
      found: reply.found,
      changes: async () => {
        if (this.worker !== worker) throw new Error("the map of nested repositories was restarted since the command started");
        const after = await this.ask({ id: this.nextId++, op: "changes", check: id });
        if (!("plants" in after)) throw new Error("unexpected reply from the map of nested repositories");
        this.lastPassMs = after.passMs;
        return after.plants;
      },
      failed: (plant) => this.send({ id: 0, op: "failed", check: id, plant }),
    };
    this.released.register(check, id);
    return check;
  }

  /**
   * What changed below `root` (a real path) since the last call for it, absolute, a folder's whole
   * with a final `/`; undefined when that is not known (the first call, events lost, no watch, the
   * worker restarted): everything may have. See `FolderWatch.feed`.
   */
  async changedSince(root: string): Promise<string[] | undefined> {
    // A worker started by this call has no feed for the root yet: its answer is "everything".
    const reply = await this.ask({ id: this.nextId++, op: "feed", root });
    if (!("paths" in reply)) throw new Error("unexpected reply from the map of nested repositories");
    return reply.paths;
  }

  /**
   * The first pass over `roots` (a session's, as it starts), before any command asks: the walk, or
   * the check of the map an earlier session kept, runs while the person types. `skip` as for `scan`.
   */
  async prepare(roots: readonly string[], skip: readonly string[] = []): Promise<void> {
    // Started for these roots before the session existed: its first pass is under way, or done.
    if (!this.worker) {
      const taken = dropPrewarmed(prewarmKey(roots, this.store()));
      if (taken) this.start(taken);
    }
    await this.ask({ id: this.nextId++, op: "prepare", roots, skip });
  }

  /** Ends the worker and its watches (its fence folder removed). */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    await this.ask({ id: this.nextId++, op: "close" }).catch(() => undefined);
    this.worker = undefined;
    await worker.terminate();
  }
}
