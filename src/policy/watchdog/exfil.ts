import type { Word } from "../bash-parse.js";
import { hasSubstitution, operands, type Finding, type ShellCommand, type WatchdogCheck } from "./shell.js";

// Data sent to the network: an upload of a file or of stdin, a substitution's output in a URL or
// in the data, a raw socket. A plain download (`curl https://x`) is not exfiltration.

const CURL_DATA = ["-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json"];
const CURL_FORM = ["-F", "--form"];
const CURL_UPLOAD = ["-T", "--upload-file"];
const WGET_UPLOAD = ["--post-file", "--body-file"];
const SOCKET_CLIENTS = new Set(["nc", "ncat", "netcat", "socat", "telnet"]);

/** `-d@file`, `--data=@file`, `-d @file`: the option's value, wherever it is written. */
function optionValues(args: readonly Word[], names: readonly string[]): Word[] {
  const values: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as Word;
    for (const name of names) {
      if (word.text === name) {
        const next = args[i + 1];
        if (next) values.push(next);
      } else if (name.startsWith("--") && word.text.startsWith(`${name}=`)) {
        values.push({ ...word, text: word.text.slice(name.length + 1) });
      } else if (!name.startsWith("--") && word.literal && !word.text.startsWith("--")) {
        // A cluster of short flags ending in this one (`-sSd @f`), or with its value attached (`-d@f`, `-sd@f`).
        const cluster = new RegExp(`^-[A-Za-z]*?${name.slice(1)}(.*)$`, "s").exec(word.text);
        if (!cluster) continue;
        const attached = cluster[1] ?? "";
        if (attached) values.push({ ...word, text: attached });
        else if (args[i + 1]) values.push(args[i + 1] as Word);
      }
    }
  }
  return values;
}

function curl({ args }: ShellCommand): string | null {
  for (const value of optionValues(args, CURL_DATA)) {
    // `@file` (and `name@file` for --data-urlencode) sends a file; `@-` sends stdin.
    if (/^(?:[^=@]*)@/.test(value.text.replace(/^["']/, ""))) return `curl sends a file or stdin as data (${value.text})`;
  }
  for (const value of optionValues(args, CURL_FORM)) {
    if (/=\s*["']?[@<]/.test(value.text)) return `curl uploads a file as a form field (${value.text})`;
  }
  const upload = optionValues(args, CURL_UPLOAD)[0];
  if (upload) return `curl uploads ${upload.text}`;
  const substituted = args.find(hasSubstitution);
  if (substituted) return `curl sends the output of a command substitution (${substituted.text})`;
  return null;
}

function wget({ args }: ShellCommand): string | null {
  const upload = optionValues(args, WGET_UPLOAD)[0];
  if (upload) return `wget posts the file ${upload.text}`;
  const substituted = args.find(hasSubstitution);
  if (substituted) return `wget sends the output of a command substitution (${substituted.text})`;
  return null;
}

/** A socket client sends whatever its stdin holds; only a port probe (`-z`) or a listener is left alone. */
function socket({ name, args }: ShellCommand): string | null {
  if (name === "socat") {
    return args.some((w) => /^(?:TCP|UDP|SSL|OPENSSL|TCP4|TCP6|UDP4|UDP6)[-:]/i.test(w.text) && !/LISTEN/i.test(w.text))
      ? "socat connects to a remote host, sending what it reads"
      : null;
  }
  const flags = args.filter((w) => w.literal && /^-[A-Za-z]+$/.test(w.text)).map((w) => w.text.slice(1));
  if (flags.some((f) => f.includes("l") || f.includes("z"))) return null;
  if (operands(args, ["-p", "-s", "-w", "-q", "-i", "-x", "-X", "-e", "-c"]).length === 0) return null;
  return `${name} sends its input to a remote host`;
}

/** `scp`/`rsync` whose destination (the last operand) is `host:path` or an rsync URL. */
function copyOut({ name, args }: ShellCommand): string | null {
  const values = name === "scp" ? ["-P", "-i", "-o", "-F", "-c", "-l", "-J", "-S"] : ["-e", "--rsh", "-f", "--filter", "--port"];
  const files = operands(args, values);
  if (files.length < 2) return null;
  const dest = files.at(-1) as Word;
  const text = dest.text.replace(/^["']|["']$/g, "");
  if (/^rsync:\/\//.test(text) || /^(?:[^\s/@:]+@)?\[?[A-Za-z0-9_.:-]*[A-Za-z0-9_.-]\]?:/.test(text)) {
    if (/^[.~/]/.test(text)) return null;
    return `${name} copies files to the remote ${text}`;
  }
  return null;
}

function dataSent(command: ShellCommand): string | null {
  const word = command.command.words.find((w) => /\/dev\/(?:tcp|udp)\//.test(w.text));
  if (word) return `the command opens a network socket (${word.text})`;
  switch (command.name) {
    case "curl":
      return curl(command);
    case "wget":
      return wget(command);
    case "scp":
    case "rsync":
      return copyOut(command);
  }
  if (command.name && SOCKET_CLIENTS.has(command.name)) return socket(command);
  return null;
}

export const exfilCheck: WatchdogCheck = {
  name: "exfil",
  check({ commands }): Finding | null {
    for (const line of new Set(commands.map((c) => c.line))) {
      const socket = line.redirects.find((r) => r.target && /\/dev\/(?:tcp|udp)\//.test(r.target.text));
      if (socket)
        return { action: "deny", reason: `a redirection opens a network socket (${socket.target?.text}): data would leave this machine` };
    }
    for (const command of commands) {
      const why = dataSent(command);
      if (why) return { action: "deny", reason: `${why}: data would leave this machine` };
    }
    return null;
  },
};
