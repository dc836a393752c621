import { describe, expect, it } from "vitest";
import { Harness, useAcpTest } from "./harness.js";

// One answer per request, whatever came before it (issue 27 §1; the conformance kit's JSONRPC-005):
// the early reader answers only what the SDK would answer the same way.

const t = useAcpTest();

describe("one answer per request, whatever came before (JSONRPC-005)", () => {
  const bare = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "session/new", params: { cwd: t.ws } });
  const answerTo = (h: Harness, id: number) => h.checker.messages.find((m) => m.direction === "agent->client" && m.json.id === id)?.json;

  it("session/new without mcpServers is refused -32602 as a connection's first request and after an unknown method alike", async () => {
    t.h = new Harness({ env: { TOOLHOST_HOME: t.home } });
    await t.h.initialize();
    t.h.sendRaw(bare(701));
    await t.h.waitFor(() => answerTo(t.h!, 701) !== undefined);
    t.h.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: 702, method: "toolhost/nothing", params: {} }));
    await t.h.waitFor(() => answerTo(t.h!, 702) !== undefined);
    t.h.sendRaw(bare(703));
    await t.h.waitFor(() => answerTo(t.h!, 703) !== undefined);
    expect((answerTo(t.h, 701)?.error as { code: number }).code).toBe(-32602);
    expect((answerTo(t.h, 702)?.error as { code: number }).code).toBe(-32601);
    expect((answerTo(t.h, 703)?.error as { code: number }).code).toBe(-32602);
  });
});
