import path from "node:path";
import type { AnyTool, DisplayDiff, DisplayImage, ToolDisplay, ToolLocation } from "./define.js";

/**
 * What the editor shows of a successful result: the tool's `display` hook, or the fallback
 * (a string as it is, anything else as pretty JSON). Never throws: a hook that throws or
 * returns something that is not a ToolDisplay gets the fallback too.
 */
export function displayResult(tool: Pick<AnyTool, "display"> | undefined, data: unknown, args: unknown): ToolDisplay {
  if (typeof tool?.display !== "function") return fallbackDisplay(data);
  let display: unknown;
  try {
    display = tool.display(data, args);
  } catch {
    return fallbackDisplay(data);
  }
  return checkedDisplay(display) ?? fallbackDisplay(data);
}

/** The display of a tool without a hook (extension tools): a string as it is, anything else as pretty JSON. */
export function fallbackDisplay(data: unknown): ToolDisplay {
  if (typeof data === "string") return { text: data };
  if (data === undefined) return {};
  try {
    return { text: JSON.stringify(data, null, 2) ?? String(data) };
  } catch {
    // A cycle or a BigInt: still show something.
    return { text: String(data) };
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

const isOptionalString = (value: unknown): value is string | undefined => value === undefined || typeof value === "string";
const isOptionalBoolean = (value: unknown): value is boolean | undefined => value === undefined || typeof value === "boolean";

function isLocation(value: unknown): value is ToolLocation {
  if (!isObject(value) || typeof value.path !== "string" || !path.isAbsolute(value.path)) return false;
  return value.line === undefined || (Number.isInteger(value.line) && (value.line as number) >= 0);
}

function isDiff(value: unknown): value is DisplayDiff {
  return (
    isObject(value) &&
    typeof value.path === "string" &&
    path.isAbsolute(value.path) &&
    (value.oldText === null || typeof value.oldText === "string") &&
    typeof value.newText === "string"
  );
}

function isImage(value: unknown): value is DisplayImage {
  return isObject(value) && typeof value.data === "string" && typeof value.mimeType === "string";
}

/**
 * A result that carries images for the model (an MCP tool's screenshot): `{ text, images }` with
 * at least one image. The text is what the model reads beside them; null for any other data.
 */
export function imageResult(data: unknown): { text: string; images: DisplayImage[] } | null {
  if (!isObject(data) || typeof data.text !== "string" || !Array.isArray(data.images) || data.images.length === 0) return null;
  if (!data.images.every(isImage) || Object.keys(data).some((k) => k !== "text" && k !== "images")) return null;
  return { text: data.text, images: data.images };
}

function isListOf<T>(value: unknown, check: (item: unknown) => item is T): value is T[] | undefined {
  return value === undefined || (Array.isArray(value) && value.every(check));
}

/** The display with only its known fields, or null when any of them has the wrong shape. */
function checkedDisplay(value: unknown): ToolDisplay | null {
  if (!isObject(value)) return null;
  const { text, language, markdown, diffs, images, locations, failed, failure, exitCode } = value;
  if (!isOptionalString(text) || !isOptionalString(language) || !isOptionalBoolean(markdown) || !isOptionalBoolean(failed)) return null;
  if (!isOptionalString(failure) || !(exitCode === undefined || Number.isInteger(exitCode))) return null;
  if (!isListOf(diffs, isDiff) || !isListOf(images, isImage) || !isListOf(locations, isLocation)) return null;
  const display: ToolDisplay = {};
  if (text !== undefined) display.text = text;
  if (language !== undefined) display.language = language;
  if (markdown !== undefined) display.markdown = markdown;
  if (failed !== undefined) display.failed = failed;
  if (failed && failure !== undefined) display.failure = failure;
  if (failed && exitCode !== undefined) display.exitCode = exitCode as number;
  if (diffs !== undefined) display.diffs = diffs.map(({ path: file, oldText, newText }) => ({ path: file, oldText, newText }));
  if (images !== undefined) display.images = images.map(({ data, mimeType }) => ({ data, mimeType }));
  if (locations !== undefined) {
    display.locations = locations.map(({ path: file, line }) => (line === undefined ? { path: file } : { path: file, line }));
  }
  return display;
}
