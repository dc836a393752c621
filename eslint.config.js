// The guard rails of CONTRIBUTING.md: the layers of docs/architecture.md as import bans, no import
// cycles, stdout for the protocol only, and a few cheap correctness rules. Syntax only (no type
// information), so a run over the whole tree stays a few seconds.
import js from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import globals from "globals";
import tseslint from "typescript-eslint";
import { noTypeCycle } from "./eslint.type-cycles.js";

const root = import.meta.dirname;

// ── Layers ──────────────────────────────────────────────────────────────────────────────────────
// Each zone: files under `target` may not import files under `from` (minus `except`, relative to
// `from`). Paths are resolved, so `../../tool/x.js` and a dynamic import() count the same. The
// zones do not overlap, so one bad import is one finding.

/** The lower floors: the only folders each may import besides itself, and why. */
const ONLY = {
  tool: { may: [], message: "tool/ is the contract: it imports nothing of ours." },
  config: { may: ["tool"], message: "config/ imports only tool/." },
  runtime: { may: ["tool", "config"], message: "runtime/ imports only tool/ and config/." },
  policy: { may: ["tool", "config"], message: "policy/ imports only tool/ and config/." },
  tools: { may: ["tool"], message: "tools/ imports only tool/: a tool reaches the machine through its context." },
  mcp: { may: ["tool", "config", "runtime"], message: "mcp/ (MCP clients) imports only tool/, config/ and runtime/: agent/ wires it in." },
};
/** Every other folder of src/ (a new folder is covered by default), minus `also`. */
const upperFolders = (...also) => `src/!(${[...Object.keys(ONLY), ...also].join("|")})/**`;

const LAYER_ZONES = [
  ...Object.entries(ONLY).map(([folder, { may, message }]) => ({
    target: `src/${folder}`,
    from: "src",
    except: [folder, ...may].map((allowed) => `./${allowed}`),
    message,
  })),
  { target: "src/host", from: "src/agent", message: "host/ sits below agent/." },
  { target: [upperFolders("acp"), "src/!(cli).ts"], from: "src/acp", message: "Only the CLI imports acp/: nothing below it knows ACP." },
  { target: [upperFolders("commands"), "src/!(cli).ts"], from: "src/commands", message: "Only the CLI imports commands/." },
  { target: [upperFolders(), "src/!(cli).ts"], from: "src/cli.ts", message: "The CLI is the top: nothing imports it." },
  // agent/'s sub-rooms: the session at the top of agent/ uses them; they never reach back up.
  {
    target: "src/agent/turn",
    from: "src/agent",
    except: ["./turn", "./model"],
    message: "agent/turn/ (the model turn, one call) imports only agent/model/ of agent/: the session drives it, not the other way.",
  },
  { target: "src/agent/model", from: "src/agent", except: ["./model"], message: "agent/model/ imports nothing else of agent/." },
  {
    target: "src/agent/record",
    from: "src/agent",
    except: ["./record", "./turn/turn-types.ts"],
    message: "agent/record/ (sessions on disk) imports of agent/ only record/ and turn/turn-types.ts.",
  },
  {
    target: "src/agent/rewind",
    from: "src/agent",
    except: ["./rewind", "./record", "./session/front-end.ts", "./turn/turn-types.ts"],
    message:
      "agent/rewind/ (checkpoints, the rewind engine, /rewind) imports of agent/ only rewind/, record/ and the front end's types: the session drives it.",
  },
  {
    target: [upperFolders("agent", "commands"), "src/!(index).ts"],
    from: ["src/public.ts", "src/index.ts"],
    message: "The public entry sits on top: only the front ends (agent/, commands/) hand it to the extension loader.",
  },
];

// ── Packages ────────────────────────────────────────────────────────────────────────────────────
// `names` are exact specifiers, `prefixes` whole scopes. Static and dynamic imports both count.
const ACP_SDK = { prefixes: ["@agentclientprotocol/"], message: "The ACP SDK is imported only in src/acp/." };
const AI_SDK = { names: ["ai"], prefixes: ["@ai-sdk/"], message: "The AI SDK is imported only in src/agent/ and src/acp/." };
const MACHINE = {
  names: ["node:fs", "node:fs/promises", "fs", "fs/promises", "node:child_process", "child_process", "execa"],
  message: "tool/ and tools/ reach the machine only through the ToolContext (ctx.fs, ctx.shell, ctx.search).",
};

