import { closeSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { utf8HeadEnd, utf8TailStart } from "../../tool/truncate.js";

/** What one stream of a background process keeps by default: its last 1 MB. */
export const RING_BYTES = 1024 * 1024;

/** A stretch of the ring read as text (see `ProcessOutput`). */
export interface RingText {
  text: string;
  offset: number;
  next_offset: number;
  dropped?: number;
  more?: number;
}

/**
 * One stream's output, the last `capacity` bytes of it, in a file written round and round: byte
 * `n` of the stream (its offset, counted from the start) lives at `n % capacity`. Memory stays
 * constant whatever the process writes; reads go by offset. Writes and reads are synchronous, so a
 * read never sees half a write. Once closed it still counts what is written, and keeps nothing.
 */
export class OutputRing {
  /** Bytes written since the start: the offset of the next one. */
  total = 0;
  private fd: number | null;

  constructor(
    readonly path: string,
    readonly capacity: number = RING_BYTES,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0) throw new Error(`A ring needs a positive capacity, not ${capacity}`);
    this.fd = openSync(path, "wx+", 0o600);
  }

  /** The oldest offset the ring still holds (once removed, it holds none). */
  get start(): number {
    return this.fd === null ? this.total : Math.max(0, this.total - this.capacity);
  }

  write(chunk: Uint8Array): void {
    let data = chunk;
    // Of a chunk larger than the ring only its end can be kept.
    if (data.length > this.capacity) {
      this.total += data.length - this.capacity;
      data = data.subarray(data.length - this.capacity);
    }
    if (this.fd !== null) {
      let at = this.total % this.capacity;
      let done = 0;
      while (done < data.length) {
        const n = Math.min(data.length - done, this.capacity - at);
        let written = 0;
        while (written < n) written += writeSync(this.fd, data, done + written, n - written, at + written);
        done += n;
        at = (at + n) % this.capacity;
      }
    }
    this.total += data.length;
  }

  /** The bytes from `from` (at least `start`) to at most `to` (at most `total`). */
  bytes(from: number, to: number): Buffer {
    const begin = Math.max(from, this.start);
    const end = Math.min(to, this.total);
    if (this.fd === null || end <= begin) return Buffer.alloc(0);
    const out = Buffer.alloc(end - begin);
    let done = 0;
    while (done < out.length) {
      const at = (begin + done) % this.capacity;
      const n = Math.min(out.length - done, this.capacity - at);
      const got = readSync(this.fd, out, done, n, at);
      if (got <= 0) break;
      done += got;
    }
    return out.subarray(0, done);
  }

  /**
   * Text from `offset`, or the last `tail` bytes, or from the oldest byte held; at most `maxBytes`.
   * A character cut at either end is left out (at the end, for the next read, unless `final`: the
   * stream has ended and no more bytes will complete it).
   */
  read(range: { offset?: number; tail?: number; maxBytes: number }, final = false): RingText {
    const wanted =
      range.offset !== undefined
        ? Math.min(Math.max(0, range.offset), this.total)
        : range.tail !== undefined
          ? Math.max(0, this.total - range.tail)
          : this.start;
    const from = Math.max(wanted, this.start);
    const to = Math.min(this.total, from + Math.max(0, range.maxBytes));
    const raw = this.bytes(from, to);
    // A read that starts inside a character (a tail, a ring that dropped its start) begins at the next one.
    const head = from > 0 ? utf8TailStart(raw, 0) : 0;
    const end = final && to === this.total ? raw.length : utf8HeadEnd(raw, raw.length);
    const text = end > head ? raw.subarray(head, end).toString("utf8") : "";
    const next = end > head ? from + end : from + head;
    return {
      text,
      offset: from + head,
      next_offset: next,
      ...(from > wanted ? { dropped: from - wanted } : {}),
      ...(this.total > next ? { more: this.total - next } : {}),
    };
  }

  /** Stops keeping bytes (they are still counted) and removes the file. */
  remove(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.path, { force: true });
  }
}
