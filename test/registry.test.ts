import { readdirSync, readFileSync } from "node:fs";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";

// Issue 26 §2: registry/toolhost/ is the folder a pull request to agentclientprotocol/registry
// adds. It must pass the registry's CI: its schema (vendored in test/fixtures/registry/, see the
// README there) and the checks of its build_registry.py, ported below as written there. The auth
// check against the packed package is scripts/check-package.mjs (run by .ci/run).

const read = (rel: string) => readFileSync(new URL(`../${rel}`, import.meta.url), "utf8");
const schema = JSON.parse(read("test/fixtures/registry/agent.schema.json")) as Record<string, unknown>;
const pkg = JSON.parse(read("package.json")) as { name: string; version: string };
const entry = JSON.parse(read("registry/toolhost/agent.json")) as Record<string, unknown> & {
  id: string;
  version: string;
  distribution: { npx?: { package: string } };
};
const icon = read("registry/toolhost/icon.svg");

/** The schema check (jsonschema in the registry's CI; ajv here, with its one format). */
function schemaErrors(agent: unknown): string[] {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat("uri", (value: string) => URL.canParse(value));
  const validate = ajv.compile(schema);
  return validate(agent) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "root"}: ${e.message ?? ""}`);
}

/** build_registry.py's extract_npm_package_version: `@scope/name@version` or `name@version` → version. */
function npmVersion(spec: string): string | undefined {
  const at = spec.startsWith("@") ? spec.indexOf("@", 1) : spec.indexOf("@");
  return at > 0 ? spec.slice(at + 1) : undefined;
}

/** build_registry.py's validate_agent (id, version) and validate_distribution_versions (npx). */
function entryErrors(agent: typeof entry, dir: string): string[] {
  const errors: string[] = [];
  if (!/^[a-z][a-z0-9-]*$/.test(agent.id)) errors.push("Field 'id' must be lowercase with hyphens only");
  if (agent.id !== dir) errors.push(`Field 'id' (${agent.id}) must match directory name (${dir})`);
  const parts = agent.version.split(".");
  if (parts.length < 3 || !parts.slice(0, 3).every((p) => /^\d+$/.test(p)))
    errors.push(`Field 'version' (${agent.version}) must be semantic version`);
  const npx = agent.distribution.npx?.package;
  if (npx !== undefined) {
    if (npx.endsWith("@latest")) errors.push(`npx package uses '@latest' - use explicit version instead: ${npx}`);
    const version = npmVersion(npx);
    if (version && version !== agent.version)
      errors.push(`npx package version (${version}) doesn't match agent version (${agent.version})`);
  }
  return errors;
}

const ALLOWED = new Set(["currentcolor", "none", "inherit"]);

/** build_registry.py's validate_icon and validate_icon_monochrome. */
function iconErrors(content: string): string[] {
  const errors: string[] = [];
  const width = /<svg[^>]*\swidth=["'](\d+)/.exec(content);
  const height = /<svg[^>]*\sheight=["'](\d+)/.exec(content);
  let w: number;
  let h: number;
  if (!width || !height) {
    const box = /viewBox=["'][\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)/.exec(content);
    if (!box) return ["Icon missing width/height attributes and viewBox"];
    [w, h] = [Number(box[1]), Number(box[2])];
  } else [w, h] = [Number(width[1]), Number(height[1])];
  if (w !== h) errors.push(`Icon must be square (got ${w}x${h})`);
  if (w !== 16 || h !== 16) errors.push(`Icon should be 16x16 (got ${w}x${h})`);
  for (const attr of ["fill", "stroke"]) {
    for (const m of content.matchAll(new RegExp(`\\b${attr}\\s*=\\s*["']([^"']+)["']`, "gi")))
      if (!ALLOWED.has(m[1]!.trim().toLowerCase())) errors.push(`Icon has hardcoded ${attr}="${m[1]}"`);
  }
  for (const m of content.matchAll(/\bstyle\s*=\s*["']([^"']+)["']/gi)) {
    for (const attr of ["fill", "stroke"]) {
      const v = new RegExp(`\\b${attr}\\s*:\\s*([^;]+)`, "i").exec(m[1]!);
      if (v && !ALLOWED.has(v[1]!.trim().toLowerCase())) errors.push(`Icon has hardcoded style ${attr}: ${v[1]!.trim()}`);
    }
  }
  if (!/currentColor/i.test(content)) errors.push("Icon must use currentColor for fills/strokes to support theming");
  return errors;
}

describe("registry/toolhost (the registry's CI, ported)", () => {
  it("is the folder a pull request adds: agent.json and icon.svg, nothing else", () => {
    expect(readdirSync(new URL("../registry", import.meta.url))).toEqual(["toolhost"]);
    expect(readdirSync(new URL("../registry/toolhost", import.meta.url)).sort()).toEqual(["agent.json", "icon.svg"]);
  });

  it("validates against the registry's agent.schema.json and its checks", () => {
    expect(schemaErrors(entry)).toEqual([]);
    expect(entryErrors(entry, "toolhost")).toEqual([]);
    // The checks do catch what they are for.
    expect(schemaErrors({ ...entry, id: "Toolhost", distribution: { npm: {} } }).length).toBeGreaterThanOrEqual(2);
    expect(entryErrors({ ...entry, distribution: { npx: { package: "toolhost@9.9.9" } } }, "toolhost")).toEqual([
      "npx package version (9.9.9) doesn't match agent version (0.1.0)",
    ]);
  });

  it("pins distribution.npx.package to this package at package.json's version", () => {
    expect(entry.version).toBe(pkg.version);
    expect(entry.distribution.npx?.package).toBe(`${pkg.name}@${pkg.version}`);
  });

  it("has a 16×16 square monochrome icon in currentColor only", () => {
    expect(iconErrors(icon)).toEqual([]);
    expect(iconErrors(icon.replace('fill="currentColor"', 'fill="#ff0000"'))).toEqual([
      'Icon has hardcoded fill="#ff0000"',
      "Icon must use currentColor for fills/strokes to support theming",
    ]);
    expect(iconErrors(icon.replace('width="16"', 'width="24"'))).toEqual([
      "Icon must be square (got 24x16)",
      "Icon should be 16x16 (got 24x16)",
    ]);
  });
});
