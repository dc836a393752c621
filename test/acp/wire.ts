import { createRequire } from "node:module";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

const require = createRequire(import.meta.url);
type Variant = { properties?: { sessionUpdate?: { const?: string } } };
type Schema = {
  $defs: Record<string, { "x-method"?: string; "x-side"?: string; oneOf?: Variant[]; anyOf?: Variant[] }>;
};

/** One schema's validators: per `$defs` name, per method, per sessionUpdate variant. */
function schemaSet(schema: Schema) {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema(schema, "acp");
  const compiled = new Map<string, ValidateFunction>();
  const validator = (ref: string): ValidateFunction => {
    let v = compiled.get(ref);
    if (!v) {
      v = ajv.compile({ $ref: `acp#/$defs/${ref}` });
      compiled.set(ref, v);
    }
    return v;
  };
  /** `$defs` names per method, from the schema's own x-method / x-side marks. */
  const byMethod = new Map<string, { request?: string; response?: string; notification?: string }>();
  for (const [name, def] of Object.entries(schema.$defs)) {
    const method = def["x-method"];
    if (!method) continue;
    const entry = byMethod.get(method) ?? {};
    if (name.endsWith("Request")) entry.request = name;
    else if (name.endsWith("Response")) entry.response = name;
    else if (name.endsWith("Notification")) entry.notification = name;
    byMethod.set(method, entry);
  }
  /** Each sessionUpdate variant's path inside SessionUpdate (v1: oneOf; v2: anyOf, whose open catch-all is never used). */
  const updateVariants = new Map<string, string>();
  const union = schema.$defs.SessionUpdate?.oneOf ? "oneOf" : "anyOf";
  schema.$defs.SessionUpdate?.[union]?.forEach((variant, i) => {
    const name = variant.properties?.sessionUpdate?.const;
    if (name) updateVariants.set(name, `SessionUpdate/${union}/${i}`);
  });
  return { ajv, validator, byMethod, updateVariants };
}

let stableSet: ReturnType<typeof schemaSet> | undefined;
let unstableSet: ReturnType<typeof schemaSet> | undefined;
let v2Set: ReturnType<typeof schemaSet> | undefined;
let v2UnstableSet: ReturnType<typeof schemaSet> | undefined;
/** The stable v1 schema, the SDK's unstable one (for a client that opts into unstable features), or v2's (stable or unstable). */
function schemas(unstable: boolean, v2: boolean): ReturnType<typeof schemaSet> {
  if (v2 && unstable) return (v2UnstableSet ??= schemaSet(require("@agentclientprotocol/sdk/schema/v2/schema.unstable.json") as Schema));
  if (v2) return (v2Set ??= schemaSet(require("@agentclientprotocol/sdk/schema/v2/schema.json") as Schema));
  if (unstable) return (unstableSet ??= schemaSet(require("@agentclientprotocol/sdk/schema/v1/schema.unstable.json") as Schema));
  return (stableSet ??= schemaSet(require("@agentclientprotocol/sdk/schema/v1/schema.json") as Schema));
}

export type Direction = "client->agent" | "agent->client";

export interface WireMessage {
  direction: Direction;
  raw: string;
  json: Record<string, unknown>;
}

/**
 * Checks every JSON-RPC message of a connection against the ACP v1 schema, per method (not the
 * permissive root schema), and each session/update against its own variant.
 */
export class WireChecker {
  readonly messages: WireMessage[] = [];
  readonly problems: string[] = [];
  readonly seenUpdates = new Set<string>();
  readonly seenMethods = new Set<string>();
  private readonly pending = new Map<string, string>();
  private readonly set: ReturnType<typeof schemaSet>;

  /** `v2`: the ACP v2 schema, and the client's own requests and notifications are checked too. */
  constructor(
    unstable = false,
    private readonly v2 = false,
  ) {
    this.set = schemas(unstable, v2);
  }

