import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AnyTool } from "../../src/tool/define.js";
import { call, errorOf, memoryWorkspace, output, type Workspace } from "../helpers.js";
import { loadShipped } from "./shipped.js";

let now: AnyTool;
let ws: Workspace;
beforeAll(async () => {
  now = await loadShipped("extensions/now.ts");
});
afterEach(async () => ws?.cleanup());

describe("extensions/now.ts", () => {
  it("tells the current time in UTC and in a time zone", async () => {
    ws = await memoryWorkspace();
    const before = Date.now();
    const data = output<Record<string, unknown>>((await call(now, { timezone: "Asia/Kolkata" }, ws.session)).envelope);
    expect(data.unix_ms).toBeGreaterThanOrEqual(before);
    expect(data.unix_ms).toBeLessThanOrEqual(Date.now());
    expect(new Date(data.iso as string).getTime()).toBe(data.unix_ms);
    expect(data).toMatchObject({ timezone: "Asia/Kolkata", utc_offset: "+05:30" });
    expect(data.local).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });

  it("converts a given instant, across a date line and for UTC itself", async () => {
    ws = await memoryWorkspace();
    const tokyo = output((await call(now, { at: "2025-03-01T15:00:00Z", timezone: "Asia/Tokyo" }, ws.session)).envelope);
    expect(tokyo).toEqual({
      iso: "2025-03-01T15:00:00.000Z",
      unix_ms: Date.UTC(2025, 2, 1, 15),
      timezone: "Asia/Tokyo",
      local: "2025-03-02 00:00:00",
      weekday: "Sunday",
      utc_offset: "+09:00",
    });
    const utc = output((await call(now, { at: "2025-07-04T23:30:00-04:00", timezone: "UTC" }, ws.session)).envelope);
    expect(utc).toMatchObject({ local: "2025-07-05 03:30:00", weekday: "Saturday", utc_offset: "+00:00" });
  });

  it("refuses an unknown zone or a non-date with invalid_arguments", async () => {
    ws = await memoryWorkspace();
    expect(errorOf((await call(now, { timezone: "Mars/Olympus" }, ws.session)).envelope, "invalid_arguments")).toMatch(/Unknown time zone/);
    expect(errorOf((await call(now, { at: "next tuesday" }, ws.session)).envelope, "invalid_arguments")).toMatch(/not a date-time/);
  });
});
