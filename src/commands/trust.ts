import * as fsp from "node:fs/promises";
import path from "node:path";
import { projectToolDir } from "../host/discovery.js";
import { listToolFiles } from "../host/loader.js";
import { trust, untrust } from "../host/trust.js";
import { formatContentChanges } from "../host/trust-contents.js";

export interface TrustOptions {
  dir?: string;
  revoke: boolean;
}

const say = (text: string) => process.stdout.write(`${text}\n`); // stdout-ok: the command's report

/** `toolhost trust [dir]`: lets a project's own tools load (they run code), or withdraws that. */
export async function runTrust(options: TrustOptions): Promise<number> {
  const dir = path.resolve(options.dir ?? process.cwd());
  const stat = await fsp.stat(dir).catch(() => null);
  if (!stat?.isDirectory()) {
    process.stderr.write(`toolhost: ${dir} is not a folder\n`);
    return 1;
  }
  try {
    if (options.revoke) {
      const { path: real, was } = await untrust(dir);
      say(was ? `No longer trusted: ${real}. Its .toolhost/tools/ will not load.` : `${real} was not trusted; nothing changed.`);
      return 0;
    }
    const { path: real, already, changes, legacy } = await trust(dir);
    if (already) say(`${real} was already trusted, with its files as they are now.`);
    else if (legacy) say(`Trusted ${real}, with its files as they are now (it was trusted before toolhost recorded them).`);
    else if (changes?.length)
      say(`Trusted ${real} again, as it is now. These files changed since it was last trusted:\n${formatContentChanges(changes)}`);
    else say(`Trusted ${real}.`);
    say(
      "Trust covers its tools, agents, skills and config as they are now, and the workspace files its tools import (pinned when they next load): once one of them changes, toolhost asks again.",
    );
    const files = await listToolFiles(projectToolDir(real));
    say(
      files.length
        ? `Its tools load in new sessions and on /reload:\n${files.map((f) => `  ${f}`).join("\n")}`
        : `It has no tools yet; drop .ts files into ${projectToolDir(real)}.`,
    );
    return 0;
  } catch (err) {
    process.stderr.write(`toolhost: ${(err as Error).message}\n`);
    return 1;
  }
}
