// docs/configuration.md lists every key of the config file's schema (walked through zod's
// definitions: objects, optionals, unions, arrays, records) and every TOOLHOST_* environment
// variable the code reads: a key or a variable added in src/ without a line there fails here.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type * as z from "zod";
import { UserConfigSchema } from "../../src/config/schema.js";

const root = path.resolve(import.meta.dirname, "../..");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

/** Every key path of a schema: `a.b` for an object's key, `a.<name>.b` under a record, `a[].b` in a list. */
function keyPaths(schema: z.core.$ZodType, at: string, out: string[] = []): string[] {
  const def = schema._zod.def as z.core.$ZodTypeDef & Record<string, unknown>;
  switch (def.type) {
    case "object":
      for (const [key, value] of Object.entries(def.shape as Record<string, z.core.$ZodType>)) {
        const here = at ? `${at}.${key}` : key;
        out.push(here);
        keyPaths(value, here, out);
      }
      break;
    case "optional":
    case "nullable":
    case "default":
      keyPaths(def.innerType as z.core.$ZodType, at, out);
      break;
    case "union":
      for (const option of def.options as z.core.$ZodType[]) keyPaths(option, at, out);
      break;
    case "array":
      keyPaths(def.element as z.core.$ZodType, `${at}[]`, out);
      break;
    case "record":
      keyPaths(def.valueType as z.core.$ZodType, `${at}.<name>`, out);
      break;
  }
  return out;
}

const reference = () => fs.readFileSync(path.join(root, "docs/configuration.md"), "utf8");

describe("the configuration reference", () => {
  it("names every key of the config file's schema", () => {
    const keys = [...new Set(keyPaths(UserConfigSchema, ""))];
    const documented = new Set([...reference().matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]));
    // The walk reaches nested keys (a broken walk would find only the top level).
    expect(keys).toEqual(expect.arrayContaining(["model", "sandbox.denyRead", "webSearch.providers[].apiKeyEnv", "lsp.<name>.command"]));
    expect(keys.filter((key) => !documented.has(key))).toEqual([]);
  });

  it("names every TOOLHOST_ environment variable in src/", () => {
    const used = new Set<string>();
    for (const file of sourceFiles(path.join(root, "src"))) {
      for (const match of fs.readFileSync(file, "utf8").matchAll(/TOOLHOST_[A-Z0-9_]*[A-Z0-9]/g)) used.add(match[0]);
    }
    const documented = new Set([...reference().matchAll(/`(TOOLHOST_[A-Z0-9_]+)`/g)].map((m) => m[1]));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });
});
