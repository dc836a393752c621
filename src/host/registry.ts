import type { AnyTool } from "../tool/define.js";
import { isLockedId } from "./locked.js";

/** Where a registered tool came from: `builtin`, or the file that defined it. */
export type ToolSource = "builtin" | string;

export interface RegisteredTool {
  tool: AnyTool;
  source: ToolSource;
}

export class RegistryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RegistryError";
  }
}

/** The tools of a host, by id. Locked ids are reserved for the built-in implementations. */
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly absent = new Map<string, string>();

  register(tool: AnyTool, source: ToolSource = "builtin"): void {
    if (isLockedId(tool.id) && source !== "builtin") {
      throw new RegistryError(`"${tool.id}" is a locked tool id; an extension cannot take it (${source})`);
    }
    const existing = this.tools.get(tool.id);
    if (existing) {
      throw new RegistryError(`Tool "${tool.id}" is already registered from ${existing.source}`);
    }
    this.tools.set(tool.id, { tool, source });
  }

  /**
   * Replaces the tools of one source (an MCP server's, which change at run time): its earlier
   * tools go, the new ones are added after the others. An id another source holds is not taken;
   * the returned problems say which.
   */
  replaceSource(source: ToolSource, tools: readonly AnyTool[]): string[] {
    for (const [id, entry] of this.tools) if (entry.source === source) this.tools.delete(id);
    const problems: string[] = [];
    for (const tool of tools) {
      const existing = this.tools.get(tool.id);
      if (existing) problems.push(`"${tool.id}" of ${source} is already registered from ${existing.source}; it was left out`);
      else this.tools.set(tool.id, { tool, source });
    }
    return problems;
  }

  get(id: string): AnyTool | undefined {
    return this.tools.get(id)?.tool;
  }

  entry(id: string): RegisteredTool | undefined {
    return this.tools.get(id);
  }

  has(id: string): boolean {
    return this.tools.has(id);
  }

  /** Registered tools in registration order (builtins first). */
  list(): RegisteredTool[] {
    return [...this.tools.values()];
  }

  ids(): string[] {
    return [...this.tools.keys()];
  }

  /** Records why a defined tool is not here (it failed to load, is disabled, …); the first reason for an id counts. */
  noteAbsent(id: string, why: string): void {
    if (!this.tools.has(id) && !this.absent.has(id)) this.absent.set(id, why);
  }

  /** Why a tool with this id exists somewhere but not in this registry, if anyone said. */
  whyAbsent(id: string): string | undefined {
    return this.tools.has(id) ? undefined : this.absent.get(id);
  }
}
