import { describe, expect, it } from "vitest";
import { parseSlash } from "../../src/agent/commands.js";
import { builtinRegistry } from "../../src/host/builtins.js";

describe("slash command arguments", () => {
  const registry = builtinRegistry();

  it("a brace pattern goes to the tool's shorthand, not to JSON.parse", () => {
    expect(parseSlash("/glob {a,b}.txt", registry)).toEqual({ type: "tool", toolId: "glob", args: { pattern: "{a,b}.txt" } });
    expect(parseSlash("/glob {src,test}/**/*.ts", registry)).toEqual({
      type: "tool",
      toolId: "glob",
      args: { pattern: "{src,test}/**/*.ts" },
    });
    expect(parseSlash("/bash {echo a; echo b; }", registry)).toEqual({
      type: "tool",
      toolId: "bash",
      args: { command: "{echo a; echo b; }" },
    });
  });

  it("a JSON object is still the arguments", () => {
    expect(parseSlash('/glob {"pattern":"*.md","path":"docs"}', registry)).toEqual({
      type: "tool",
      toolId: "glob",
      args: { pattern: "*.md", path: "docs" },
    });
  });
});
