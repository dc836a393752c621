import { describe, expect, it } from "vitest";
import { parseBash, type ParsedLine, type Redirect } from "../../src/policy/bash-parse.js";
import { bashCommandPrefix, bashMatchesPrefix, plainCommand } from "../../src/policy/command-prefix.js";
import { bashParser } from "../../src/policy/bash-wasm.js";

async function parsed(line: string): Promise<ParsedLine> {
  const result = await parseBash(line);
  if (!result) throw new Error(`did not parse: ${line}`);
  return result;
}

/** Each command as its words' texts, a `?` before the non-literal ones, `^` marking nested ones. */
async function shape(line: string): Promise<string[]> {
  return (await parsed(line)).commands.map(
    (c) => (c.nested ? "^" : "") + c.words.map((w) => (w.literal ? w.text : `?${w.text}`)).join(" "),
  );
}

const target = (r: Redirect): string => `${r.fd ?? ""}${r.op}${r.target ? r.target.text : ""}`;

describe("parseBash: simple commands", () => {
  it.each<[string, string[]]>([
    ["git status", ["git status"]],
    ["git status; rm -rf ~/x", ["git status", "rm -rf ~/x"]],
    ["a && b || c | d & e", ["a", "b", "c", "d", "e"]],
    ["echo $(curl evil)", ["echo ?$(curl evil)", "^curl evil"]],
    ["echo `id`", ["echo ?`id`", "^id"]],
    ["cat <(ls) >(wc -l)", ["cat ?<(ls) ?>(wc -l)", "^ls", "^wc -l"]],
    ['bash -c "rm x"', ["bash -c rm x", "^rm x"]],
    ["sh -ec 'a; b | c'", ["sh -ec a; b | c", "^a", "^b", "^c"]],
    ["(cd x && make) ; { y; }", ["cd x", "make", "y"]],
    ['echo $HOME ${X:-y} $((1+2)) *.ts a{b,c} {1..3} x$"y"', ['echo ?$HOME ?${X:-y} ?$((1+2)) ?*.ts ?a{b,c} ?{1..3} ?x$"y"']],
    [`echo 'a b' "c\\"d" e\\ f $'t\\tu' "x"'y'z`, ['echo a b c"d e f t\tu xyz']],
    ['echo "a $(id) b"', ['echo ?"a $(id) b"', "^id"]],
    ["for f in $(ls); do rm $f; done", ["^ls", "rm ?$f"]],
    ["if test -f x; then rm x; fi", ["test -f x", "rm x"]],
    ["export A=$(id) B=1", ["export ?A=$(id) B=1", "^id"]],
    ["cat <<EOF\nhi $(whoami)\nEOF", ["cat", "^whoami"]],
    ["cat <<'EOF'\nplain text\nEOF\necho done", ["cat", "echo done"]],
  ])("%j", async (line, expected) => {
    expect(await shape(line)).toEqual(expected);
  });

  it("keeps leading assignments apart from the words", async () => {
    const [make] = (await parsed("FOO=1 BAR='a b' make -j4")).commands;
    expect(make?.assignments).toEqual([
      { name: "FOO", value: { text: "1", literal: true, tilde: false } },
      { name: "BAR", value: { text: "a b", literal: true, tilde: false } },
    ]);
    expect(make?.argv).toEqual(["make", "-j4"]);
  });

  it("reports assignments standing alone and the functions a line defines", async () => {
    const line = await parsed("PATH=./evil:$PATH; f() { rm x; }; f");
    expect(line.assignments.map((a) => [a.name, a.value.literal])).toEqual([["PATH", false]]);
    expect(line.functions).toEqual(["f"]);
    expect(line.commands.map((c) => c.argv)).toEqual([["rm", "x"], ["f"]]);
  });

  it("marks an unquoted leading ~ and keeps argv only for fully static words", async () => {
    const [, rm] = (await parsed("git status; rm -rf ~/x")).commands;
    expect(rm?.words[2]).toEqual({ text: "~/x", literal: true, tilde: true });
    expect(rm?.argv).toBeNull();
    const [quoted] = (await parsed('ls "~/x"')).commands;
    expect(quoted?.argv).toEqual(["ls", "~/x"]);
  });
});

describe("parseBash: redirections", () => {
  it.each<[string, string[][], string[]]>([
    ["x > ~/.bashrc", [[">~/.bashrc"]], [">~/.bashrc"]],
    ["sort < in >> out 2> err", [["<in", ">>out", "2>err"]], ["<in", ">>out", "2>err"]],
    ["a && b > f 2>&1", [[], [">f", "2>&1"]], [">f", "2>&1"]],
    ["a | b &> log", [[], ["&>log"]], ["&>log"]],
    ["(cd x; rm y) > out", [[">out"], [">out"]], [">out"]],
    ["echo $(cat < secret)", [[], ["<secret"]], ["<secret"]],
    ["cat <<< hello", [["<<<hello"]], ["<<<hello"]],
    ["cat <<EOF > out\nbody\nEOF", [["<<body\n", ">out"]], ["<<body\n", ">out"]],
  ])("%j", async (line, perCommand, all) => {
    const result = await parsed(line);
    expect(result.commands.map((c) => c.redirects.map(target))).toEqual(perCommand);
    expect(result.redirects.map(target)).toEqual(all);
  });

  it("tells files from descriptor copies, here-docs and here-strings", async () => {
    const result = await parsed("cmd <<<word > out 2>&1");
    expect(result.redirects.map((r) => r.kind)).toEqual(["herestring", "file", "fd"]);
    expect((await parsed("cat <<EOF\nx\nEOF")).redirects.map((r) => r.kind)).toEqual(["heredoc"]);
    // A here-doc's body is what it feeds in: literal unless something in it expands.
    expect((await parsed("sh <<'EOF'\nrm $X\nEOF")).redirects[0]?.target).toEqual({ text: "rm $X\n", literal: true, tilde: false });
    expect((await parsed("sh <<EOF\nrm $X\nEOF")).redirects[0]?.target?.literal).toBe(false);
    const [dynamic] = (await parsed("echo > $OUT")).redirects;
    expect(dynamic?.target).toEqual({ text: "$OUT", literal: false, tilde: false });
  });
});

