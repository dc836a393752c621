import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { LocalShell } from "../../src/runtime/shell/local.js";
import { bubblewrapSandbox } from "../../src/runtime/sandbox/bubblewrap.js";
import type { SpawnTransform } from "../../src/runtime/shell/scoped.js";

// The project guard's tests (project-guard, nested-git): a bash tool's context on a real shell, in
// the bubblewrap sandbox unless told otherwise, its sessions closed by `closeAll` after each test.

const requires = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };

/** `quarantineDir`: where the sandbox moves plants (a test's own folder, not the user's toolhost home). */
export function guardedContexts(quarantineDir?: () => string) {
  const sessions: RuntimeSession[] = [];
  return {
    /** A bash call's context in `ws`, its sidecars in `sidecar`; `sandboxed` false runs it on the host, a function wraps the command as it says. */
    context(ws: string, sidecar: string, sandboxed: boolean | SpawnTransform = true, toolId = "bash") {
      const spawnTransform =
        typeof sandboxed === "function" ? sandboxed : sandboxed ? bubblewrapSandbox({ quarantineDir: quarantineDir?.() }) : undefined;
      const session = new RuntimeSession({
        workspace: ws,
        sidecarDir: sidecar,
        shell: new LocalShell(),
        ...(spawnTransform ? { spawnTransform } : {}),
      });
      sessions.push(session);
      return createToolContext({ session, toolId, callId: "c", requires, signal: new AbortController().signal });
    },
    async closeAll() {
      for (const s of sessions.splice(0)) await s.close();
    },
  };
}
