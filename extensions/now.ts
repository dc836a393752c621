// `now`: the current date and time, so the model stops guessing what day it is. Also converts a
// given instant to another time zone ("what is 15:00 UTC in Tokyo?").
import { defineTool, ToolError, z } from "toolhost";

function wallClock(date: Date, timeZone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      weekday: "long",
      timeZoneName: "longOffset",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  // "GMT+05:30" → "+05:30"; plain "GMT" is UTC itself.
  const offset = parts.timeZoneName === "GMT" ? "+00:00" : String(parts.timeZoneName).replace("GMT", "");
  return {
    local: `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`,
    weekday: parts.weekday as string,
    utc_offset: offset,
  };
}

export default defineTool({
  id: "now",
  description:
    "The current date and time: ISO 8601 in UTC, Unix milliseconds, and the wall-clock time, weekday and UTC offset in a time zone (default: this machine's). Pass `at` to convert another instant instead. Use it rather than guessing today's date.",
  kind: "read",
  parameters: z.object({
    timezone: z.string().min(1).optional().describe("IANA time zone, e.g. Europe/Paris or America/New_York (default: the machine's)"),
    at: z.string().min(1).optional().describe("An instant to convert instead of now, ISO 8601 with an offset, e.g. 2025-03-01T15:00:00Z"),
  }),
  requires: {},
  title: (args) =>
    args.at ? `${args.at} in ${args.timezone ?? "local time"}` : `Current time${args.timezone ? ` in ${args.timezone}` : ""}`,

  async execute({ timezone, at }) {
    const timeZone = timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    const date = at === undefined ? new Date() : new Date(at);
    if (Number.isNaN(date.getTime()))
      throw new ToolError("invalid_arguments", `"${at}" is not a date-time; use ISO 8601, e.g. 2025-03-01T15:00:00Z`);
    try {
      return { iso: date.toISOString(), unix_ms: date.getTime(), timezone: timeZone, ...wallClock(date, timeZone) };
    } catch {
      throw new ToolError("invalid_arguments", `Unknown time zone "${timeZone}"; use an IANA name such as Europe/Paris`);
    }
  },
});
