// The `yaml` library behind an ES module of our own, for `frontmatter.ts` to import() on first use:
// bundled, a CommonJS package imported dynamically would have only a default export.
export { parse } from "yaml";
