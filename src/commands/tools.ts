import { builtinRegistry } from "../host/builtins.js";

export interface ToolsOptions {
  json: boolean;
}

/** `toolhost tools`: every registered tool with id, kind, description, JSON Schema and requirements. */
export async function runTools(options: ToolsOptions): Promise<number> {
  const registry = builtinRegistry();
  const tools = registry.list().map(({ tool, source }) => ({
    id: tool.id,
    kind: tool.kind,
    source,
    description: tool.description,
    parameters: tool.inputSchema,
    requires: tool.requires,
  }));
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ tools }, null, 2)}\n`); // stdout-ok
    return 0;
  }
  const width = Math.max(...tools.map((t) => t.id.length));
  const lines = tools.map((t) => {
    const summary = t.description.split(/(?<=\.)\s/)[0] ?? "";
    return `${t.id.padEnd(width)}  ${t.kind.padEnd(7)}  ${summary}`;
  });
  process.stdout.write(`${lines.join("\n")}\n`); // stdout-ok
  return 0;
}
