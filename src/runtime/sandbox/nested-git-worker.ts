import { isInside } from "../../tool/paths.js";
import { parentPort, workerData } from "node:worker_threads";
import { FolderWatch } from "./folder-watch.js";
import { NestedGitMap, type Plant } from "./nested-git.js";
import { FolderMapStore } from "./nested-git-store.js";
import type { MapReply, MapRequest } from "./nested-git-client.js";

// The worker thread that holds a session's map of nested repositories (`nested-git.ts`) and the
// kernel's watch of its folders (`folder-watch.ts`): the first walk and every pass run here, never
// on the agent's thread, whose requests (a cancel, another session's prompt) they would hold.
// One request at a time: each pass waits for the fence, then runs to its end.

/** Without a watch (no temp folder for its fence), every pass is whole, by ctime: slower, as sound. */
function startWatch(): FolderWatch | undefined {
  try {
    return new FolderWatch();
  } catch {
    return undefined;
  }
}

const watch = startWatch();
const map = new NestedGitMap(undefined, watch);
/** Where the map is kept between sessions (`nested-git-store.ts`), when the client names a place no sandbox reaches. */
const storeDir = (workerData as { store?: string } | undefined)?.store;
const store = storeDir ? new FolderMapStore(storeDir) : undefined;
/** How long after a pass that changed the map it is kept: one write for a burst of commands. */
const SAVE_AFTER_MS = 2000;
let saveTimer: NodeJS.Timeout | undefined;
const saved = new Map<string, unknown>();

/** Roots the map does not hold yet start from what an earlier session kept of them. */
function seed(roots: readonly string[]): void {
  if (!store) return;
  for (const root of roots) {
    if (map.holds(root)) continue;
    const tree = store.read(root);
    if (tree) {
      map.seed(root, tree);
      saved.set(root, tree);
    }
  }
}

/** Keeps each root whose map changed since it was last kept. */
async function save(): Promise<void> {
  clearTimeout(saveTimer);
  saveTimer = undefined;
  if (!store) return;
  const writes: Promise<void>[] = [];
  for (const [root, tree] of map.current()) {
    if (saved.get(root) === tree) continue;
    saved.set(root, tree);
    writes.push(store.save(root, tree));
  }
  await Promise.all(writes);
}

function saveSoon(): void {
  if (!store || saveTimer) return;
  saveTimer = setTimeout(() => void save(), SAVE_AFTER_MS);
  saveTimer.unref();
}
const checks = new Map<number, { changes(): Plant[]; failed(plant: Plant): void }>();
/** What the last command's scan left unwalked (the quarantine, hidden folders): a mark's pass leaves them so too. */
let lastSkip: readonly string[] = [];
let queue: Promise<unknown> = Promise.resolve();

async function answer(request: MapRequest): Promise<MapReply | undefined> {
  switch (request.op) {
    case "scan": {
      await watch?.fence();
      lastSkip = request.skip;
      seed(request.roots);
      const check = map.scan(request.roots, request.skip);
      checks.set(request.id, check);
      return { id: request.id, found: check.found, passMs: map.lastPassMs };
    }
    case "changes": {
      const check = checks.get(request.check);
      if (!check) throw new Error("the sandbox's check of nested repositories is gone");
      await watch?.fence();
      return { id: request.id, plants: check.changes(), passMs: map.lastPassMs };
    }
    case "feed": {
      // The checkpoints' mark: every change made before it delivered, the map current (new folders
      // watched, moved ones dropped), then what changed below the root since its last mark.
      if (!watch) return { id: request.id, paths: undefined };
      await watch.fence();
      seed([request.root]);
      map.refresh([request.root], lastSkip);
      const paths = watch.feed(request.root);
      // A folder the map does not walk is not watched: git looks at all of it, every time.
      const unwalked = lastSkip.filter((p) => isInside(p, request.root)).map((p) => `${p}/`);
      return { id: request.id, paths: paths && [...paths, ...unwalked] };
    }
    case "prepare": {
      await watch?.fence();
      lastSkip = request.skip;
      seed(request.roots);
      map.refresh(request.roots, request.skip);
      return { id: request.id, prepared: true };
    }
    case "failed":
      checks.get(request.check)?.failed(request.plant);
      return undefined;
    case "release":
      checks.delete(request.check);
      return undefined;
    case "close":
      await save();
      watch?.close();
      return { id: request.id, closed: true };
  }
}

parentPort?.on("message", (request: MapRequest) => {
  queue = queue.then(async () => {
    let reply: MapReply | undefined;
    try {
      reply = await answer(request);
    } catch (err) {
      reply = { id: request.id, error: err instanceof Error ? err.message : String(err) };
    }
    if (reply) parentPort?.postMessage(reply);
    // Whatever a pass changed is kept a moment later (the close keeps it at once).
    if (request.op !== "close") saveSoon();
  });
});
