#!/usr/bin/env node
// The toolhost command. Sub-commands load lazily so `toolhost` starts fast.
import { parseArgs } from "node:util";

const USAGE = `toolhost — an ACP agent and tool-plugin host

Usage:
  toolhost                                       serve the Agent Client Protocol on stdin/stdout
  toolhost tools [--json]                        list the registered tools
  toolhost call <tool> '<json args>' [--cwd DIR] run one tool call, print its envelope
  toolhost --version | --help

Exit codes of call: 0 output envelope, 1 error envelope, 2 bad usage.`;

function fail(message: string): never {
  process.stderr.write(`toolhost: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "tools": {
      let json = false;
      try {
        json = parseArgs({ args: rest, options: { json: { type: "boolean" } }, strict: true }).values.json ?? false;
      } catch (err) {
        fail((err as Error).message);
      }
      const { runTools } = await import("./commands/tools.js");
      return runTools({ json });
    }
    case "call": {
      let parsed;
      try {
        parsed = parseArgs({ args: rest, options: { cwd: { type: "string" } }, allowPositionals: true, strict: true });
      } catch (err) {
        fail((err as Error).message);
      }
      const [id, json, ...extra] = parsed.positionals;
      if (!id) fail("call needs a tool id");
      if (extra.length) fail(`unexpected arguments: ${extra.join(" ")}`);
      let args: unknown = {};
      if (json !== undefined) {
        try {
          args = JSON.parse(json);
        } catch (err) {
          fail(`the arguments are not valid JSON: ${(err as Error).message}`);
        }
      }
      const { runCall } = await import("./commands/call.js");
      return runCall({ id, args, cwd: parsed.values.cwd });
    }
    case "--version":
    case "-v": {
      const { version } = await import("./version.js");
      process.stdout.write(`${version}\n`); // stdout-ok
      return 0;
    }
    case "--help":
    case "-h":
    case "help":
      process.stdout.write(`${USAGE}\n`); // stdout-ok
      return 0;
    case undefined: {
      const { serveStdio } = await import("./acp/server.js");
      await serveStdio();
      return 0;
    }
    default:
      fail(`unknown command ${JSON.stringify(command)}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`toolhost: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
