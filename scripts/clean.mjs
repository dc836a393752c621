import { rmSync } from "node:fs";
// Stale bundle chunks would otherwise pile up in dist/ across builds.
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
