export const DEFAULT_PROFILE = "default";

/**
 * The active profile's name: the client's choice, then TOOLHOST_PROFILE, then the config file,
 * then `default`. Light (no zod), so session/new can answer with it before anything loads.
 */
export function selectProfileName(sources: { requested?: string; env?: NodeJS.ProcessEnv; config?: { profile?: string } } = {}): string {
  const env = sources.env ?? process.env;
  return sources.requested?.trim() || env.TOOLHOST_PROFILE?.trim() || sources.config?.profile?.trim() || DEFAULT_PROFILE;
}