// The CLI's own output goes to stdout; everywhere else stdout carries the protocol.
const STDOUT_WRITES = [
  {
    selector:
      "MemberExpression[object.type='MemberExpression'][object.object.name='process'][object.property.name='stdout'][property.name='write']",
    message: "stdout carries the protocol: write to stderr, or print from src/cli.ts or src/commands/.",
  },
  {
    selector: "MemberExpression[object.name='console'][property.name=/^(log|info|debug|dir|table)$/]",
    message: "console.log/info/debug/dir/table write to stdout, which carries the protocol: use console.error.",
  },
];

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** One `no-restricted-imports` and one `no-restricted-syntax` entry for a folder's bans. */
function folderRules(bans, { stdout }) {
  const paths = bans.flatMap((ban) => (ban.names ?? []).map((name) => ({ name, message: ban.message })));
  const patterns = bans.flatMap((ban) => (ban.prefixes ?? []).map((prefix) => ({ group: [`${prefix}*`], message: ban.message })));
  // import("x") escapes no-restricted-imports; a selector on the literal catches it.
  const dynamic = bans.map((ban) => {
    const alternatives = [...(ban.names ?? []).map((name) => `${escapeRegExp(name)}$`), ...(ban.prefixes ?? []).map(escapeRegExp)];
    // esquery ends a regex at the first "/", so a slash is spelled \x2F inside it.
    const source = `^(${alternatives.join("|")})`.replaceAll("/", "\\x2F");
    return { selector: `ImportExpression > Literal[value=/${source}/]`, message: ban.message };
  });
  return {
    "no-restricted-imports": bans.length ? ["error", { paths, patterns }] : "off",
    "no-restricted-syntax": ["error", ...dynamic, ...(stdout ? [] : STDOUT_WRITES)],
  };
}

// Disjoint file groups: a later config object replaces a rule's options, it does not add to them.
const FOLDERS = [
  { files: ["src/cli.ts", "src/commands/**"], bans: [ACP_SDK, AI_SDK], stdout: true },
  { files: ["src/acp/**"], bans: [], stdout: false },
  { files: ["src/agent/**"], bans: [ACP_SDK], stdout: false },
  { files: ["src/tool/**", "src/tools/**"], bans: [ACP_SDK, AI_SDK, MACHINE], stdout: false },
];
const folderConfigs = [
  ...FOLDERS.map(({ files, bans, stdout }) => ({ files, rules: folderRules(bans, { stdout }) })),
  {
    files: ["src/**/*.ts"],
    ignores: FOLDERS.flatMap((folder) => folder.files),
    rules: folderRules([ACP_SDK, AI_SDK], { stdout: false }),
  },
];

export default defineConfig(
  { linterOptions: { reportUnusedDisableDirectives: "error" } },
  globalIgnores(["dist/", "coverage/", "bench/.corpus/", "node_modules/", "test/lint/fixtures/"]),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ["**/*.{js,mjs,cjs}"],
    languageOptions: { globals: globals.node },
  },
  {
    rules: {
      // `() => {}` and `catch {}` are the code's way to say "ignore this failure" or "no-op observer".
      "@typescript-eslint/no-empty-function": "off",
      "no-empty": ["error", { allowEmptyCatch: true }],
    },
  },
  // src/: no file over 500 lines of code (blank lines and comments aside); a file that needs more
  // says why in an override below.
  {
    files: ["src/**/*.ts"],
    rules: { "max-lines": ["error", { max: 500, skipBlankLines: true, skipComments: true }] },
  },
  {
    // The edit tool's matching ladder: ten tiers that each map an LF view back to exact spans of
    // the original text; they share that mapping, and split apart they would each need it.
    files: ["src/tools/edit-match.ts"],
    rules: { "max-lines": ["error", { max: 560, skipBlankLines: true, skipComments: true }] },
  },
  // src/: the layers, the package bans, stdout and cycles.
  {
    files: ["src/**/*.ts"],
    plugins: { "import-x": importX, toolhost: { rules: { "no-type-cycle": noTypeCycle } } },
    settings: {
      "import-x/extensions": [".ts", ".js", ".mjs"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts"] },
      // NodeNext: "./x.js" in the source is ./x.ts on disk.
      "import-x/resolver-next": [createNodeResolver({ extensions: [".ts", ".js", ".json"], extensionAlias: { ".js": [".ts", ".js"] } })],
    },
    rules: {
      "import-x/no-restricted-paths": ["error", { basePath: root, zones: LAYER_ZONES }],
      // Cycles among value imports (the ones that reorder module start-up)…
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
      // …and those closed only by `import type`, which import-x skips by design.
      "toolhost/no-type-cycle": "error",
    },
  },
  ...folderConfigs,
);
