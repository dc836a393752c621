#!/usr/bin/env node
// `npm run image` (issue 35 §2): builds `localhost/toolhost:<version>` from the Containerfile at
// the repository's root, with podman, or docker when that is what runs here. In order:
//  1. the engine: podman, else docker with a daemon that answers (TOOLHOST_IMAGE_ENGINE picks one);
//  2. the podman settings some hosts need, in a CONTAINERS_CONF file beside the cache (never /etc;
//     `podman run` needs them too, so the script prints the export line): a hard
//     open-files limit below podman's default without CAP_SYS_RESOURCE (`setrlimit … not
//     permitted`), crun on hybrid cgroups (`cgroups in hybrid mode not supported`) → runc;
//  3. the base: --base, else debian:trixie-slim when it is here or a registry answers, else a
//     minimal Debian built with debootstrap from the mirror apt uses (slimmed as debian's -slim
//     images are), cached as a tar per suite and imported as localhost/debian-<suite>-min;
//  4. `npm pack` of the checkout (which builds dist/) into an empty build context;
//  5. the build (host network; npm's registry here, and its CA bundle as a build secret when npm
//     is told to use one, so the image keeps none), then the image's size.
// Usage: node scripts/image.mjs [--base IMAGE] [--tag NAME] [--engine podman|docker] [--no-cache] [--json]
// Progress goes to stderr; the last line on stdout is the image and its size (--json: an object).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SUITE = "trixie";
const DEFAULT_BASE = `debian:${SUITE}-slim`;
/** podman resolves short names through registries.conf; the qualified name needs none. */
const QUALIFIED_BASE = `docker.io/library/${DEFAULT_BASE}`;
/** What debian's -slim images leave out; the Containerfile writes the same file. */
const SLIM_EXCLUDES = [
  "path-exclude /usr/share/doc/*",
  "path-include /usr/share/doc/*/copyright",
  "path-exclude /usr/share/man/*",
  "path-exclude /usr/share/groff/*",
  "path-exclude /usr/share/info/*",
  "path-exclude /usr/share/lintian/*",
  "path-exclude /usr/share/linda/*",
  "path-exclude /usr/share/locale/*",
];

const log = (line) => process.stderr.write(`image: ${line}\n`);
const onPath = (name) => spawnSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" }).status === 0;
const quiet = (cmd, args, env) => spawnSync(cmd, args, { encoding: "utf8", env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });

/** Runs a long step with its output on our stderr; throws with the step's name when it fails. */
function step(name, cmd, args, env) {
  const started = Date.now();
  const result = spawnSync(cmd, args, { env: env ?? process.env, stdio: ["ignore", 2, 2] });
  if (result.status !== 0) throw new Error(`${name} failed (${cmd} ${args.join(" ")}: exit ${result.status ?? result.signal})`);
  const seconds = (Date.now() - started) / 1000;
  log(`${name}: ${seconds.toFixed(1)} s`);
  return seconds;
}

/**
 * The container engine to build and run with, or why there is none: podman when installed, else
 * docker when its daemon answers (a docker CLI alone cannot build).
 */
function detectEngine(requested = process.env.TOOLHOST_IMAGE_ENGINE) {
  const why = [];
  for (const name of requested ? [requested] : ["podman", "docker"]) {
    if (!onPath(name)) {
      why.push(`${name} is not installed`);
      continue;
    }
    const probe = quiet(name, name === "docker" ? ["info", "--format", "{{.ServerVersion}}"] : ["--version"]);
    if (probe.status === 0) return { engine: name };
    why.push(`${name} does not answer (${(probe.stderr.trim().split("\n").pop() ?? "").slice(0, 200)})`);
  }
  return { engine: undefined, why: why.join("; ") };
}

/** The effective capabilities of this process include CAP_SYS_RESOURCE (bit 24). */
function hasSysResource() {
  const hex = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  return hex !== undefined && (BigInt(`0x${hex}`) & (1n << 24n)) !== 0n;
}

/** cgroup v1 controllers and a cgroup2 mount side by side: what crun refuses. */
function hybridCgroups() {
  const mounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n");
  const types = new Set(mounts.map((line) => line.split(" - ")[1]?.split(" ")[0]));
  return types.has("cgroup") && types.has("cgroup2");
}

/**
 * The containers.conf lines podman needs on this host, or none: the limits as root without
 * CAP_SYS_RESOURCE (podman asks for more open files than the hard limit allows; nproc above 32768
 * failed on these VMs even below the hard limit), and runc when crun meets hybrid cgroups.
 */
