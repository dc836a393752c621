import { readFileSync } from "node:fs";
import path from "node:path";
import { toolhostHome } from "./home.js";

/** The raw `~/.toolhost/config.json`: absent → json undefined; unreadable JSON → error. No zod, so start-up can read it. */
export function readConfigFile(home = toolhostHome()): { path: string; json?: unknown; error?: string } {
  const file = path.join(home, "config.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return { path: file };
  }
  try {
    return { path: file, json: JSON.parse(text) as unknown };
  } catch (err) {
    return { path: file, error: `${file} is not valid JSON (${(err as Error).message})` };
  }
}
