import * as z from "zod";

/**
 * A permission rule (RFC): from a profile, the user's or a trusted project's config; the
 * ruleset (policy/ruleset.ts) evaluates it against a call's targets.
 */
export const PermissionRuleSchema = z
  .object({
    /** A tool id (`bash`), a capability (`fs.write`) or `*`. */
    permission: z.string().min(1),
    /** What the rule matches in the call: a command pattern, a path glob, a host; `*` for all. */
    pattern: z.string().min(1).default("*"),
    action: z.enum(["allow", "deny", "ask"]),
  })
  .strict();
export type PermissionRule = z.infer<typeof PermissionRuleSchema>;
