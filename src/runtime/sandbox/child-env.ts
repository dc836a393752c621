// The environment toolhost hands to what it runs on the model's or an extension's behalf (a
// sandboxed command, an MCP stdio server): an allow-list, so provider keys and the rest of the
// agent's own environment stay outside. The user adds names in `sandbox.env` of the user config.

/** Passed whenever set: what programs need to find things, speak the locale and draw output. */
const ALLOWED_NAMES = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TERM",
  "COLORTERM",
  "TZ",
  "TMPDIR",
  "NO_COLOR",
  "FORCE_COLOR",
  "CLICOLOR",
  "CI",
  "PAGER",
  "GIT_PAGER",
  "EDITOR",
  "VISUAL",
  // Where to find CA certificates (paths, not secrets): a proxy that re-signs TLS needs them.
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
]);
/** Name prefixes passed whenever set: the locale categories. */
const ALLOWED_PREFIXES = ["LC_"];

/**
 * Names that look like they hold a secret. Such a variable passes only when the user names it
 * exactly in `sandbox.env`; no pattern lets one through.
 */
const SECRET_NAME =
  /(^|_)(KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASS|PASSWD|PASSPHRASE|AUTH|COOKIE|SESSION|PRIVATE|DSN)($|_)|PASSWORD|CREDENTIAL|SECRET|TOKEN|APIKEY|API_KEY|ACCESS_KEY|AUTH_SOCK/i;

/** Whether a variable name looks like it holds a secret. */
export function secretLooking(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** A valid environment variable name (also what a shell can expand). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What the user adds in `sandbox.env`: exact names, or a prefix with a final `*` (`MYAPP_*`). */
export function envNameMatcher(userNames: readonly string[]): (name: string) => boolean {
  const exact = new Set(userNames.filter((n) => !n.endsWith("*")));
  const prefixes = userNames.filter((n) => n.endsWith("*")).map((n) => n.slice(0, -1));
  return (name) => {
    if (exact.has(name)) return true;
    if (secretLooking(name)) return false;
    if (ALLOWED_NAMES.has(name) || ALLOWED_PREFIXES.some((p) => name.startsWith(p))) return true;
    return prefixes.some((p) => p !== "" && name.startsWith(p));
  };
}

/**
 * The allowed part of `env`: the allow-list, plus what `userNames` adds. A value that is a shell
 * function (`() {`) is dropped, as the MCP SDK does.
 */
export function childEnvironment(
  env: NodeJS.ProcessEnv | Record<string, string>,
  userNames: readonly string[] = [],
): Record<string, string> {
  const allowed = envNameMatcher(userNames);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !ENV_NAME.test(name) || value.startsWith("()")) continue;
    if (allowed(name)) out[name] = value;
  }
  return out;
}
