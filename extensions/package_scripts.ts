// `package_scripts`: what `npm run` offers in this project, with the exact command line to run
// each script with the project's package manager. Only offered where there is a package.json.
import { defineTool, ToolError, z, type ToolContext } from "toolhost";

type Manager = "npm" | "pnpm" | "yarn" | "bun";
const LOCKFILES: [file: string, manager: Manager][] = [
  ["pnpm-lock.yaml", "pnpm"],
  ["yarn.lock", "yarn"],
  ["bun.lock", "bun"],
  ["bun.lockb", "bun"],
  ["package-lock.json", "npm"],
];

const runLine = (manager: Manager, script: string) =>
  manager === "npm" ? (["test", "start"].includes(script) ? `npm ${script}` : `npm run ${script}`) : `${manager} run ${script}`;

/** The manager named by `packageManager` ("pnpm@9.1.0"), else by a lockfile here or at the workspace root. */
async function detectManager(ctx: ToolContext, dir: string, declared: unknown): Promise<{ manager: Manager; from: string }> {
  const name = typeof declared === "string" ? declared.split("@")[0] : undefined;
  if (name === "npm" || name === "pnpm" || name === "yarn" || name === "bun") return { manager: name, from: "packageManager" };
  for (const folder of [...new Set([dir, "."])]) {
    for (const [file, manager] of LOCKFILES) {
      if (await ctx.fs.stat(`${folder}/${file}`).catch(() => null)) return { manager, from: `${folder}/${file}` };
    }
  }
  return { manager: "npm", from: "default" };
}

export default defineTool({
  id: "package_scripts",
  description:
    "List the scripts of a package.json (name, command, and the exact line to run it with the project's package manager: npm, pnpm, yarn or bun), with the package's name, version and workspaces. Use it to find how to build, test or lint before running anything.",
  kind: "read",
  parameters: z.object({
    path: z.string().default(".").describe("The folder holding the package.json, relative to the workspace (default: the workspace root)"),
  }),
  requires: { fs: { read: ["{workspace}/**"] } },
  isAvailable: ({ exists }) => exists("package.json"),
  title: (args) => `Scripts of ${args.path === "." ? "package.json" : `${args.path}/package.json`}`,
  locations: (args, { workspace }) => [{ path: `${workspace}/${args.path === "." ? "" : `${args.path}/`}package.json` }],

  async execute({ path }, ctx) {
    const dir = path.replace(/\/+$/, "") || ".";
    const file = `${dir}/package.json`;
    let pkg: Record<string, unknown>;
    try {
      pkg = JSON.parse(new TextDecoder().decode(await ctx.fs.readFile(file)));
    } catch (err) {
      if (err instanceof SyntaxError) throw new ToolError("execution_failed", `${file} is not valid JSON: ${err.message}`);
      throw err; // not_found, outside_root: the host reports them as they are
    }
    const { manager, from } = await detectManager(ctx, dir, pkg.packageManager);
    const scripts = Object.entries((pkg.scripts ?? {}) as Record<string, unknown>)
      .filter((entry): entry is [string, string] => typeof entry[1] === "string")
      .map(([name, command]) => ({ name, command, run: runLine(manager, name) }));
    const ws = pkg.workspaces;
    const workspaces = Array.isArray(ws)
      ? ws
      : Array.isArray((ws as { packages?: unknown })?.packages)
        ? (ws as { packages: unknown[] }).packages
        : [];
    return {
      package: typeof pkg.name === "string" ? pkg.name : null,
      version: typeof pkg.version === "string" ? pkg.version : null,
      file,
      manager,
      manager_from: from,
      scripts,
      workspaces: workspaces.filter((w): w is string => typeof w === "string"),
    };
  },
});
