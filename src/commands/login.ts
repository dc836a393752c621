import os from "node:os";
import path from "node:path";
import * as readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import { modelReadiness } from "../agent/model/model-config.js";
import { PROVIDERS, type ProviderInfo } from "../agent/model/provider-table.js";
import { credentialsPath, readCredentials, removeCredentials, writeCredentials, type SavedProvider } from "../config/credentials.js";
import { readConfigFile } from "../config/file.js";
import { toolhostHome } from "../config/paths.js";
import { isInside } from "../tool/paths.js";

// `toolhost login`, `toolhost login --status`, `toolhost logout`: the stored login
// (config/credentials.ts). An editor runs `toolhost login` in a terminal (ACP terminal auth,
// acp/auth.ts); a person can too. Every session after reads it; keys in the environment win.

export interface LoginOptions {
  status?: boolean;
  input?: Readable;
  output?: Writable;
  env?: Record<string, string | undefined>;
}

/** One line to the person at the terminal. */
type Say = (text: string) => void;

/** Reads answers a line at a time; a key is not echoed on a terminal. */
class Prompter {
  private readonly rl: readline.Interface;
  private readonly lines: AsyncIterator<string>;
  private muted = false;

  constructor(
    input: Readable,
    private readonly output: Writable,
  ) {
    const terminal = (input as { isTTY?: boolean }).isTTY === true && (output as { isTTY?: boolean }).isTTY === true;
    this.rl = readline.createInterface({ input, output, terminal });
    // Readline echoes what is typed through this method: while a key is typed, nothing is shown.
    const rl = this.rl as unknown as { _writeToOutput(text: string): void };
    const write = rl._writeToOutput.bind(rl);
    rl._writeToOutput = (text: string) => {
      if (!this.muted || text.includes("\n")) write(this.muted ? "\n" : text);
    };
    this.lines = this.rl[Symbol.asyncIterator]();
  }

  /** The answer to `question` (trimmed); null when the input ended. */
  async ask(question: string, secret = false): Promise<string | null> {
    this.output.write(question);
    this.muted = secret;
    try {
      const next = await this.lines.next();
      return next.done ? null : next.value.trim();
    } finally {
      this.muted = false;
    }
  }

  close(): void {
    this.rl.close();
  }
}

const isHttpURL = (text: string) => {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
};

/** `toolhost login` and `toolhost login --status`. Exit code: 0 done (status: a model is ready), 1 not. */
export async function runLogin(options: LoginOptions = {}): Promise<number> {
  const output = options.output ?? process.stdout;
  const env = options.env ?? process.env;
  const say: Say = (text) => output.write(`${text}\n`);
  if (options.status) return loginStatus(say, env);
  const file = credentialsPath();
  // Never inside a workspace: the file would be one `cat` or commit away from the project.
  const cwd = process.cwd();
  if (isInside(file, cwd) && path.resolve(cwd) !== path.resolve(os.homedir())) {
    process.stderr.write(
      `toolhost: the login would be stored in ${file}, inside the current folder ${cwd}; set TOOLHOST_HOME to a folder outside any project (default ~/.toolhost)\n`,
    );
    return 1;
  }
  const prompter = new Prompter(options.input ?? process.stdin, output);
  try {
    return await interactiveLogin(prompter, say, env);
  } finally {
    prompter.close();
  }
}

