// The order of a session list (newest first, then by id) and its cursor: the last row of a page, opaque to the client.

/** A listed file: its modification time and its id. */
interface Row {
  mtimeMs: number;
  id: string;
}

export function newestFirst(a: Row, b: Row): number {
  return b.mtimeMs - a.mtimeMs || a.id.localeCompare(b.id);
}

export function encodeCursor(row: Row): string {
  return Buffer.from(JSON.stringify([row.mtimeMs, row.id])).toString("base64url");
}

export function decodeCursor(cursor: string | undefined): Row | undefined {
  if (!cursor) return undefined;
  try {
    const [mtimeMs, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    if (typeof mtimeMs === "number" && typeof id === "string") return { mtimeMs, id };
  } catch {
    // fall through
  }
  throw new Error("Invalid cursor: pass nextCursor from the previous page unchanged");
}
