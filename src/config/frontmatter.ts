/** A Markdown file with YAML front matter (`---` … `---`), as Agent Skills and agent files are written. */
export type FrontMatter = { ok: true; data: Record<string, unknown>; body: string } | { ok: false; error: string };

const FENCE = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/** The `yaml` library (115 KB bundled), loaded with the first front matter: a session without skill or agent files never needs it. */
let yaml: Promise<typeof import("./yaml.js")> | undefined;

/**
 * Splits a Markdown text into its front matter (parsed with the `yaml` library) and its body.
 * A text without front matter has none (`data` empty); front matter that is not a YAML mapping
 * is an error that says why, never an exception.
 */
export async function parseFrontMatter(text: string): Promise<FrontMatter> {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const match = FENCE.exec(source);
  if (!match) return { ok: true, data: {}, body: source };
  const { parse } = await (yaml ??= import("./yaml.js"));
  let data: unknown;
  try {
    data = parse(match[1] ?? "");
  } catch (err) {
    return { ok: false, error: `the front matter is not valid YAML: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}` };
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== "object" || Array.isArray(data))
    return { ok: false, error: "the front matter must be a YAML mapping (key: value lines)" };
  return { ok: true, data: data as Record<string, unknown>, body: source.slice(match[0].length) };
}