async function interactiveLogin(prompter: Prompter, say: Say, env: Record<string, string | undefined>): Promise<number> {
  const gone = () => {
    process.stderr.write("toolhost: the input ended; nothing was saved\n");
    return 1;
  };
  say("Log in to a model provider for toolhost. Every session after uses this; keys in the environment still win.");
  say("");
  PROVIDERS.forEach((p, i) => say(`  ${i + 1}. ${p.id} — ${p.label}`));
  let provider: ProviderInfo | undefined;
  while (!provider) {
    const answer = await prompter.ask(`Provider [1]: `);
    if (answer === null) return gone();
    provider = answer === "" ? PROVIDERS[0] : (PROVIDERS[Number(answer) - 1] ?? PROVIDERS.find((p) => p.id === answer));
    if (!provider) say(`Answer 1 to ${PROVIDERS.length}, or a provider's name.`);
  }
  const saved: SavedProvider = {};
  if (provider.asks === "url") {
    while (!saved.baseURL) {
      const hint = provider.defaultURL ? ` [${provider.defaultURL}]` : " (e.g. http://localhost:8000/v1)";
      const answer = await prompter.ask(`Server URL${hint}: `);
      if (answer === null) return gone();
      const url = answer === "" ? provider.defaultURL : answer;
      if (url && isHttpURL(url)) saved.baseURL = url;
      else say("An http:// or https:// URL, please.");
    }
    const key = await prompter.ask("API key, if the server needs one (input hidden; empty for none): ", true);
    if (key === null) return gone();
    if (key) saved.apiKey = key;
  } else {
    while (!saved.apiKey) {
      const key = await prompter.ask(`${provider.id} API key (input hidden): `, true);
      if (key === null) return gone();
      if (key) saved.apiKey = key;
      else say("The key is needed: paste it, or end the input (Ctrl-D) to save nothing.");
    }
  }
  let model: string | undefined;
  if (provider.models.length) provider.models.forEach((m, i) => say(`  ${i + 1}. ${provider.id}/${m}`));
  while (!model) {
    const answer = await prompter.ask(
      provider.models.length ? "Model [1] (a number, or any model name of the provider): " : "Model name: ",
    );
    if (answer === null) return gone();
    const picked = answer === "" ? provider.models[0] : (provider.models[Number(answer) - 1] ?? answer);
    if (picked) model = picked.startsWith(`${provider.id}/`) ? picked : `${provider.id}/${picked}`;
  }
  const current = readCredentials();
  const file = writeCredentials({ model, providers: { ...(current.credentials?.providers ?? {}), [provider.id]: saved } });
  say("");
  say(`Saved to ${file} (readable by you alone). Sessions use ${model} from now on.`);
  if (env.TOOLHOST_MODEL?.trim()) say(`Note: TOOLHOST_MODEL=${env.TOOLHOST_MODEL} in the environment wins over this model.`);
  if (provider.keyEnv && env[provider.keyEnv]?.trim()) say(`Note: ${provider.keyEnv} in the environment wins over the key saved here.`);
  return 0;
}

/** `toolhost login --status`: the stored login, what wins over it, and whether a model is ready. */
function loginStatus(say: Say, env: Record<string, string | undefined>): number {
  const config = readConfigFile();
  const login = config.login ?? readCredentials();
  if (login.error) say(`Stored login: ${login.error}`);
  else if (!login.credentials) say(`Stored login: none (${login.path})`);
  else {
    const providers = Object.entries(login.credentials.providers).map(
      ([name, p]) => `${name} (${[p.apiKey ? "key" : "", p.baseURL ? `URL ${p.baseURL}` : ""].filter(Boolean).join(", ") || "nothing"})`,
    );
    say(`Stored login: ${login.path}`);
    say(`  model: ${login.credentials.model ?? "(none)"}`);
    say(`  providers: ${providers.join("; ") || "(none)"}`);
  }
  const fromEnv = [
    "TOOLHOST_MODEL",
    ...PROVIDERS.flatMap((p) => [p.keyEnv, p.urlEnv]).filter((name): name is string => name !== undefined),
  ].filter((name) => env[name]?.trim());
  if (fromEnv.length) say(`Set in the environment (these win): ${fromEnv.join(", ")}`);
  if (config.error) say(`Config file: ${config.error}`);
  const readiness = modelReadiness(env, config);
  if (readiness.ready) {
    const where = { env: "the environment", login: "the stored login", config: config.path, session: "the session" }[readiness.source];
    say(`Ready: ${readiness.id} (from ${where}).`);
    return 0;
  }
  say(`Not ready: ${readiness.reason}. Run \`toolhost login\`.`);
  return 1;
}

/** `toolhost logout`: removes the stored login. Keys in the environment are not toolhost's to remove. */
export function runLogout(output: Writable = process.stdout, env: Record<string, string | undefined> = process.env): number {
  const file = credentialsPath(toolhostHome());
  const removed = removeCredentials();
  output.write(removed ? `Removed the stored login (${file}).\n` : `No stored login at ${file}; nothing changed.\n`);
  const left = PROVIDERS.flatMap((p) => (p.keyEnv ? [p.keyEnv] : [])).filter((name) => env[name]?.trim());
  if (left.length) output.write(`Still set in the environment (toolhost cannot unset them): ${left.join(", ")}\n`);
  return 0;
}
