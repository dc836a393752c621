// The modules a session needs to start (its tools and runtime, its restore and its recorder), in
// one place: acp/server.ts loads them for each session, and the early reader (acp/stdio.ts)
// starts loading them as soon as a session/load or session/resume arrives, beside the SDK.

export function sessionModules() {
  return Promise.all([
    import("./session.js"),
    import("../agent/session/tools.js"),
    import("../host/profiles.js"),
    import("../agent/record/session-restore.js"),
    import("../agent/record/session-recorder.js"),
  ]);
}

/** Starts loading what a session/load or session/resume needs; errors surface when the request runs. */
export function prefetchRestore(): void {
  void import("../agent/record/session-store.js").catch(() => {});
  void sessionModules().catch(() => {});
}
