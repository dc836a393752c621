import type { FileQuery, GrepOutcome, GrepQuery, ToolFs, ToolSearch } from "../../tool/context.js";
import type { BackendRouter } from "../fs/scoped.js";

/** Search as a tool sees it: the root is checked against the read scope, then the backend searches. */
export class ScopedSearch implements ToolSearch {
  constructor(
    private readonly fs: ToolFs,
    private readonly route: BackendRouter,
    private readonly workspace: string,
    private readonly signal: AbortSignal,
  ) {}

  async files(query: FileQuery): Promise<{ root: string; files: string[]; limited: boolean }> {
    const root = await this.fs.resolve(query.path ?? ".", "read");
    const result = await this.route(root).search.files(root, query, this.signal);
    return { root, ...result };
  }

  async grep(query: GrepQuery): Promise<GrepOutcome> {
    const root = await this.fs.resolve(query.path ?? ".", "read");
    return this.route(root).search.grep(root, this.workspace, query, this.signal);
  }
}
