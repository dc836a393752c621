// @joplin/turndown-plugin-gfm ships no types: the one export web_fetch uses.
declare module "@joplin/turndown-plugin-gfm" {
  import type TurndownService from "turndown";
  export const gfm: TurndownService.Plugin;
}