function podmanSettings() {
  const lines = [];
  if (process.getuid?.() === 0 && !hasSysResource()) {
    const limits = readFileSync("/proc/self/limits", "utf8");
    const hard = (name) => new RegExp(`^${name}\\s+\\S+\\s+(\\S+)`, "m").exec(limits)?.[1] ?? "unlimited";
    const [nofile, nproc] = [hard("Max open files"), hard("Max processes")];
    const limit = (value, cap) => (value === "unlimited" ? cap : Math.min(Number(value), cap));
    lines.push(
      "[containers]",
      `default_ulimits = ["nofile=${limit(nofile, 1048576)}:${limit(nofile, 1048576)}", "nproc=${limit(nproc, 32768)}:${limit(nproc, 32768)}"]`,
    );
  }
  const runtime = quiet("podman", ["info", "--format", "{{.Host.OCIRuntime.Name}}"]).stdout.trim();
  if (runtime === "crun" && hybridCgroups() && onPath("runc")) lines.push("[engine]", 'runtime = "runc"');
  return lines;
}

/**
 * The environment to run the engine with: for podman, CONTAINERS_CONF pointing at a file of the
 * settings this host needs (unless the caller set one). The file is kept beside the cached base:
 * `podman run` of the image needs the same settings here.
 */
function engineEnvironment(engine) {
  if (engine !== "podman" || process.env.CONTAINERS_CONF) return process.env;
  const lines = podmanSettings();
  if (lines.length === 0) return process.env;
  mkdirSync(cacheDir(), { recursive: true });
  const file = path.join(cacheDir(), "containers.conf");
  writeFileSync(file, `# written by scripts/image.mjs: what podman needs on this host\n${lines.join("\n")}\n`);
  return { ...process.env, CONTAINERS_CONF: file };
}

const imageExists = (engine, name, env) =>
  engine === "podman"
    ? quiet("podman", ["image", "exists", name], env).status === 0
    : quiet("docker", ["image", "inspect", name], env).status === 0;

/** Whether Docker Hub answers at all (any HTTP status): no DNS or no route here means no. */
async function registryReachable() {
  try {
    await fetch("https://registry-1.docker.io/v2/", { method: "HEAD", signal: AbortSignal.timeout(5000) });
    return true;
  } catch {
    return false;
  }
}

/** The Debian mirror apt uses here (deb822 or one-line sources), for the main archive and security. */
function debianMirrors() {
  const dir = "/etc/apt/sources.list.d";
  const files = ["/etc/apt/sources.list", ...(existsSync(dir) ? readdirSync(dir).map((f) => path.join(dir, f)) : [])];
  const uris = files
    .filter((f) => existsSync(f))
    .flatMap((f) => [...readFileSync(f, "utf8").matchAll(/^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)/gm)].map((m) => m[1]));
  const main = process.env.TOOLHOST_IMAGE_MIRROR ?? uris.find((u) => /\/debian\/?$/.test(u)) ?? "http://deb.debian.org/debian";
  const security = uris.find((u) => /debian-security\/?$/.test(u)) ?? "http://deb.debian.org/debian-security";
  return { main: main.replace(/\/$/, ""), security: security.replace(/\/$/, "") };
}

/** Where the debootstrapped base is kept between runs: TOOLHOST_IMAGE_CACHE, else /var/cache as root, else XDG's. */
function cacheDir() {
  if (process.env.TOOLHOST_IMAGE_CACHE) return process.env.TOOLHOST_IMAGE_CACHE;
  if (process.getuid?.() === 0) return "/var/cache/toolhost-image";
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "toolhost-image");
}

/**
 * A minimal Debian `suite` as a tar (cached): debootstrap's minbase, then slimmed as the -slim
 * images are (no docs, man pages, locales, apt lists or downloaded packages), with apt sources for
 * the suite, its updates and security.
 */
function debootstrapTar(suite) {
  const dir = cacheDir();
  const tar = path.join(dir, `debian-${suite}-minbase.tar`);
  if (existsSync(tar)) {
    log(`base: cached ${tar}`);
    return tar;
  }
  if (process.getuid?.() !== 0 || !onPath("debootstrap"))
    throw new Error(`no registry answers and a local base needs debootstrap as root (apt-get install debootstrap); or pass --base IMAGE`);
  mkdirSync(dir, { recursive: true });
  const rootfs = mkdtempSync(path.join(dir, `rootfs-${suite}-`));
  try {
    const mirrors = debianMirrors();
    step(`debootstrap ${suite}`, "debootstrap", ["--variant=minbase", suite, rootfs, mirrors.main]);
    // Emptied as the -slim images are: downloaded packages, apt's lists and caches, man pages,
    // locales, and every doc but the copyright files.
    for (const sub of ["var/cache/apt", "var/lib/apt/lists", "usr/share/man", "usr/share/info", "usr/share/locale"]) {
      rmSync(path.join(rootfs, sub), { recursive: true, force: true });
      mkdirSync(path.join(rootfs, sub), { recursive: true });
    }
    mkdirSync(path.join(rootfs, "var/cache/apt/archives/partial"), { recursive: true });
    mkdirSync(path.join(rootfs, "var/lib/apt/lists/partial"), { recursive: true });
    const docs = path.join(rootfs, "usr/share/doc");
    for (const pkg of readdirSync(docs))
      for (const entry of readdirSync(path.join(docs, pkg)))
        if (entry !== "copyright") rmSync(path.join(docs, pkg, entry), { recursive: true, force: true });
    writeFileSync(path.join(rootfs, "etc/dpkg/dpkg.cfg.d/slim"), `${SLIM_EXCLUDES.join("\n")}\n`);
    writeFileSync(
      path.join(rootfs, "etc/apt/sources.list"),
      `deb ${mirrors.main} ${suite} main\ndeb ${mirrors.main} ${suite}-updates main\ndeb ${mirrors.security} ${suite}-security main\n`,
    );
    step("tar the base", "tar", ["-C", rootfs, "--numeric-owner", "-cf", `${tar}.part`, "."]);
    renameSync(`${tar}.part`, tar);
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
    rmSync(`${tar}.part`, { force: true });
  }
  return tar;
}

