import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { OutputRing } from "../../src/runtime/shell/output-ring.js";
import { tempDir } from "../helpers.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => fsp.rm(d, { recursive: true, force: true })));
});

async function ring(capacity: number): Promise<OutputRing> {
  const dir = await tempDir();
  dirs.push(dir);
  return new OutputRing(path.join(dir, "p.stdout"), capacity);
}

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("OutputRing", () => {
  it("keeps everything while it fits, read from the start, from an offset, or the tail", async () => {
    const r = await ring(64);
    r.write(bytes("hello "));
    r.write(bytes("world\n"));
    expect(r.total).toBe(12);
    expect(r.read({ maxBytes: 100 })).toEqual({ text: "hello world\n", offset: 0, next_offset: 12 });
    expect(r.read({ offset: 6, maxBytes: 100 })).toEqual({ text: "world\n", offset: 6, next_offset: 12 });
    expect(r.read({ tail: 3, maxBytes: 100 })).toEqual({ text: "ld\n", offset: 9, next_offset: 12 });
    // Bounded reads say how much is left after them; an offset past the end reads nothing.
    expect(r.read({ offset: 0, maxBytes: 5 })).toEqual({ text: "hello", offset: 0, next_offset: 5, more: 7 });
    expect(r.read({ offset: 99, maxBytes: 5 })).toEqual({ text: "", offset: 12, next_offset: 12 });
  });

  it("wraps: the file never grows past its capacity, the oldest bytes go, and a read says how many it missed", async () => {
    const r = await ring(10);
    for (let i = 0; i < 7; i++) r.write(bytes(`${i}abc`));
    // 28 bytes written, the last 10 kept: "c4abc5abc6abc" minus its start.
    expect(r.total).toBe(28);
    expect(r.start).toBe(18);
    expect((await fsp.stat(r.path)).size).toBe(10);
    expect(r.read({ maxBytes: 100 })).toEqual({ text: "bc5abc6abc", offset: 18, next_offset: 28 });
    expect(r.read({ offset: 4, maxBytes: 100 })).toEqual({ text: "bc5abc6abc", offset: 18, next_offset: 28, dropped: 14 });
    // A read across the wrap point joins the two ends of the file.
    expect(r.read({ offset: 19, maxBytes: 4 })).toEqual({ text: "c5ab", offset: 19, next_offset: 23, more: 5 });
  });

  it("keeps only the end of a chunk larger than the ring", async () => {
    const r = await ring(8);
    r.write(bytes("0123456789abcdef"));
    expect(r.total).toBe(16);
    expect(r.read({ maxBytes: 100 })).toEqual({ text: "89abcdef", offset: 8, next_offset: 16 });
    r.write(bytes("XY"));
    expect(r.read({ maxBytes: 100 })).toEqual({ text: "abcdefXY", offset: 10, next_offset: 18 });
  });

  it("never cuts a character: a partial one at the end waits for its rest, one at the start is skipped", async () => {
    const r = await ring(64);
    const euro = bytes("€"); // e2 82 ac
    r.write(Buffer.concat([bytes("a"), euro.subarray(0, 2)]));
    expect(r.read({ offset: 0, maxBytes: 100 })).toEqual({ text: "a", offset: 0, next_offset: 1, more: 2 });
    r.write(Buffer.concat([euro.subarray(2), bytes("b")]));
    expect(r.read({ offset: 1, maxBytes: 100 })).toEqual({ text: "€b", offset: 1, next_offset: 5 });
    // A tail that starts inside the euro sign starts after it.
    expect(r.read({ tail: 2, maxBytes: 100 })).toEqual({ text: "b", offset: 4, next_offset: 5 });
    // Once the stream has ended, a dangling lead byte is what it is.
    r.write(Buffer.from([0xe2]));
    expect(r.read({ offset: 5, maxBytes: 100 }).next_offset).toBe(5);
    expect(r.read({ offset: 5, maxBytes: 100 }, true)).toMatchObject({ offset: 5, next_offset: 6 });
  });

  it("a million small writes keep memory and file bounded and the last bytes exact", async () => {
    const r = await ring(4096);
    let last = "";
    for (let i = 0; i < 20_000; i++) {
      last = `line ${i}\n`;
      r.write(bytes(last));
    }
    expect((await fsp.stat(r.path)).size).toBe(4096);
    const { text, next_offset } = r.read({ tail: 100, maxBytes: 100 });
    expect(text.endsWith(last)).toBe(true);
    expect(next_offset).toBe(r.total);
  });

  it("remove() deletes the file; later writes are counted, not kept", async () => {
    const r = await ring(16);
    r.write(bytes("abc"));
    r.remove();
    await expect(fsp.stat(r.path)).rejects.toThrow();
    r.write(bytes("def"));
    expect(r.total).toBe(6);
    expect(r.read({ maxBytes: 10 })).toEqual({ text: "", offset: 6, next_offset: 6 });
  });
});
