import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AnyTool } from "../../src/tool/define.js";
import { call, diskWorkspace, errorOf, output, type Workspace } from "../helpers.js";
import { loadShipped } from "./shipped.js";

let tool: AnyTool;
let ws: Workspace;
beforeAll(async () => {
  tool = await loadShipped("extensions/package_scripts.ts");
});
afterEach(async () => ws?.cleanup());

const pkg = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name: "demo", version: "1.2.3", scripts: { test: "vitest run", build: "tsc -p .", lint: "eslint ." }, ...extra });

describe("extensions/package_scripts.ts", () => {
  it("lists scripts with the npm command line to run each", async () => {
    ws = await diskWorkspace({ "package.json": pkg(), "package-lock.json": "{}" });
    expect(output((await call(tool, {}, ws.session)).envelope)).toEqual({
      package: "demo",
      version: "1.2.3",
      file: "./package.json",
      manager: "npm",
      manager_from: "./package-lock.json",
      scripts: [
        { name: "test", command: "vitest run", run: "npm test" },
        { name: "build", command: "tsc -p .", run: "npm run build" },
        { name: "lint", command: "eslint .", run: "npm run lint" },
      ],
      workspaces: [],
    });
  });

  it("uses packageManager, else a lockfile here or at the root; lists workspaces", async () => {
    ws = await diskWorkspace({
      "package.json": pkg({ workspaces: ["packages/*"], packageManager: "pnpm@9.1.0" }),
      "yarn.lock": "",
      "packages/app/package.json": JSON.stringify({ name: "app", scripts: { dev: "vite" } }),
    });
    const root = output<{ manager: string; workspaces: string[] }>((await call(tool, {}, ws.session)).envelope);
    expect(root).toMatchObject({ manager: "pnpm", workspaces: ["packages/*"] });
    const app = output<{ manager: string; manager_from: string; scripts: unknown[] }>(
      (await call(tool, { path: "packages/app/" }, ws.session)).envelope,
    );
    expect(app).toMatchObject({
      manager: "yarn",
      manager_from: "./yarn.lock",
      scripts: [{ name: "dev", command: "vite", run: "yarn run dev" }],
    });
  });

  it("is offered only where there is a package.json, and stays inside the workspace", async () => {
    ws = await diskWorkspace({ "package.json": "{ broken" });
    const exists = async (p: string) => p === "package.json";
    expect(await tool.isAvailable!({ workspace: ws.root, profile: "default", exists })).toBe(true);
    expect(await tool.isAvailable!({ workspace: ws.root, profile: "default", exists: async () => false })).toBe(false);
    expect(errorOf((await call(tool, {}, ws.session)).envelope, "execution_failed")).toMatch(/not valid JSON/);
    expect(errorOf((await call(tool, { path: "nowhere" }, ws.session)).envelope, "not_found")).toBeTruthy();
    expect(errorOf((await call(tool, { path: "/etc" }, ws.session)).envelope, "outside_root")).toBeTruthy();
  });
});
