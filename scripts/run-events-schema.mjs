// Writes schemas/run-events.v<N>.json, the published JSON Schema of `toolhost run --json`'s events,
// from their definitions (src/commands/run-events.ts, built into dist/). Run after `npm run build`;
// test/cli/run-events.test.ts fails when the file and the definitions differ.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const { runEventsSchema, RUN_EVENTS_VERSION } = await import(path.join(root, "dist/commands/run-events.js"));
const file = path.join(root, "schemas", `run-events.v${RUN_EVENTS_VERSION}.json`);
writeFileSync(file, `${JSON.stringify(runEventsSchema(), null, 2)}\n`);
console.log(`wrote ${path.relative(root, file)}`);
