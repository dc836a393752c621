import os from "node:os";
import path from "node:path";

/** The per-user folder (`{user-data}`): config, profiles, trusted projects. TOOLHOST_HOME overrides it (tests, portable installs). */
export function toolhostHome(): string {
  return process.env.TOOLHOST_HOME ?? path.join(os.homedir(), ".toolhost");
}
