import type { Word } from "./bash-parse.js";

// Commands whose effect is not in their text (issue 33): what they do is written in a file, a
// makefile, a package's scripts, a program named by its path, or an environment variable that
// hands a program code. A deny rule for `rm *` cannot see the `rm` inside `sh ./del.sh`, `make d`
// or `npx rm`, so where a bash deny or ask rule is in force such a line asks (policy/decide.ts's
// guard), and headless it is refused. The tables name the common runners; the class is closed by
// the sandbox, where a denied program cannot run whatever runs it (runtime/sandbox/denied-programs.ts).
//
// `./x.sh` is opaque too: a program named by a path is a file whose content the line does not
// show (a script the model just wrote, a copy of a denied binary), exactly as `sh ./x.sh` is. A
// path into the system's own bin folders (`/usr/bin/rm`) is read as the program it names.

/** Runners whose subcommand runs a project's scripts or fetches and runs a package. */
const RUNNERS: Readonly<Record<string, { all?: true; sub?: readonly string[]; why: string }>> = {
  make: { all: true, why: "runs the recipes of a makefile" },
  gmake: { all: true, why: "runs the recipes of a makefile" },
  bmake: { all: true, why: "runs the recipes of a makefile" },
  just: { all: true, why: "runs the recipes of a justfile" },
  ninja: { all: true, why: "runs the commands of a build file" },
  rake: { all: true, why: "runs the tasks of a Rakefile" },
  npx: { all: true, why: "runs a package's program" },
  pnpx: { all: true, why: "runs a package's program" },
  bunx: { all: true, why: "runs a package's program" },
  tox: { all: true, why: "runs the commands of its configuration" },
  nox: { all: true, why: "runs the sessions of a noxfile" },
  pytest: { all: true, why: "runs the project's test code" },
  npm: {
    sub: ["exec", "x", "run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart", "install", "i", "ci"],
    why: "runs a package's scripts or programs",
  },
  pnpm: {
    sub: ["exec", "dlx", "run", "test", "t", "start", "stop", "restart", "install", "i"],
    why: "runs a package's scripts or programs",
  },
  yarn: { sub: ["exec", "dlx", "run", "test", "start", "install"], why: "runs a package's scripts or programs" },
  bun: { sub: ["x", "run", "test", "install", "i"], why: "runs a package's scripts or programs" },
  deno: { sub: ["run", "task", "test"], why: "runs the project's code" },
  cargo: {
    sub: ["run", "test", "build", "b", "r", "t", "bench", "check", "c", "install"],
    why: "runs the project's build scripts or programs",
  },
  go: { sub: ["run", "test", "generate"], why: "runs the project's code" },
  uv: { sub: ["run"], why: "runs a program in the project's environment" },
  poetry: { sub: ["run"], why: "runs a program in the project's environment" },
  pipenv: { sub: ["run"], why: "runs a program in the project's environment" },
  bundle: { sub: ["exec"], why: "runs a program in the project's environment" },
  direnv: { sub: ["exec"], why: "runs a program in the environment of a .envrc" },
};

/** Programs that define or redirect what a later name runs (`alias d=rm`, `hash -p /bin/rm d`, `enable -f x.so`). */
const REDEFINES: Readonly<Record<string, (args: readonly Word[]) => boolean>> = {
  alias: (args) => args.some((w) => w.text.includes("=")),
  hash: (args) => args.some((w) => /^-[A-Za-z]*p/.test(w.text)),
  enable: (args) => args.some((w) => /^-[A-Za-z]*f/.test(w.text)),
};

/** Environment variables whose value makes a program run code: a shell's startup file, a preloaded library, options that load modules. */
const CODE_VARIABLES =
  /^(?:BASH_ENV|ENV|PS4|PROMPT_COMMAND|PATH|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|NODE_OPTIONS|PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|GIT_SSH_COMMAND|GIT_SSH|GIT_EXTERNAL_DIFF|GIT_PAGER|GIT_EDITOR|PAGER|EDITOR|VISUAL|SHELL|MAKEFLAGS)$/;

/** Folders whose programs are the system's: `/usr/bin/rm` is `rm`. */
const SYSTEM_BIN = /^\/(?:usr\/(?:local\/)?)?s?bin\/[^/]+$/;

/** The dynamic loader run as a program runs the file it is given. */
const LOADER = /^ld(?:-linux[^/]*|-musl[^/]*)?\.so(?:\.\d+)?$/;

/** Why a program named by its path, or the dynamic loader, is opaque; null when it names a system program. */
export function opaqueProgram(head: Word, name: string): string | null {
  if (LOADER.test(name)) return `${name} loads and runs the program it is given`;
  if (!head.text.includes("/") || SYSTEM_BIN.test(head.text)) return null;
  return `${head.text} is a program or script whose content the line does not show`;
}

/** Why a runner's or a redefining builtin's effect is not in the line; null when it is. */
export function opaqueRunner(name: string, args: readonly Word[]): string | null {
  const runner = RUNNERS[name];
  if (runner) {
    const sub = args.find((w) => !w.text.startsWith("-"))?.text;
    if (runner.all || (sub !== undefined && runner.sub?.includes(sub)))
      return `${name}${runner.all || !sub ? "" : ` ${sub}`} ${runner.why}`;
  }
  if (REDEFINES[name]?.(args)) return `${name} changes what a later command name runs`;
  return null;
}

/** The variables a line sets (as assignments, or as `NAME=value` words of `export`, `env`, `declare`…) that make programs run code. */
export function codeVariables(words: readonly Word[], assigned: readonly string[]): string[] {
  const named = [...assigned, ...words.map((w) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(w.text)?.[1] ?? "")];
  return [...new Set(named.filter((n) => CODE_VARIABLES.test(n)))];
}
