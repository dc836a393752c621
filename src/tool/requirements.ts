import * as z from "zod";

/**
 * The RFC RequirementSet: the capability surface a tool (or a manifest) needs.
 * Path and host patterns may contain `{workspace}`, `{ad-hoc}` and `{user-data}`.
 */
export const ArgPatternSchema = z.union([
  z.string(),
  z.object({ wildcard: z.literal(true) }).strict(),
  z.object({ prefix: z.string() }).strict(),
]);
export type ArgPattern = z.infer<typeof ArgPatternSchema>;

export const ShellRunRequirementSchema = z
  .object({
    /** Executable name (`git`), or `*` for any executable. */
    cmd: z.string().min(1),
    /** Ordered patterns matched against argv[1..]; omitted = any arguments. */
    args: z.array(ArgPatternSchema).optional(),
  })
  .strict();
export type ShellRunRequirement = z.infer<typeof ShellRunRequirementSchema>;

export const RequirementSetSchema = z
  .object({
    fs: z
      .object({
        read: z.array(z.string()).optional(),
        write: z.array(z.string()).optional(),
      })
      .strict()
      .optional(),
    net: z
      .object({ hosts: z.array(z.string()).optional() })
      .strict()
      .optional(),
    shell: z.array(ShellRunRequirementSchema).optional(),
    capabilities: z.array(z.string()).optional(),
  })
  .strict();
export type RequirementSet = z.infer<typeof RequirementSetSchema>;

/** The union of requirement sets (RFC: adding a tool extends the effective set). */
export function unionRequirements(...sets: (RequirementSet | undefined)[]): RequirementSet {
  const read = new Set<string>();
  const write = new Set<string>();
  const hosts = new Set<string>();
  const caps = new Set<string>();
  const shell: ShellRunRequirement[] = [];
  const shellKeys = new Set<string>();
  for (const set of sets) {
    if (!set) continue;
    set.fs?.read?.forEach((p) => read.add(p));
    set.fs?.write?.forEach((p) => write.add(p));
    set.net?.hosts?.forEach((h) => hosts.add(h));
    set.capabilities?.forEach((c) => caps.add(c));
    for (const req of set.shell ?? []) {
      const key = JSON.stringify(req);
      if (!shellKeys.has(key)) {
        shellKeys.add(key);
        shell.push(req);
      }
    }
  }
  return {
    fs: { read: [...read], write: [...write] },
    net: { hosts: [...hosts] },
    shell,
    capabilities: [...caps],
  };
}
