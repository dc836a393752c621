import { describe, expect, it } from "vitest";
import { DEFAULT_REQUEST_LIMITS, requestLimits } from "../../src/agent/model/request-limits.js";
import { parseUserConfig } from "../../src/config/schema.js";

// A model request's timeouts and retries: the environment wins over the config file, which wins
// over the defaults; a bad value of either is reported and the next source holds.

const file = (json: unknown) => parseUserConfig({ path: "/h/config.json", json });

describe("requestLimits", () => {
  it("takes the environment, then the config file's modelRequest, then the defaults", () => {
    const { config } = file({ modelRequest: { firstByteTimeoutMs: 5000, retries: 0 } });
    expect(requestLimits(config, {})).toEqual({
      limits: { ...DEFAULT_REQUEST_LIMITS, firstByteTimeoutMs: 5000, retries: 0 },
      problems: [],
    });
    expect(requestLimits(config, { TOOLHOST_MODEL_FIRST_BYTE_TIMEOUT_MS: "700", TOOLHOST_MODEL_IDLE_TIMEOUT_MS: " 900 " }).limits).toEqual({
      firstByteTimeoutMs: 700,
      idleTimeoutMs: 900,
      retries: 0,
    });
  });

  it("reports a bad value by name and keeps the next source", () => {
    const { limits, problems } = requestLimits(file({ modelRequest: { retries: 1 } }).config, {
      TOOLHOST_MODEL_RETRIES: "-1",
      TOOLHOST_MODEL_IDLE_TIMEOUT_MS: "soon",
    });
    expect(limits).toEqual({ ...DEFAULT_REQUEST_LIMITS, retries: 1 });
    expect(problems).toEqual([
      "TOOLHOST_MODEL_IDLE_TIMEOUT_MS=soon is ignored (120000 applies): must be a whole number of at least 1",
      "TOOLHOST_MODEL_RETRIES=-1 is ignored (1 applies): must be a whole number of at least 0",
    ]);
    const broken = file({ modelRequest: { firstByteTimeoutMs: 0, extra: true } });
    expect(broken.config.modelRequest).toBeUndefined();
    expect(broken.problems[0]).toMatch(/^"modelRequest" is ignored \(the default timeouts \(120 s\) and retries \(3\)\): /);
  });
});
