import { createHash } from "node:crypto";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { defineTool, TOOL_ID_PATTERN, type AnyTool, type DisplayImage, type JsonSchemaObject, type ToolDisplay } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import type { ToolKind } from "../tool/kinds.js";

// An MCP server's tools as toolhost tools: `mcp__<server>__<tool>`, validated against the tool's
// JSON Schema, through rules, approval, truncation and the envelope like any other tool.

/** The source of a server's tools in the registry (and `toolhost tools`). */
export const mcpSource = (server: string) => `mcp:${server}`;

/** Text kept for the model before the host's sidecar takes the rest. */
const TEXT_LIMIT = 50 * 1024;
/** An image larger than this (base64) is described, not sent. */
const MAX_IMAGE_CHARS = 5 * 1024 * 1024;
/** A call may run this long (progress notifications restart the clock). */
export const MCP_CALL_TIMEOUT_MS = 10 * 60_000;

const sanitize = (part: string) => part.toLowerCase().replace(/[^a-z0-9_]+/g, "_");

/**
 * `mcp__<server>__<tool>` as the contract's id pattern allows: lower case, `[a-z0-9_]`, at most
 * 64 characters (a longer id keeps its head and ends in a hash of the whole name).
 */
export function mcpToolId(server: string, tool: string): string {
  const id = `mcp__${sanitize(server)}__${sanitize(tool)}`;
  if (id.length <= 64) return id;
  const hash = createHash("sha256").update(`${server}\0${tool}`).digest("hex").slice(0, 8);
  return `${id.slice(0, 55)}_${hash}`;
}

/**
 * The ACP kind from the tool's annotations: read-only tools are `read` (`fetch` when they reach
 * the open world); anything else may change something and is `execute`, so `ask` mode asks first.
 */
export function mcpKind(annotations: McpTool["annotations"]): ToolKind {
  if (annotations?.readOnlyHint !== true) return "execute";
  return annotations.openWorldHint === true ? "fetch" : "read";
}

/** What an MCP tool returns: its text, and its images when it has any. */
export type McpToolData = string | { text: string; images: DisplayImage[] };

/** A call's result: text blocks joined, resources inlined (or named), images kept for the model and the editor. */
export function resultData(result: CallToolResult): McpToolData {
  const texts: string[] = [];
  const images: DisplayImage[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        texts.push(block.text);
        break;
      case "image":
        if (block.data.length <= MAX_IMAGE_CHARS) images.push({ data: block.data, mimeType: block.mimeType });
        else texts.push(`[image ${block.mimeType}, ${Math.round((block.data.length * 3) / 4 / 1024)} KB: too large to pass on]`);
        break;
      case "audio":
        texts.push(`[audio ${block.mimeType}: not passed on]`);
        break;
      case "resource": {
        const r = block.resource;
        if ("text" in r && typeof r.text === "string") texts.push(`<resource uri="${r.uri}">\n${r.text}\n</resource>`);
        else if (typeof r.mimeType === "string" && r.mimeType.startsWith("image/") && "blob" in r && r.blob.length <= MAX_IMAGE_CHARS)
          images.push({ data: r.blob, mimeType: r.mimeType });
        else texts.push(`[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}: binary, not passed on]`);
        break;
      }
      case "resource_link":
        texts.push(`[resource ${block.uri}${block.name ? ` "${block.name}"` : ""}${block.description ? `: ${block.description}` : ""}]`);
        break;
    }
  }
  // No content but structured data (a server of the newer spec): the data is the answer.
  if (texts.length === 0 && images.length === 0 && result.structuredContent !== undefined) {
    texts.push(JSON.stringify(result.structuredContent, null, 2));
  }
  const text = texts.join("\n");
  return images.length ? { text, images } : text;
}

/** The connection a tool calls through (the server may reconnect; the tool stays the same object). */
export interface McpCaller {
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallToolResult>;
  /** Why a call failed at the transport (the server exited, timed out), for the model. */
  describeFailure(err: unknown): string;
}

const PERMISSIVE: JsonSchemaObject = { type: "object", additionalProperties: true };

/** The tool's input schema as the contract takes it: an object schema (anything else accepts any object). */
function parameters(schema: McpTool["inputSchema"]): JsonSchemaObject {
  const copy = { ...(schema as Record<string, unknown>) };
  delete copy.$schema;
  if (copy.type !== "object") return PERMISSIVE;
  return copy as JsonSchemaObject;
}

/**
 * The toolhost tool for one MCP tool. A schema zod cannot convert still yields a tool: the server
 * validates, and the model sees the server's schema.
 */
export function mcpTool(server: string, tool: McpTool, id: string, caller: McpCaller): AnyTool {
  const title = tool.annotations?.title ?? tool.title ?? tool.name;
  const definition = {
    id,
    description: `${tool.description?.trim() || title} (MCP server ${server})`,
    kind: mcpKind(tool.annotations),
    requires: {},
    output: { field: "text", maxBytes: TEXT_LIMIT },
    timeoutMs: MCP_CALL_TIMEOUT_MS + 5000,
    title: () => `${server}: ${title}`,
    execute: async (args: Record<string, unknown>, ctx: { signal: AbortSignal }) => {
      let result: CallToolResult;
      try {
        result = await caller.callTool(tool.name, args, ctx.signal, MCP_CALL_TIMEOUT_MS);
      } catch (err) {
        if (ctx.signal.aborted) throw new ToolError("aborted", "The call was cancelled.");
        throw new ToolError("execution_failed", caller.describeFailure(err));
      }
      const data = resultData(result);
      if (result.isError) {
        const text = typeof data === "string" ? data : data.text;
        throw new ToolError("execution_failed", text.trim() || `The MCP tool ${tool.name} reported an error without a message.`);
      }
      return data;
    },
    display: (data: McpToolData): ToolDisplay =>
      typeof data === "string" ? { text: data, markdown: true } : { text: data.text, markdown: true, images: data.images },
  };
  try {
    return defineTool({ ...definition, parameters: parameters(tool.inputSchema) });
  } catch {
    const loose = defineTool({ ...definition, parameters: PERMISSIVE });
    return Object.freeze({ ...loose, inputSchema: { ...(tool.inputSchema as Record<string, unknown>) } });
  }
}

/** A server's tools with their ids; names that sanitise to an id already taken are reported, not added. */
export function serverTools(server: string, tools: readonly McpTool[], caller: McpCaller): { tools: AnyTool[]; problems: string[] } {
  const out: AnyTool[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const tool of tools) {
    const id = mcpToolId(server, tool.name);
    const taken = seen.get(id);
    if (taken !== undefined) {
      problems.push(`the MCP tools "${taken}" and "${tool.name}" of ${server} both become ${id}; only the first is used`);
      continue;
    }
    if (!TOOL_ID_PATTERN.test(id)) {
      problems.push(`the MCP tool "${tool.name}" of ${server} has no usable id`);
      continue;
    }
    seen.set(id, tool.name);
    out.push(mcpTool(server, tool, id, caller));
  }
  return { tools: out, problems };
}
