import type { ToolNet } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import { hostAllowed, type CompiledScope } from "./scope.js";

/** fetch() limited to the scope's net.hosts, http(s) only, aborted with the call. */
export class ScopedNet implements ToolNet {
  constructor(
    private readonly scope: CompiledScope,
    private readonly signal: AbortSignal,
  ) {}

  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ToolError("invalid_arguments", `Not a valid URL: ${String(url)}`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new ToolError("invalid_arguments", `Only http and https URLs can be fetched, not ${parsed.protocol}`);
    }
    if (!hostAllowed(this.scope, parsed.hostname)) {
      const allowed = this.scope.hostPatterns.length ? this.scope.hostPatterns.join(", ") : "none";
      throw new ToolError("capability_denied", `Host ${parsed.hostname} is outside this tool's net.hosts (${allowed})`);
    }
    const signal = init.signal ? AbortSignal.any([init.signal, this.signal]) : this.signal;
    return fetch(parsed, { ...init, signal });
  }
}
