import path from "node:path";
import type { Access, DirEntry, FileInfo, ToolFs, WrittenFile } from "../../tool/context.js";
import { isToolError, ToolError } from "../../tool/errors.js";
import { absolutize } from "../../tool/paths.js";
import { fileLocks } from "../locks.js";
import type { CompiledScope } from "../scope.js";
import type { FsBackend } from "./backend.js";

/** Chooses the backend for an absolute path (editor buffers inside the workspace, disk elsewhere …). */
export type BackendRouter = (abs: string) => FsBackend;

export interface ScopedFsOptions {
  scope: CompiledScope;
  workspace: string;
  route: BackendRouter;
  /** Roots the scope allows that error messages do not name (the session's own sidecar folder). */
  unlistedRoots?: readonly string[];
}

function describeRoots(scope: CompiledScope, access: Access, unlisted: readonly string[] = []): string {
  const roots = (access === "read" ? scope.read : scope.write).roots.filter((r) => !unlisted.includes(r));
  return roots.length ? roots.join(", ") : "(none: this tool has no " + access + " access)";
}

/** Maps backend errno failures onto stable tool error codes. */
export function translateFsError(err: unknown, displayPath: string): never {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (isToolError(err)) throw err;
  switch (code) {
    case "ENOENT":
      throw new ToolError("not_found", `File not found: ${displayPath}`);
    case "EISDIR":
      throw new ToolError("is_directory", `${displayPath} is a directory`);
    case "ENOTDIR":
      throw new ToolError("not_found", `A parent of ${displayPath} is not a directory`);
    case "EACCES":
    case "EPERM": {
      const mode = (err as { readOnlyMode?: number }).readOnlyMode;
      throw new ToolError(
        "permission_denied",
        mode === undefined
          ? `Permission denied: ${displayPath}: the file or its folder does not allow this. If it should, ask the user to change the permissions; do not work around them.`
          : `Permission denied: ${displayPath}: the file is read-only (mode ${mode.toString(8).padStart(4, "0")}). If it should change, ask the user to make it writable (chmod u+w); do not work around the permission.`,
      );
    }
    default:
      throw err;
  }
}

/**
 * The fs a tool sees: every call resolves the path and checks it, lexically and through
 * symlinks (for a path that does not exist yet, through the real path of its nearest
 * existing parent), against the tool's effective scope.
 */
export class ScopedFs implements ToolFs {
  /** This call's views of backends that cache reads (the editor's): one request per file per call. */
  private readonly views = new Map<FsBackend, FsBackend & { refresh(): void }>();

  constructor(private readonly options: ScopedFsOptions) {}

  private backend(abs: string): FsBackend {
    const backend = this.options.route(abs);
    if (!backend.forCall) return backend;
    let view = this.views.get(backend);
    if (!view) {
      view = backend.forCall();
      this.views.set(backend, view);
    }
    return view;
  }

  async resolve(raw: string, access: Access): Promise<string> {
    const { scope, workspace } = this.options;
    if (typeof raw !== "string" || raw.trim() === "") throw new ToolError("invalid_arguments", "Empty path");
    if (raw.includes("\0")) {
      throw new ToolError(
        "invalid_arguments",
        `The path ${JSON.stringify(raw)} contains a NUL byte (\\0), which no file name can hold. Give the path without it.`,
      );
    }
    let abs = absolutize(raw, workspace);
    if (raw.trim().startsWith("@")) {
      // Models often prefix paths with @ (editor mention syntax); drop it unless such a file exists.
      const stripped = absolutize(raw.trim().slice(1), workspace);
      if (
        (await this.backend(abs)
          .stat(abs)
          .catch(() => null)) === null
      )
        abs = stripped;
    }
    const matcher = access === "read" ? scope.read : scope.write;
    if (!matcher.matches(abs)) {
      throw new ToolError(
        "outside_root",
        `${raw} resolves to ${abs}, outside the allowed ${access} roots: ${describeRoots(scope, access, this.options.unlistedRoots)}`,
      );
    }
    const real = await this.realTarget(abs);
    if (real !== abs && !matcher.matches(real)) {
      throw new ToolError(
        "outside_root",
        `${raw} leads through a symbolic link to ${real}, outside the allowed ${access} roots: ${describeRoots(scope, access, this.options.unlistedRoots)}`,
      );
    }
    return abs;
  }

  /**
   * The real path of `abs`, or of its nearest existing parent joined with the rest. A symlink
   * whose target does not exist (which realpath cannot follow) leads to that target, resolved
   * lexically from the link's real folder: a write would create it there.
   */
  private async realTarget(abs: string, hops = 0): Promise<string> {
    const backend = this.backend(abs);
    let existing = abs;
    const rest: string[] = [];
    for (;;) {
      try {
        const real = await backend.realpath(existing);
        return rest.length ? path.join(real, ...rest.reverse()) : real;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
        const parent = path.dirname(existing);
        if (parent === existing) return abs;
        const link = backend.readlink ? await backend.readlink(existing).catch(() => null) : null;
        if (link !== null) {
          if (hops >= 40) throw new ToolError("invalid_arguments", `${abs}: too many levels of symbolic links`);
          const target = path.resolve(await this.realTarget(parent, hops + 1), link);
          const real = await this.realTarget(target, hops + 1);
          return rest.length ? path.join(real, ...rest.reverse()) : real;
        }
        rest.push(path.basename(existing));
        existing = parent;
      }
    }
  }

  async stat(raw: string): Promise<FileInfo | null> {
    const abs = await this.resolve(raw, "read");
    const s = await this.backend(abs).stat(abs);
    return s ? { path: abs, ...s } : null;
  }

  async readFile(raw: string): Promise<Uint8Array> {
    const abs = await this.resolve(raw, "read");
    try {
      return await this.backend(abs).readFile(abs);
    } catch (err) {
      translateFsError(err, abs);
    }
  }

  async *readStream(raw: string, range?: { start?: number; end?: number }): AsyncIterable<Uint8Array> {
    const abs = await this.resolve(raw, "read");
    try {
      yield* this.backend(abs).readStream(abs, range);
    } catch (err) {
      translateFsError(err, abs);
    }
  }

  async readDir(raw: string): Promise<DirEntry[]> {
    const abs = await this.resolve(raw, "read");
    try {
      return await this.backend(abs).readDir(abs);
    } catch (err) {
      translateFsError(err, abs);
    }
  }

  async writeFile(raw: string, data: Uint8Array | string): Promise<WrittenFile> {
    const abs = await this.resolve(raw, "write");
    const backend = this.backend(abs);
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    let landed: Uint8Array | void;
    try {
      landed = await backend.writeFileAtomic(abs, bytes);
    } catch (err) {
      translateFsError(err, abs);
    }
    // The file has changed: nothing after this may fail the call. A version nobody can match
    // makes the next edit read the file again.
    const s = await backend.stat(abs).catch(() => null);
    const info = s ?? { type: "file" as const, size: bytes.length, mtimeMs: Date.now(), version: `unknown.${Date.now().toString(36)}` };
    return { path: abs, ...info, ...(landed ? { landed } : {}) };
  }

  async withLock<T>(raw: string, fn: () => Promise<T>): Promise<T> {
    const abs = absolutize(raw, this.options.workspace);
    // This process's calls in order, then the lock between processes (held across the
    // tool's re-stat, version check and write).
    return fileLocks.run(abs, () => {
      const locked = () => {
        for (const view of this.views.values()) view.refresh();
        return fn();
      };
      const backend = this.options.route(abs);
      return backend.lock ? backend.lock(abs, locked) : locked();
    });
  }
}
