import type { ContentBlock } from "@agentclientprotocol/sdk";
import type { UserContent } from "ai";
import { utf8Head } from "../tool/truncate.js";

type Part = Exclude<UserContent, string>[number];

/** Text of embedded resources beyond this is cut: the model can read the file itself. */
const MAX_RESOURCE_BYTES = 200 * 1024;

function resourceText(uri: string, text: string, mimeType?: string | null): string {
  const bytes = Buffer.byteLength(text, "utf8");
  const body =
    bytes > MAX_RESOURCE_BYTES ? `${utf8Head(text, MAX_RESOURCE_BYTES)}\n… [cut at ${MAX_RESOURCE_BYTES} of ${bytes} bytes]` : text;
  return `<context uri="${uri}"${mimeType ? ` type="${mimeType}"` : ""}>\n${body}\n</context>`;
}

/**
 * An ACP prompt as the content of a user message: text as is, images when the model takes
 * them, embedded resources and resource links as text context.
 */
export function promptContent(blocks: ContentBlock[], options: { images: boolean; modelId: string }): Part[] {
  const parts: Part[] = [];
  const omitted = (what: string) => parts.push({ type: "text", text: `[${what} omitted: ${options.modelId} does not take images]` });
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        if (block.text) parts.push({ type: "text", text: block.text });
        break;
      case "image":
        if (options.images) parts.push({ type: "image", image: block.data, mediaType: block.mimeType });
        else omitted(block.uri ? `Image ${block.uri}` : "Image");
        break;
      case "resource_link":
        parts.push({
          type: "text",
          text: `[Referenced: ${block.title ?? block.name} — ${block.uri}${block.mimeType ? ` (${block.mimeType})` : ""}]`,
        });
        break;
      case "resource": {
        const r = block.resource;
        if ("text" in r) parts.push({ type: "text", text: resourceText(r.uri, r.text, r.mimeType) });
        else if (r.mimeType?.startsWith("image/") && options.images) parts.push({ type: "image", image: r.blob, mediaType: r.mimeType });
        else if (r.mimeType?.startsWith("image/")) omitted(`Image ${r.uri}`);
        else parts.push({ type: "text", text: `[Attached binary ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}: not shown]` });
        break;
      }
      case "audio":
        parts.push({ type: "text", text: "[An audio clip was attached; it is not supported]" });
        break;
    }
  }
  if (parts.length === 0) parts.push({ type: "text", text: "(empty prompt)" });
  return parts;
}
