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

/**
 * Thrown by tools and the runtime for an expected failure. The host turns it into an
 * error envelope with `error_code`; any other exception becomes `execution_failed`.
 */
export class ToolError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "ToolError";
    this.code = code;
  }
}

export function isToolError(err: unknown): err is ToolError {
  return err instanceof ToolError;
}
