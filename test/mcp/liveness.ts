import * as fsp from "node:fs/promises";

/** A process is gone when it no longer exists or is a zombie (an orphan waiting for a reaper that may never come in a container). */
export async function liveness(pid: number): Promise<"alive" | "gone"> {
  const stat = await fsp.readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
  return stat === null || /^\d+ \(.*\) [ZX]/.test(stat) ? "gone" : "alive";
}
