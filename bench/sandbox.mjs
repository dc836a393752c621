// Issue 11 §5: what the bubblewrap sandbox costs a shell call. `true` and printing 500 MB, each
// through the real RuntimeSession + LocalShell, sandboxed and not, interleaved; and `true` in a
// sandbox whose call has allowed hosts (the network proxy and socat set up) against one without.
// Run after `npm run build`: node bench/sandbox.mjs (BENCH_ROUNDS, default 15 / 5).
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, interleave, median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = (p) => path.join(root, "dist", p);
const { RuntimeSession } = await import(dist("runtime/session.js"));
const { createToolContext } = await import(dist("runtime/context.js"));
const { bubblewrapSandbox, sandboxAvailable } = await import(dist("runtime/sandbox/bubblewrap.js"));
const { sandboxNetworkStatus } = await import(dist("runtime/sandbox/proxy.js"));

const status = await sandboxAvailable();
if (!status.available) {
  console.log(`sandbox bench skipped: ${status.reason}`);
  process.exit(0);
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const workspace = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-sandbox-")));
const requires = { shell: [{ cmd: "bash" }, { cmd: "true" }], fs: { read: ["{workspace}/**"] } };

function shellFor(spawnTransform) {
  const session = new RuntimeSession({ workspace, ...(spawnTransform ? { spawnTransform } : {}) });
  const shell = createToolContext({ session, toolId: "bench", callId: "c", requires, signal: new AbortController().signal }).shell;
  return { session, shell };
}

const plain = shellFor(undefined);
const boxed = shellFor(bubblewrapSandbox());
const network = sandboxNetworkStatus();
// Nothing is fetched: the line measures what setting the proxy up costs each call.
const proxied = network.available ? shellFor(bubblewrapSandbox({ allowedHosts: () => ["*.github.com"] })) : undefined;

function report(name, plainRuns, boxedRuns) {
  const p = median(plainRuns);
  const b = median(boxedRuns);
  console.log(`${name}: plain ${fmt(p)} ms, sandboxed ${fmt(b)} ms, +${fmt(b - p)} ms, ratio ${fmt(b / p, 2)}`);
}

try {
  // Warm-up: execa's import, the sidecar folder, the page cache for bwrap.
  await plain.shell.exec("true", []);
  await boxed.shell.exec("true", []);

  const trueRuns = await interleave(
    ROUNDS,
    () => timed(() => plain.shell.exec("true", [])),
    () => timed(() => boxed.shell.exec("true", [])),
  );
  report("exec true", trueRuns.a, trueRuns.b);

  if (proxied) {
    await proxied.shell.exec("true", []);
    const proxyRuns = await interleave(
      ROUNDS,
      () => timed(() => boxed.shell.exec("true", [])),
      () => timed(() => proxied.shell.exec("true", [])),
    );
    const b = median(proxyRuns.a);
    const p = median(proxyRuns.b);
    console.log(`exec true, hosts allowed: sandboxed ${fmt(b)} ms, with the proxy ${fmt(p)} ms, +${fmt(p - b)} ms, ratio ${fmt(p / b, 2)}`);
  } else {
    console.log(`exec true, hosts allowed: skipped, ${network.reason}`);
  }

  const BYTES = 500_000_000;
  const cmd = `yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c ${BYTES}`;
  const bigRuns = await interleave(
    Math.min(ROUNDS, 5),
    () => timed(() => plain.shell.run(cmd)),
    () => timed(() => boxed.shell.run(cmd)),
  );
  report("bash printing 500 MB", bigRuns.a, bigRuns.b);
} finally {
  await plain.session.close();
  await boxed.session.close();
  await proxied?.session.close();
  await fsp.rm(workspace, { recursive: true, force: true });
}
