import { existsSync, lstatSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// A program a deny rule names cannot run inside the sandbox, whatever runs it (issue 33): a
// refusing stub is bound read-only over the program's file, so `sh ./x.sh`, make, npx, python's
// os.system, the dynamic loader (`ld.so /usr/bin/rm`) and a copy of it (`cp /usr/bin/rm x`
// copies the stub) all get the stub. The policy's text check (policy/opaque.ts) cannot see into
// those; this can, and it holds only inside the sandbox.

/** Where programs are looked up besides the sandbox's PATH. */
const SYSTEM_DIRS = ["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"];

/**
 * Binaries that are many programs by the name they are run as. Binding the stub over one would
 * deny every applet, so only a name's own hard link (its own directory entry) is bound; a name
 * that is a symlink to one cannot be stubbed alone (a mount follows the symlink) and is left
 * out. `busybox rm` therefore stays possible unless busybox itself is denied.
 */
const MULTI_CALL = new Set(["busybox", "toybox", "coreutils"]);

/** A program name as a file name: no path, nothing the shell would read. */
const PROGRAM_NAME = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/;

/** One bind: the stub read-only over a program's file. */
export interface StubBind {
  stub: string;
  target: string;
}

let folder: string | undefined;
const written = new Map<string, string>();

/** The stub for a program: 0555 in a 0700 folder of this process, which the sandbox hides. */
function stubFor(name: string): string {
  const done = written.get(name);
  if (done) return done;
  if (!folder) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "toolhost-denied-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    folder = dir;
  }
  const file = path.join(folder, name);
  const script = `#!/bin/sh\necho 'toolhost: ${name} is denied by a permission rule' >&2\nexit 126\n`;
  writeFileSync(file, script, { mode: 0o555, flag: "wx" });
  written.set(name, file);
  return file;
}

/** The folder the stubs are written in (undefined before the first): hidden inside the sandbox. */
export function stubFolder(): string | undefined {
  return folder;
}

/**
 * The binds that stub out each denied program: for each folder of the sandbox's PATH and the
 * system's bin folders, the file the name resolves to there (/bin/rm → /usr/bin/rm on
 * merged-usr), or the entry itself when that is a multi-call binary. `keep`: programs the
 * sandbox itself needs (its `/bin/sh`, the shell that runs the command line), never stubbed:
 * a rule denying them is held by the policy's text check alone.
 */
export function deniedProgramBinds(names: readonly string[], pathValue: string | undefined, keep: readonly string[]): StubBind[] {
  const dirs = [...new Set([...(pathValue ?? "").split(":").filter((d) => path.isAbsolute(d)), ...SYSTEM_DIRS])];
  const kept = new Set(keep.flatMap((k) => (existsSync(k) ? [realpathSync(k)] : [])));
  const binds: StubBind[] = [];
  for (const name of new Set(names)) {
    if (!PROGRAM_NAME.test(name)) continue;
    const targets = new Set<string>();
    let needed = false;
    for (const dir of dirs) {
      const entry = path.join(dir, name);
      if (!existsSync(entry) || !statSync(entry).isFile()) continue;
      const real = realpathSync(entry);
      if (kept.has(real)) {
        needed = true;
        break;
      }
      if (!MULTI_CALL.has(path.basename(real)) || path.basename(real) === name) targets.add(real);
      else if (!lstatSync(entry).isSymbolicLink()) targets.add(path.join(realpathSync(dir), name));
    }
    if (needed || targets.size === 0) continue;
    const stub = stubFor(name);
    for (const target of targets) binds.push({ stub, target });
  }
  return binds;
}