  record(direction: Direction, raw: string): void {
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      if (direction === "agent->client") this.problems.push(`agent wrote a non-JSON line: ${raw.slice(0, 200)}`);
      return;
    }
    this.messages.push({ direction, raw, json });
    if (direction === "client->agent") this.checkFromClient(json);
    else this.checkFromAgent(json);
  }

  private check(ref: string | undefined, value: unknown, what: string): void {
    if (!ref) {
      this.problems.push(`${what}: no schema type for it`);
      return;
    }
    const v = this.set.validator(ref);
    if (!v(value)) this.problems.push(`${what} does not match ${ref}: ${this.set.ajv.errorsText(v.errors)}`);
  }

  private checkFromClient(msg: Record<string, unknown>): void {
    // The harness also sends deliberately bad lines; only messages the agent answers are tracked.
    if (typeof msg.method === "string" && msg.id !== undefined) this.pending.set(`c:${String(msg.id)}`, msg.method);
    // An extension method (`_…`) has no schema type: its test checks its shape.
    if (this.v2 && typeof msg.method === "string" && !msg.method.startsWith("_")) {
      const types = this.set.byMethod.get(msg.method);
      const ref =
        msg.method === "$/cancel_request" ? "CancelRequestNotification" : msg.id === undefined ? types?.notification : types?.request;
      this.check(ref, msg.params, `client ${msg.id === undefined ? "notification" : "request"} ${msg.method}`);
    }
    if (msg.method === undefined && msg.id !== undefined) {
      const method = this.pending.get(`a:${String(msg.id)}`);
      this.pending.delete(`a:${String(msg.id)}`);
      if (method && "result" in msg) this.check(this.set.byMethod.get(method)?.response, msg.result, `client's ${method} result`);
    }
  }

  private checkFromAgent(msg: Record<string, unknown>): void {
    if (msg.jsonrpc !== "2.0") this.problems.push(`agent message without jsonrpc 2.0: ${JSON.stringify(msg).slice(0, 200)}`);
    const method = msg.method;
    if (typeof method === "string") {
      this.seenMethods.add(method);
      if (method === "$/cancel_request") {
        this.check("CancelRequestNotification", msg.params, method);
        return;
      }
      const types = this.set.byMethod.get(method);
      if (msg.id !== undefined) {
        this.pending.set(`a:${String(msg.id)}`, method);
        this.check(types?.request, msg.params, `agent request ${method}`);
      } else {
        this.check(types?.notification, msg.params, `agent notification ${method}`);
        if (method === "session/update") this.checkUpdate((msg.params as { update?: { sessionUpdate?: string } })?.update);
      }
      return;
    }
    // A response: to a known request of the client, or an error.
    const key = `c:${String(msg.id)}`;
    const requested = this.pending.get(key);
    this.pending.delete(key);
    if ("error" in msg) {
      this.check("Error", msg.error, `agent error for ${requested ?? `id ${String(msg.id)}`}`);
      return;
    }
    if (!requested) {
      this.problems.push(`agent answered an id it was not asked: ${JSON.stringify(msg).slice(0, 200)}`);
      return;
    }
    // An extension method (`_…`): the schema says nothing of its result (its test checks the shape).
    if (requested.startsWith("_")) {
      if (typeof msg.result !== "object" || msg.result === null) this.problems.push(`agent's ${requested} result is not an object`);
      return;
    }
    this.check(this.set.byMethod.get(requested)?.response, msg.result, `agent's ${requested} result`);
  }

  private checkUpdate(update: { sessionUpdate?: string } | undefined): void {
    const name = update?.sessionUpdate;
    const variant = name ? this.set.updateVariants.get(name) : undefined;
    if (name === undefined || variant === undefined) {
      this.problems.push(`unknown sessionUpdate ${String(name)}`);
      return;
    }
    this.seenUpdates.add(name);
    const v = this.set.validator(variant);
    if (!v(update)) this.problems.push(`${name} update invalid: ${this.set.ajv.errorsText(v.errors)}`);
  }
}

/**
 * A spawned agent's stdin and stdout as the byte streams an SDK client connects to, every line of
 * both directions recorded by `checker`. Writes after stdin ended go nowhere (like an editor that
 * closed the pipe while the agent finishes a cancelled call).
 */
export function checkedStdio(
  stdin: NodeJS.WritableStream & { writableEnded: boolean },
  stdout: NodeJS.ReadableStream,
  checker: WireChecker,
): { toAgent: WritableStream<Uint8Array>; fromAgent: ReadableStream<Uint8Array> } {
  let pendingOut = "";
  const toAgent = new WritableStream<Uint8Array>({
    write(chunk) {
      if (stdin.writableEnded) return;
      pendingOut += Buffer.from(chunk).toString("utf8");
      let nl: number;
      while ((nl = pendingOut.indexOf("\n")) >= 0) {
        checker.record("client->agent", pendingOut.slice(0, nl));
        pendingOut = pendingOut.slice(nl + 1);
      }
      return new Promise<void>((resolve, reject) => stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
    },
    close() {
      stdin.end();
    },
  });
  let pendingIn = "";
  const fromAgent = new ReadableStream<Uint8Array>({
    start(controller) {
      stdout.on("data", (chunk: Buffer) => {
        pendingIn += chunk.toString("utf8");
        let nl: number;
        while ((nl = pendingIn.indexOf("\n")) >= 0) {
          checker.record("agent->client", pendingIn.slice(0, nl));
          pendingIn = pendingIn.slice(nl + 1);
        }
        controller.enqueue(new Uint8Array(chunk));
      });
      stdout.on("end", () => controller.close());
    },
  });
  return { toAgent, fromAgent };
}
