// Extension files for the plugin-host tests, written the way a user writes them.
import { tempDir } from "../helpers.js";

/** Points TOOLHOST_HOME at a fresh folder, so no real ~/.toolhost (or its jiti cache) leaks in. */
export async function useTempHome(): Promise<string> {
  const home = await tempDir();
  process.env.TOOLHOST_HOME = home;
  return home;
}

/** A small valid extension file: a `read` tool that answers with its id and a tag. */
export function toolFile(id: string, tag = id, extra = ""): string {
  return `import { defineTool, z } from "toolhost";
export default defineTool({
  id: ${JSON.stringify(id)},
  description: "Says which file it came from.",
  kind: "read",
  parameters: z.object({ name: z.string().default("you") }),
  requires: {},
  ${extra}
  execute: async (args) => ({ tag: ${JSON.stringify(tag)}, hello: args.name }),
});
`;
}
