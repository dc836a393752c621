// Commands that run another command given in their own words (`sudo rm x`, `timeout 5 rm x`):
// one table for the permission rules (policy/normalize.ts) and the watchdog (watchdog/shell.ts),
// so a rule and a check see the same command behind the same wrapper.

interface Wrapper {
  /** Option words that take the next word as their value. */
  values: readonly string[];
  /** Operands before the command (`timeout 5`, `flock FILE`, `chroot DIR`). */
  operands?: number;
  /** Options whose value is the directory the command runs in (`env -C DIR`, `sudo -D DIR`). */
  chdir?: readonly string[];
  /** Takes `NAME=value` words before the command (`env A=1 cmd`, `sudo A=1 cmd`). */
  assignments?: boolean;
  /** An option that makes it run a script string instead (`flock -c`, `flock -xc`): then it is not a wrapper. */
  script?: RegExp;
}

export const WRAPPERS: Readonly<Record<string, Wrapper>> = {
  sudo: {
    values: ["-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t", "-T", "--user", "--group", "--chdir", "--host", "--prompt", "--role"],
    chdir: ["-D", "--chdir"],
    assignments: true,
  },
  doas: { values: ["-u", "-C"] },
  env: { values: ["-u", "-C", "-S", "--unset", "--chdir", "--split-string"], chdir: ["-C", "--chdir"], assignments: true },
  nohup: { values: [] },
  time: { values: ["-f", "-o", "--format", "--output"] },
  timeout: { values: ["-s", "-k", "--signal", "--kill-after"], operands: 1 },
  nice: { values: ["-n", "--adjustment"] },
  ionice: { values: ["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"] },
  command: { values: [] },
  exec: { values: ["-a"] },
  builtin: { values: [] },
  coproc: { values: [] },
  stdbuf: { values: ["-i", "-o", "-e"] },
  xargs: {
    values: ["-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines"],
  },
  unbuffer: { values: [] },
  flock: { values: ["-w", "-E", "--timeout", "--conflict-exit-code"], operands: 1, script: /^(?:-[A-Za-z]*c|--command)/ },
  chronic: { values: [] },
  setsid: { values: [] },
  busybox: { values: [] },
  chroot: { values: ["--userspec", "--groups"], operands: 1 },
  taskset: { values: [], operands: 1 },
  strace: { values: ["-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-b", "-I", "-O", "-S", "-X"] },
  ltrace: { values: ["-o", "-e", "-p", "-s", "-u", "-a", "-l", "-n"] },
  unshare: { values: [] },
  nsenter: { values: ["-t", "-S", "-G"] },
  proxychains: { values: ["-f"] },
  proxychains4: { values: ["-f"] },
  torsocks: { values: [] },
  toybox: { values: [] },
  chrt: { values: [], operands: 1 },
  setpriv: { values: [] },
  prlimit: { values: ["-p", "--pid"] },
  fakeroot: { values: ["-l", "-s", "-i", "--lib", "--faked"] },
  eatmydata: { values: [] },
  faketime: { values: ["-m", "-f"], operands: 1 },
  numactl: { values: ["-C", "-N", "-m", "-i", "-p", "--physcpubind", "--cpunodebind", "--membind", "--interleave", "--preferred"] },
  nocache: { values: [] },
  catchsegv: { values: [] },
};

/** The last segment of a command path (`/bin/rm` → `rm`). */
export const commandBasename = (text: string): string => text.split("/").at(-1) ?? text;

/** A word of a command line (policy/bash-parse.ts `Word`), as far as unwrapping needs it. */
interface Word {
  text: string;
  literal: boolean;
}

export interface Unwrapped<W extends Word = Word> {
  /** The basename of what runs once the wrappers are off; null when it is not literal or there is none. */
  name: string | null;
  /** The words after it. */
  args: W[];
  /** The word that names what runs (null: none). */
  head: W | null;
  /** The wrappers taken off, outermost first (`sudo`, `timeout`, …). */
  via: string[];
  /** Directories the wrappers make the command run in (`env -C DIR`, `sudo -D DIR`). */
  chdir: W[];
  /** `env -S STRING`: the command is a string env splits itself. */
  split: boolean;
}

/** A command's name and arguments once wrappers are taken off. */
export function unwrap<W extends Word>(words: readonly W[]): Unwrapped<W> {
  let rest = [...words];
  const via: string[] = [];
  const chdir: W[] = [];
  let split = false;
  for (let depth = 0; depth < 8; depth++) {
    const head = rest[0];
    if (!head) return { name: null, args: [], head: null, via, chdir, split };
    if (!head.literal) return { name: null, args: rest.slice(1), head, via, chdir, split };
    const name = commandBasename(head.text);
    const wrapper = WRAPPERS[name];
    // `command -v rm` looks a name up; it runs nothing.
    const lookup = (name === "command" || name === "builtin") && /^-[pvV]*[vV]/.test(rest[1]?.text ?? "");
    const script = wrapper?.script && rest.slice(1).some((w) => wrapper.script?.test(w.text));
    if (!wrapper || lookup || script) return { name, args: rest.slice(1), head, via, chdir, split };
    via.push(name);
    let i = 1;
    let operands = wrapper.operands ?? 0;
    while (i < rest.length) {
      const word = rest[i] as W;
      if (word.text === "--") {
        i++;
        break;
      }
      if (word.text.startsWith("-") && word.text.length > 1) {
        const option = word.text.split("=")[0] as string;
        const takesValue = wrapper.values.includes(word.text);
        if (name === "env" && (option === "-S" || option === "--split-string" || /^-[^-]*S/.test(option))) split = true;
        if (wrapper.chdir?.includes(option)) {
          const value = takesValue ? rest[i + 1] : { ...word, text: word.text.slice(option.length + 1) };
          if (value) chdir.push(value);
        }
        i += takesValue ? 2 : 1;
      } else if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word.text)) {
        i++;
      } else if (operands > 0) {
        operands--;
        i++;
      } else break;
    }
    rest = rest.slice(i);
  }
  return { name: null, args: rest.slice(1), head: rest[0] ?? null, via, chdir, split };
}
