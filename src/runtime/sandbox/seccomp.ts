import { createHash, randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// The sandbox's seccomp filter: a classic-BPF program bwrap loads (`--seccomp FD`) before it
// runs the command. It denies with EPERM the system calls a command has no business making and
// that could undo the sandbox or reach the kernel's soft spots: mounts (old and new API),
// namespaces (unshare, setns, clone with a CLONE_NEW* flag), ptrace and its cousins, keyrings,
// bpf, perf, kernel modules, kexec, file handles, io_uring, and the ioctls that type into a
// terminal. clone3 gets ENOSYS (its flags sit behind a pointer the filter cannot read), so libc
// falls back to clone, whose flags it checks.
//
// The strict variant (every sandboxed command, unless the user's `sandbox.allowUnixSockets`) also
// refuses AF_UNIX sockets: a socket file in a writable or
// readable folder (the workspace, the home) may belong to a listener outside the sandbox, and
// connecting to it is a way out no mount can close. `socket(AF_UNIX, …)` gets EPERM, and so does
// `socketpair(AF_UNIX, SOCK_DGRAM or SOCK_RAW)`: a datagram pair can `sendto` any socket path.
// A stream or seqpacket pair stays allowed (pipes between a program's own processes): it is born
// connected and cannot connect or send elsewhere.
//
// The bridge variant is for what runs before the command in a call with allowed hosts: the proxy
// bridge's shell and socat, which connects to the proxy's socket (AF_UNIX), and the inner bwrap
// that then runs the command in a pid namespace of its own under the strict filter (stacked: the
// stricter answer wins). It leaves AF_UNIX, clone's namespace flags, unshare and the mounts to them.

/** `struct seccomp_data`: nr at 0, arch at 4, args[0] (low 32 bits, little-endian) at 16. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0 = 16;
const OFFSET_ARG1 = 24;
/** `socket(domain, …)`'s domain for unix sockets (AF_UNIX, AF_LOCAL). */
const AF_UNIX = 1;
/** `type & SOCK_TYPE_MASK`: the socket types a unix socket pair may not have (SOCK_RAW is a datagram socket there). */
const SOCK_TYPE_MASK = 0xf;
const SOCK_DGRAM = 2;
const SOCK_RAW = 3;
/** ioctl requests that push input into a terminal (the editor's, when a command shares it). */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_ALU_AND_K = 0x54;
const BPF_RET_K = 0x06;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

export const AUDIT_ARCH_X86_64 = 0xc000003e;
export const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/** x86_64's x32 ABI: the same calls with this bit set in nr. */
const X32_SYSCALL_BIT = 0x40000000;
/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. */
const CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;

/** The denied calls, by name, for each architecture the filter knows. */
const DENIED = [
  "mount",
  "umount2",
  "pivot_root",
  "open_tree",
  "move_mount",
  "fsopen",
  "fsconfig",
  "fsmount",
  "mount_setattr",
  "unshare",
  "setns",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "name_to_handle_at",
  "open_by_handle_at",
  "swapon",
  "swapoff",
  "reboot",
  // io_uring runs system calls in kernel workers, past any filter, and has been a rich seam of bugs.
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
] as const;

type Syscall = (typeof DENIED)[number] | "clone" | "clone3" | "ioctl" | "socket" | "socketpair";

/** The numbers from the kernel's unistd tables (x86_64: unistd_64.h; aarch64: asm-generic/unistd.h). */
export const SYSCALLS: Record<"x86_64" | "aarch64", Record<Syscall, number>> = {
  x86_64: {
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    mount_setattr: 442,
    unshare: 272,
    setns: 308,
    ptrace: 101,
    process_vm_readv: 310,
    process_vm_writev: 311,
    keyctl: 250,
    add_key: 248,
    request_key: 249,
    bpf: 321,
    perf_event_open: 298,
    userfaultfd: 323,
    kexec_load: 246,
    kexec_file_load: 320,
    init_module: 175,
    finit_module: 313,
    delete_module: 176,
    name_to_handle_at: 303,
    open_by_handle_at: 304,
    swapon: 167,
    swapoff: 168,
    reboot: 169,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    clone: 56,
    clone3: 435,
    ioctl: 16,
    socket: 41,
    socketpair: 53,
  },
  aarch64: {
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    mount_setattr: 442,
    unshare: 97,
    setns: 268,
    ptrace: 117,
    process_vm_readv: 270,
    process_vm_writev: 271,
    keyctl: 219,
    add_key: 217,
    request_key: 218,
    bpf: 280,
    perf_event_open: 241,
    userfaultfd: 282,
    kexec_load: 104,
    kexec_file_load: 294,
    init_module: 105,
    finit_module: 273,
    delete_module: 106,
    name_to_handle_at: 264,
    open_by_handle_at: 265,
    swapon: 224,
    swapoff: 225,
    reboot: 142,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    clone: 220,
    clone3: 435,
    ioctl: 29,
    socket: 198,
    socketpair: 199,
  },
};

/** One instruction; a jump names its targets by label, resolved when the program is laid out. */
interface Insn {
  code: number;
  k: number;
  jt?: string;
  jf?: string;
  label?: string;
}

const ld = (offset: number, label?: string): Insn => ({ code: BPF_LD_W_ABS, k: offset, label });
const jump = (code: number, k: number, jt?: string, jf?: string, label?: string): Insn => ({ code, k, jt, jf, label });
const ret = (k: number, label?: string): Insn => ({ code: BPF_RET_K, k, label });

/** What the bridge variant leaves to the inner bwrap it starts: namespaces and mounts (the inner filter denies them again). */
const NESTING: ReadonlySet<Syscall> = new Set(["mount", "umount2", "pivot_root", "unshare"]);

function archBlock(arch: "x86_64" | "aarch64", refuseUnixSockets: boolean, nesting: boolean): Insn[] {
  const nr = SYSCALLS[arch];
  const at = (name: string) => `${arch}:${name}`;
  const deny = at("deny");
  return [
    ld(OFFSET_NR, arch),
    ...(arch === "x86_64" ? [jump(BPF_JGE_K, X32_SYSCALL_BIT, deny)] : []),
    ...DENIED.filter((name) => !(nesting && NESTING.has(name))).map((name) => jump(BPF_JEQ_K, nr[name], deny)),
    jump(BPF_JEQ_K, nr.clone3, at("enosys")),
    jump(BPF_JEQ_K, nr.ioctl, at("ioctl")),
    ...(nesting ? [] : [jump(BPF_JEQ_K, nr.clone, at("clone"))]),
    ...(refuseUnixSockets ? [jump(BPF_JEQ_K, nr.socket, at("socket")), jump(BPF_JEQ_K, nr.socketpair, at("socketpair"))] : []),
    ret(RET_ALLOW),
    ld(OFFSET_ARG1, at("ioctl")),
    jump(BPF_JEQ_K, TIOCSTI, deny),
    jump(BPF_JEQ_K, TIOCLINUX, deny, "allow"),
    ...(nesting ? [] : [ld(OFFSET_ARG0, at("clone")), jump(BPF_JSET_K, CLONE_NEW_FLAGS, deny, "allow")]),
    ...(refuseUnixSockets
      ? [
          ld(OFFSET_ARG0, at("socket")),
          jump(BPF_JEQ_K, AF_UNIX, deny, "allow"),
          ld(OFFSET_ARG0, at("socketpair")),
          jump(BPF_JEQ_K, AF_UNIX, undefined, "allow"),
          ld(OFFSET_ARG1),
          { code: BPF_ALU_AND_K, k: SOCK_TYPE_MASK },
          jump(BPF_JEQ_K, SOCK_DGRAM, deny),
          jump(BPF_JEQ_K, SOCK_RAW, deny, "allow"),
        ]
      : []),
    ret(RET_ERRNO | ENOSYS, at("enosys")),
    ret(RET_ERRNO | EPERM, deny),
  ];
}

/** Which filter: the strict one refuses unix sockets (see the top of the file). */
export interface SeccompVariant {
  /** Leave AF_UNIX sockets alone: the user's `sandbox.allowUnixSockets`. */
  allowUnixSockets?: boolean;
  /**
   * The proxy bridge's own (a call with allowed hosts): AF_UNIX for its socat, and the namespaces
   * and mounts of the inner bwrap that runs the command under the strict filter (`bubblewrap.ts`).
   * Nothing of the command's runs under this one alone.
   */
  bridge?: boolean;
}

/**
 * The filter as bytes: `struct sock_filter` (u16 code, u8 jt, u8 jf, u32 k), little-endian, as
 * the kernel reads it on x86_64 and aarch64. An unknown architecture (i386 or arm32 compat calls
 * on these hosts) kills the process: its numbers mean other calls.
 */
export function seccompProgram(variant: SeccompVariant = {}): Buffer {
  const refuseUnixSockets = !variant.allowUnixSockets && !variant.bridge;
  const nesting = variant.bridge === true;
  const program: Insn[] = [
    ld(OFFSET_ARCH),
    jump(BPF_JEQ_K, AUDIT_ARCH_X86_64, "x86_64"),
    jump(BPF_JEQ_K, AUDIT_ARCH_AARCH64, "aarch64"),
    ret(RET_KILL_PROCESS),
    ...archBlock("x86_64", refuseUnixSockets, nesting),
    ...archBlock("aarch64", refuseUnixSockets, nesting),
    ret(RET_ALLOW, "allow"),
  ];
  const at = new Map<string, number>();
  program.forEach((insn, i) => insn.label && at.set(insn.label, i));
  const offset = (from: number, label: string | undefined): number => {
    if (label === undefined) return 0;
    const target = at.get(label);
    if (target === undefined || target <= from) throw new Error(`seccomp: bad jump to ${label}`);
    const distance = target - from - 1;
    if (distance > 255) throw new Error(`seccomp: jump to ${label} too far`);
    return distance;
  };
  const out = Buffer.alloc(program.length * 8);
  program.forEach((insn, i) => {
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(offset(i, insn.jt), i * 8 + 2);
    out.writeUInt8(offset(i, insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

/** Whether the filter covers this machine (it must, or the sandbox is unavailable). */
export function seccompSupported(arch: string = process.arch): boolean {
  return arch === "x64" || arch === "arm64";
}

/** Each variant's file, once written by this process. */
const written = new Map<string, string>();

/** Why `dir` cannot hold the filter, or undefined: it must be our own folder, not a symlink, closed to others. */
function unsafeFolder(dir: string): string | undefined {
  const s = lstatSync(dir);
  const uid = process.geteuid?.() ?? -1;
  if (s.isSymbolicLink()) return "is a symlink";
  if (!s.isDirectory()) return "is not a folder";
  if (uid >= 0 && s.uid !== uid) return `is owned by uid ${s.uid}, not ${uid}`;
  if ((s.mode & 0o077) !== 0) return `is open to others (mode ${(s.mode & 0o777).toString(8)})`;
  return undefined;
}

/**
 * The filter's file: named by its content's hash in a 0700 folder of this user under the temp dir,
 * shared by every toolhost of the user and never removed, so no process leaves one behind however
 * it ends (SIGKILL included). The folder is checked like the sidecar root (ours, not a symlink, no
 * group or other bits; else an error), and the file is written beside and renamed into place, so
 * it is whole or absent; one already there is read back and must hold these bytes. bwrap reads it
 * from an fd the wrapper opens. Each variant is its own file (its own hash).
 */
export function seccompFilterFile(variant: SeccompVariant = {}): string {
  const key = `${variant.allowUnixSockets === true}:${variant.bridge === true}`;
  const known = written.get(key);
  if (known) return known;
  const program = seccompProgram(variant);
  const uid = process.geteuid?.() ?? "user";
  const dir = path.join(os.tmpdir(), `toolhost-seccomp-${uid}`);
  mkdirSync(dir, { mode: 0o700, recursive: true });
  const problem = unsafeFolder(dir);
  if (problem) throw new Error(`the seccomp filter's folder ${dir} ${problem}: remove it`);
  const file = path.join(dir, `${createHash("sha256").update(program).digest("hex").slice(0, 32)}.bpf`);
  const current = (() => {
    try {
      return lstatSync(file).isFile() ? readFileSync(file) : undefined;
    } catch {
      return undefined;
    }
  })();
  if (!current?.equals(program)) {
    const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(temporary, program, { mode: 0o600, flag: "wx" });
    renameSync(temporary, file);
  }
  written.set(key, file);
  return file;
}
