import { readFileSync } from "node:fs";
import type {
  Hover,
  Location,
  LocationLink,
  DocumentSymbol,
  SymbolInformation,
  Diagnostic,
  MarkupContent,
  MarkedString,
} from "vscode-languageserver-protocol/node";
import type { LspItem, LspQuery } from "../../tool/services.js";
import type { LspClient } from "./client.js";
import { messageOf } from "./diagnostics.js";
import { fileUri, uriPath } from "./uri.js";

// The lsp tool's actions as LSP requests, and their answers as places (path, 1-based line and
// column, a short text): diagnostics, definition, references, hover, symbols.

const MAX_ITEMS = 200;
const SEVERITY = ["", "error", "warning", "info", "hint"];

function needPosition(query: LspQuery): { line: number; character: number } {
  if (query.line === undefined) throw new Error(`${query.action} needs a line`);
  return { line: query.line - 1, character: (query.character ?? 1) - 1 };
}

/** The text of a line of a file (for a definition's or a reference's place), trimmed and capped. */
function lineText(file: string, line: number, cache: Map<string, string[]>): string {
  let lines = cache.get(file);
  if (!lines) {
    try {
      lines = readFileSync(file, "utf8").split("\n");
    } catch {
      lines = [];
    }
    cache.set(file, lines);
  }
  return (lines[line] ?? "").trim().slice(0, 200);
}

function places(result: Location | Location[] | LocationLink[] | null): LspItem[] {
  const list = result === null ? [] : Array.isArray(result) ? result : [result];
  const cache = new Map<string, string[]>();
  const items: LspItem[] = [];
  for (const entry of list as (Location | LocationLink)[]) {
    const uri = "targetUri" in entry ? entry.targetUri : entry.uri;
    const range = "targetUri" in entry ? entry.targetSelectionRange : entry.range;
    const file = uriPath(uri);
    if (!file) continue;
    items.push({
      path: file,
      line: range.start.line + 1,
      column: range.start.character + 1,
      text: lineText(file, range.start.line, cache),
    });
  }
  return items.slice(0, MAX_ITEMS);
}

function hoverText(hover: Hover | null): string {
  if (!hover) return "";
  const part = (c: MarkupContent | MarkedString): string => (typeof c === "string" ? c : c.value);
  const contents = hover.contents;
  return (Array.isArray(contents) ? contents.map(part) : [part(contents as MarkupContent | MarkedString)]).join("\n\n").trim();
}

const SYMBOL_KINDS = [
  "",
  "file",
  "module",
  "namespace",
  "package",
  "class",
  "method",
  "property",
  "field",
  "constructor",
  "enum",
  "interface",
  "function",
  "variable",
  "constant",
  "string",
  "number",
  "boolean",
  "array",
  "object",
  "key",
  "null",
  "enum member",
  "struct",
  "event",
  "operator",
  "type parameter",
];

function symbols(result: (DocumentSymbol | SymbolInformation)[] | null, file: string): LspItem[] {
  const items: LspItem[] = [];
  const walk = (list: (DocumentSymbol | SymbolInformation)[], depth: number) => {
    for (const symbol of list) {
      if (items.length >= MAX_ITEMS) return;
      const kind = SYMBOL_KINDS[symbol.kind] ?? "symbol";
      if ("location" in symbol) {
        const at = uriPath(symbol.location.uri);
        if (!at) continue;
        const { start } = symbol.location.range;
        const container = symbol.containerName ? ` (in ${symbol.containerName})` : "";
        items.push({ path: at, line: start.line + 1, column: start.character + 1, text: `${kind} ${symbol.name}${container}` });
      } else {
        const { start } = symbol.selectionRange;
        items.push({ path: file, line: start.line + 1, column: start.character + 1, text: `${"  ".repeat(depth)}${kind} ${symbol.name}` });
        if (symbol.children) walk(symbol.children, depth + 1);
      }
    }
  };
  walk(result ?? [], 0);
  return items;
}

function diagnostics(list: readonly Diagnostic[], file: string): LspItem[] {
  return list.slice(0, MAX_ITEMS).map((d) => ({
    path: file,
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
    text: `${SEVERITY[d.severity ?? 1] ?? "error"}: ${messageOf(d).replace(/\s*\n\s*/g, " ")}`,
  }));
}

/** One action's answer from a server that has the file open and current. */
export async function answerQuery(
  client: LspClient,
  query: LspQuery,
  timeoutMs: number,
  /** diagnostics: the file's, as the manager got them (else the last published). */
  current?: readonly Diagnostic[],
): Promise<{ items: LspItem[]; text?: string }> {
  const textDocument = { uri: fileUri(query.path) };
  switch (query.action) {
    case "diagnostics":
      return { items: diagnostics(current ?? client.diagnostics(textDocument.uri)?.items ?? [], query.path) };
    case "definition":
      return { items: places(await client.request("textDocument/definition", { textDocument, position: needPosition(query) }, timeoutMs)) };
    case "references":
      return {
        items: places(
          await client.request(
            "textDocument/references",
            { textDocument, position: needPosition(query), context: { includeDeclaration: true } },
            timeoutMs,
          ),
        ),
      };
    case "hover":
      return {
        items: [],
        text: hoverText(await client.request("textDocument/hover", { textDocument, position: needPosition(query) }, timeoutMs)),
      };
    case "symbols":
      if (query.query !== undefined)
        return { items: symbols(await client.request("workspace/symbol", { query: query.query }, timeoutMs), query.path) };
      return { items: symbols(await client.request("textDocument/documentSymbol", { textDocument }, timeoutMs), query.path) };
  }
}