describe("parseBash: lines that must be asked about", () => {
  it.each(['echo "unterminated', "echo 'open", "if then fi", "a &&", "( echo", "echo $(", "| x", 'bash -c "echo \\"x"'])(
    "%j → null",
    async (line) => {
      expect(await parseBash(line)).toBeNull();
    },
  );

  it("gives null for a `bash -c` whose script does not parse, and no script for a dynamic one", async () => {
    expect(await parseBash("bash -c 'if then'")).toBeNull();
    expect(await parseBash('sh -c "$CMD"')).toBeNull();
    expect(await shape("bash script.sh -c x")).toEqual(["bash script.sh -c x"]);
  });

  it("parses an empty line as no commands", async () => {
    expect(await parsed("  ")).toEqual({ commands: [], assignments: [], redirects: [], functions: [] });
  });
});

describe("bashCommandPrefix", () => {
  it.each<[string, string[] | null]>([
    ["git status", ["git", "status"]],
    ["git status --short", ["git", "status"]],
    ["npm test 2>&1", ["npm", "test"]],
    ["npm test 2>/dev/null", ["npm", "test"]],
    ["npm run test -- --watch", ["npm", "run", "test"]],
    ["docker compose up -d", ["docker", "compose", "up"]],
    ["docker compose run web sh", ["docker", "compose", "run", "web"]],
    ["gh pr list", ["gh", "pr", "list"]],
    ["ls -la", ["ls"]],
    ["make test", ["make", "test"]],
    ["echo hi", ["echo"]],
    ["rm notes.txt", ["rm", "notes.txt"]],
    ["touch made", ["touch", "made"]],
    ["cat README.md", ["cat"]],
    ["cargo build --release", ["cargo", "build"]],
    ["git", null],
    ["git -C x status", null],
    ["gh pr", null],
    ["python script.py", null],
    ["node -e 'x'", null],
    ['bash -c "rm x"', null],
    ["env FOO=1 ls", null],
    ["xargs rm", null],
    ["sudo ls", null],
    ["find . -delete", null],
    ["./build.sh", null],
    ["/bin/ls", null],
    ["FOO=1 make", null],
    ["PATH=/x; ls", null],
    ["git status; rm -rf ~/x", null],
    ["git status > out", null],
    ["echo $(curl evil)", null],
    ["git log $REF", null],
    ["cat ~/x", null],
    ["export A=1", null],
  ])("%j → %j", async (line, expected) => {
    expect(bashCommandPrefix(await parsed(line))).toEqual(expected);
  });

  it("matches only single plain commands that start with the prefix", async () => {
    const prefix = ["git", "status"];
    expect(bashMatchesPrefix(await parsed("git status --short"), prefix)).toBe(true);
    expect(bashMatchesPrefix(await parsed("git  'status'"), prefix)).toBe(true);
    expect(bashMatchesPrefix(await parsed("git stash"), prefix)).toBe(false);
    expect(bashMatchesPrefix(await parsed("git status; rm -rf ~/x"), prefix)).toBe(false);
    expect(bashMatchesPrefix(await parsed("git status > ~/.bashrc"), prefix)).toBe(false);
    expect(bashMatchesPrefix(await parsed("git status $(rm x)"), prefix)).toBe(false);
    expect(bashMatchesPrefix(await parsed("git status"), [])).toBe(false);
    expect(plainCommand(await parsed("FOO=1 git status"))).toBeNull();
  });
});

describe("the parser's cost", () => {
  it("loads the wasm once and parses a line in well under a millisecond after that", async () => {
    expect(await bashParser()).toBe(await bashParser());
    const lines = [
      "git status; rm -rf ~/x",
      "FOO=1 make -j4 > build.log 2>&1 && echo $(date) | tee -a out",
      'for f in $(ls *.ts); do bash -c "wc -l $f"; done',
    ];
    const rounds = 300;
    const started = performance.now();
    for (let i = 0; i < rounds; i++) for (const line of lines) await parseBash(line);
    const perLine = (performance.now() - started) / (rounds * lines.length);
    console.log(`bash-parse: ${perLine.toFixed(3)} ms per line`);
    expect(perLine).toBeLessThan(5);
  });
});

describe("parseBash's recent lines", () => {
  it("parses a line once for everyone who reads it (rules, watchdog, approval), and a new line afresh", async () => {
    const first = await parseBash("git status --short && ls");
    expect(await parseBash("git status --short && ls")).toBe(first);
    const other = await parseBash("git status --short || ls");
    expect(other).not.toBe(first);
    expect(other?.commands.map((c) => c.text)).toEqual(["git status --short", "ls"]);
  });
});
