// How long a call may run: the tool's own timeout, and how long an aborted call may take to stop.

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("The call was cancelled");
}

/** Resolves with `work`, or rejects once `signal` aborts and `work` has not settled within `graceMs`. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, graceMs: number): Promise<T> {
  if (signal.aborted && graceMs === 0) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      timer = setTimeout(() => reject(abortError(signal)), graceMs);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    work.then(resolve, reject).finally(() => {
      signal.removeEventListener("abort", onAbort);
      if (timer) clearTimeout(timer);
    });
  });
}

/** The tool's own time limit ran out: the call is abandoned (its signal is aborted). */
export class CallTimeout extends Error {
  constructor(toolId: string, ms: number) {
    super(`The ${toolId} tool did not finish within ${ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`} and was abandoned`);
    this.name = "CallTimeout";
  }
}

export interface CallLimits {
  signal: AbortSignal;
  start(): void;
  race<T>(work: Promise<T>): Promise<T>;
  dispose(): void;
}

/**
 * A signal for one call: aborted when the caller's is, or when the tool's timeout runs out.
 * `expired` rejects at the timeout, so a tool that ignores its signal is abandoned at once.
 */
export function callLimits(toolId: string, outer: AbortSignal, timeoutMs: number | undefined): CallLimits {
  const controller = new AbortController();
  const forward = () => controller.abort(outer.reason);
  if (outer.aborted) forward();
  else outer.addEventListener("abort", forward, { once: true });
  let timer: NodeJS.Timeout | undefined;
  let expired: Promise<never> | null = null;
  const start = () => {
    if (timeoutMs === undefined) return;
    expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new CallTimeout(toolId, timeoutMs);
        // Reject first, so the envelope says timeout even if the tool throws on its abort.
        reject(error);
        controller.abort(error);
      }, timeoutMs);
    });
  };
  const race = <T>(work: Promise<T>): Promise<T> => (expired ? Promise.race([work, expired]) : work);
  const dispose = () => {
    outer.removeEventListener("abort", forward);
    if (timer) clearTimeout(timer);
  };
  return { signal: controller.signal, start, race, dispose };
}