/** The base image: the caller's, debian:trixie-slim when it can be had, else the local debootstrapped one. */
async function chooseBase(engine, env, requested) {
  if (requested) return requested;
  const defaultName = engine === "podman" ? QUALIFIED_BASE : DEFAULT_BASE;
  if (imageExists(engine, defaultName, env)) return defaultName;
  if (await registryReachable()) return defaultName;
  const local = `localhost/debian-${SUITE}-min`;
  if (imageExists(engine, local, env)) {
    log(`base: ${local} (no registry answers; built before)`);
    return local;
  }
  log(`base: no registry answers, building ${local} with debootstrap`);
  step(`import ${local}`, engine, ["import", debootstrapTar(SUITE), local], env);
  return local;
}

/** The CA bundle npm is told to trust here, if any: the build's npm install gets it as a secret. */
function npmCaFile() {
  const configured = quiet("npm", ["config", "get", "cafile"]).stdout.trim();
  const file = process.env.NODE_EXTRA_CA_CERTS || (configured && configured !== "null" && configured !== "undefined" ? configured : "");
  return file && existsSync(file) ? file : undefined;
}

/** Builds the image; returns what was built. */
async function buildImage({ base, tag, engine: requested, noCache = false } = {}) {
  const started = Date.now();
  const { engine, why } = detectEngine(requested);
  if (!engine) throw new Error(`no container engine: ${why}`);
  const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const image = tag ?? `localhost/toolhost:${pkg.version}`;
  const work = mkdtempSync(path.join(os.tmpdir(), "toolhost-image-"));
  try {
    const env = engineEnvironment(engine);
    const containersConf = env === process.env ? undefined : env.CONTAINERS_CONF;
    if (containersConf) log(`podman needs settings on this host: export CONTAINERS_CONF=${containersConf} (for podman run too)`);
    const chosen = await chooseBase(engine, env, base);
    const context = path.join(work, "context");
    mkdirSync(context);
    step("npm pack", "npm", ["pack", "--silent", "--pack-destination", context], { ...process.env, npm_config_loglevel: "warn" });
    const ca = npmCaFile();
    const registry = quiet("npm", ["config", "get", "registry"]).stdout.trim().replace(/\/$/, "");
    const args = ["build", "--network", "host", "--build-arg", `BASE=${chosen}`, "-f", path.join(ROOT, "Containerfile"), "-t", image];
    if (ca) args.push("--secret", `id=npm-ca,src=${ca}`);
    if (/^https?:\/\//.test(registry)) args.push("--build-arg", `NPM_REGISTRY=${registry}`);
    if (noCache) args.push("--no-cache");
    const buildSeconds = step(`${engine} build ${image}`, engine, [...args, context], env);
    const size = Number(execFileSync(engine, ["image", "inspect", "--format", "{{.Size}}", image], { env, encoding: "utf8" }).trim());
    return {
      image,
      engine,
      base: chosen,
      ...(containersConf ? { containersConf } : {}),
      sizeBytes: size,
      buildSeconds,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values } = parseArgs({
    options: {
      base: { type: "string" },
      tag: { type: "string" },
      engine: { type: "string" },
      "no-cache": { type: "boolean" },
      json: { type: "boolean" },
    },
  });
  try {
    const built = await buildImage({ base: values.base, tag: values.tag, engine: values.engine, noCache: values["no-cache"] });
    const mb = (built.sizeBytes / 1e6).toFixed(0);
    process.stdout.write(
      values.json
        ? `${JSON.stringify(built)}\n`
        : `${built.image}: ${mb} MB (${built.engine}, base ${built.base}), built in ${built.seconds.toFixed(0)} s\n`,
    );
  } catch (err) {
    process.stderr.write(`image: ${err.message}\n`);
    process.exit(1);
  }
}
