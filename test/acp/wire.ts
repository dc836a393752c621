import { createRequire } from "node:module";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

const require = createRequire(import.meta.url);

type AcpSchema = {
  $defs: Record<string, { "x-method"?: string; "x-side"?: string; oneOf?: { properties?: { sessionUpdate?: { const?: string } } }[] }>;
};

/** One ACP schema (stable v1, or the SDK's unstable v1 for clients that opt into unstable capabilities). */
class SchemaSet {
  private readonly ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  /** `$defs` names per method, from the schema's own x-method / x-side marks. */
  readonly byMethod = new Map<string, { request?: string; response?: string; notification?: string }>();
  /** Index of each sessionUpdate variant inside SessionUpdate.oneOf. */
  readonly updateVariants = new Map<string, number>();

  constructor(schema: AcpSchema) {
    this.ajv.addSchema(schema, "acp");
    for (const [name, def] of Object.entries(schema.$defs)) {
      const method = def["x-method"];
      if (!method) continue;
      const entry = this.byMethod.get(method) ?? {};
      if (name.endsWith("Request")) entry.request = name;
      else if (name.endsWith("Response")) entry.response = name;
      else if (name.endsWith("Notification")) entry.notification = name;
      this.byMethod.set(method, entry);
    }
    schema.$defs.SessionUpdate?.oneOf?.forEach((variant, i) => {
      const name = variant.properties?.sessionUpdate?.const;
      if (name) this.updateVariants.set(name, i);
    });
  }

  validator(ref: string): ValidateFunction {
    let v = this.compiled.get(ref);
    if (!v) {
      v = this.ajv.compile({ $ref: `acp#/$defs/${ref}` });
      this.compiled.set(ref, v);
    }
    return v;
  }

  errorsText(v: ValidateFunction): string {
    return this.ajv.errorsText(v.errors);
  }
}

const schemas: { stable?: SchemaSet; unstable?: SchemaSet } = {};

function schemaSet(unstable: boolean): SchemaSet {
  if (unstable)
    return (schemas.unstable ??= new SchemaSet(require("@agentclientprotocol/sdk/schema/v1/schema.unstable.json") as AcpSchema));
  return (schemas.stable ??= new SchemaSet(require("@agentclientprotocol/sdk/schema/v1/schema.json") as AcpSchema));
}

export type Direction = "client->agent" | "agent->client";

export interface WireMessage {
  direction: Direction;
  raw: string;
  json: Record<string, unknown>;
}

/**
 * Checks every JSON-RPC message of a connection against the ACP v1 schema, per method (not the
 * permissive root schema), and each session/update against its own variant. `unstable` checks
 * against the SDK's unstable v1 schema instead (a client that opted into e.g. plan operations).
 */
export class WireChecker {
  readonly messages: WireMessage[] = [];
  readonly problems: string[] = [];
  readonly seenUpdates = new Set<string>();
  readonly seenMethods = new Set<string>();
  private readonly pending = new Map<string, string>();
  private readonly schema: SchemaSet;

  constructor(unstable = false) {
    this.schema = schemaSet(unstable);
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
    const v = this.schema.validator(ref);
    if (!v(value)) this.problems.push(`${what} does not match ${ref}: ${this.schema.errorsText(v)}`);
  }

  private checkFromClient(msg: Record<string, unknown>): void {
    // The harness also sends deliberately bad lines; only messages the agent answers are tracked.
    if (typeof msg.method === "string" && msg.id !== undefined) this.pending.set(`c:${String(msg.id)}`, msg.method);
    if (msg.method === undefined && msg.id !== undefined) {
      const method = this.pending.get(`a:${String(msg.id)}`);
      this.pending.delete(`a:${String(msg.id)}`);
      if (method && "result" in msg) this.check(this.schema.byMethod.get(method)?.response, msg.result, `client's ${method} result`);
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
      const types = this.schema.byMethod.get(method);
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
    this.check(this.schema.byMethod.get(requested)?.response, msg.result, `agent's ${requested} result`);
  }

  private checkUpdate(update: { sessionUpdate?: string } | undefined): void {
    const name = update?.sessionUpdate;
    const index = name ? this.schema.updateVariants.get(name) : undefined;
    if (name === undefined || index === undefined) {
      this.problems.push(`unknown sessionUpdate ${String(name)}`);
      return;
    }
    this.seenUpdates.add(name);
    const v = this.schema.validator(`SessionUpdate/oneOf/${index}`);
    if (!v(update)) this.problems.push(`${name} update invalid: ${this.schema.errorsText(v)}`);
  }
}
