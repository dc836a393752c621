import { fileURLToPath, pathToFileURL } from "node:url";

/** A path's `file:` URI, as language servers spell it. */
export function fileUri(abs: string): string {
  return pathToFileURL(abs).href;
}

/** The path of a `file:` URI; undefined for any other scheme. */
export function uriPath(uri: string): string | undefined {
  if (!uri.startsWith("file:")) return undefined;
  try {
    return fileURLToPath(uri);
  } catch {
    return undefined;
  }
}
