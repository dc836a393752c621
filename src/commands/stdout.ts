// The CLI's stdout: only the protocol or a command's output goes there, and a reader that goes away
// (`toolhost … | head`) ends the command as a shell's SIGPIPE does, never with an unhandled EPIPE.

/** Writes to the real stdout; resolves once the chunk is handed to the OS. */
export type StdoutWriter = ((chunk: string | Uint8Array) => Promise<void>) & {
  /** Settles when stdout's reader goes away (`toolhost run --json | head`); later writes are dropped. */
  readonly closed: Promise<void>;
  /** stdout's reader has gone away. */
  readonly gone: boolean;
};

/** What a shell reports for a program ended by SIGPIPE: stdout's reader went away (`| head`). */
export const EXIT_STDOUT_CLOSED = 141;
/** Set once a command's writer (guardStdout) or the ACP connection owns stdout's errors. */
let stdoutOwned = false;

/**
 * stdout's reader went away (`toolhost sessions | head -1`): a command that writes to stdout
 * directly ends as `seq 1 9 | head -1` does, quietly with 141, not with an unhandled EPIPE.
 */
export function onStdoutError(err: NodeJS.ErrnoException): void {
  if (stdoutOwned) return;
  if (err.code !== "EPIPE") process.stderr.write(`toolhost: stdout: ${err.message}\n`);
  process.exit(err.code === "EPIPE" ? EXIT_STDOUT_CLOSED : 1);
}

/**
 * stdout carries the protocol (or the CLI's JSON) only, whatever extension code does: this keeps
 * a private handle on the real stdout and sends every other write to it (a direct write,
 * console.log, …) to stderr. Called before any extension code can load. When the reader goes away,
 * the writer's `closed` settles and its writes resolve without writing: the command decides how to end.
 */
export function guardStdout(): StdoutWriter {
  const stdout = process.stdout;
  const real = stdout.write.bind(stdout) as (chunk: string | Uint8Array, callback: (err?: Error | null) => void) => boolean;
  const toStderr = (...args: unknown[]) => (process.stderr.write as (...a: unknown[]) => boolean)(...args);
  stdout.write = toStderr as typeof stdout.write;
  stdoutOwned = true;
  let gone = false;
  let markClosed = () => {};
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  stdout.on("error", () => {
    gone = true;
    markClosed();
  });
  const write = (chunk: string | Uint8Array) =>
    gone
      ? Promise.resolve()
      : new Promise<void>((resolve) => void real(chunk, (err) => (err ? ((gone = true), markClosed(), resolve()) : resolve())));
  return Object.defineProperties(write, { closed: { value: closed }, gone: { get: () => gone } }) as StdoutWriter;
}
