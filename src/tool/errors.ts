/** Stable machine-readable codes carried in `metadata.error_code` of an error envelope. */
export const ERROR_CODES = [
  "invalid_arguments",
  "unknown_tool",
  "not_found",
  "is_directory",
  "not_a_file",
  "already_exists",
  "binary_file",
  "too_large",
  "outside_root",
  "capability_denied",
  "permission_denied",
  "rejected",
  "ambiguous_match",
  "no_match",
  "no_change",
  "stale_read",
  "timeout",
  "aborted",
  "unavailable",
  "execution_failed",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

// A registry-wide symbol, so a ToolError from another copy of this module (an embedder's
// dist/index.js next to the bundled CLI, an extension's own node_modules) is still recognised.
const TOOL_ERROR = Symbol.for("toolhost.ToolError");
const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/**
 * Thrown by tools and the runtime for an expected failure. The host turns it into an
 * error envelope with `error_code`; any other exception becomes `execution_failed`.
 */
export class ToolError extends Error {
  readonly code: ErrorCode;
  readonly [TOOL_ERROR] = true;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "ToolError";
    this.code = code;
  }
}

/** A ToolError of this or any other copy of toolhost, with a code this host knows. */
export function isToolError(err: unknown): err is ToolError {
  if (err instanceof ToolError) return true;
  if (typeof err !== "object" || err === null) return false;
  const candidate = err as { [TOOL_ERROR]?: unknown; code?: unknown; message?: unknown };
  return (
    candidate[TOOL_ERROR] === true &&
    typeof candidate.code === "string" &&
    KNOWN_CODES.has(candidate.code) &&
    typeof candidate.message === "string"
  );
}
