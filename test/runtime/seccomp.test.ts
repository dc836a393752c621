import { describe, expect, it } from "vitest";
import { AUDIT_ARCH_AARCH64, AUDIT_ARCH_X86_64, SYSCALLS, seccompProgram } from "../../src/runtime/sandbox/seccomp.js";

// The filter as the kernel runs it: a small classic-BPF interpreter over the bytes bwrap loads.
// The real filter in a real sandbox is tested in sandbox-isolation.test.ts.

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const KILL = 0x80000000;

function run(program: Buffer, data: { arch: number; nr: number; arg0?: number; arg1?: number }): number {
  const word = (offset: number) => {
    if (offset === 0) return data.nr >>> 0;
    if (offset === 4) return data.arch >>> 0;
    if (offset === 16) return (data.arg0 ?? 0) >>> 0;
    if (offset === 24) return (data.arg1 ?? 0) >>> 0;
    throw new Error(`unexpected load at ${offset}`);
  };
  let acc = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = word(k);
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x45) pc += (acc & k) !== 0 ? jt : jf;
    else if (code === 0x54) acc = (acc & k) >>> 0;
    else throw new Error(`unknown opcode ${code.toString(16)}`);
  }
  throw new Error("fell off the end");
}

const program = seccompProgram();
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNS = 0x00020000;
/** What glibc's pthread_create passes. */
const THREAD_FLAGS = 0x003d0f00;

describe("the seccomp filter", () => {
  it("denies mounts, namespaces, ptrace, keyrings, bpf, perf, modules, kexec and file handles on x86_64 and aarch64", () => {
    for (const [arch, audit] of [
      ["x86_64", AUDIT_ARCH_X86_64],
      ["aarch64", AUDIT_ARCH_AARCH64],
    ] as const) {
      const nr = SYSCALLS[arch];
      for (const name of [
        "mount",
        "umount2",
        "ptrace",
        "keyctl",
        "add_key",
        "request_key",
        "bpf",
        "perf_event_open",
        "unshare",
        "setns",
        "pivot_root",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "open_by_handle_at",
        "fsopen",
        "move_mount",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
      ] as const) {
        expect(run(program, { arch: audit, nr: nr[name] }), `${arch} ${name}`).toBe(EPERM);
      }
      expect(run(program, { arch: audit, nr: nr.clone, arg0: THREAD_FLAGS }), `${arch} thread`).toBe(ALLOW);
      expect(run(program, { arch: audit, nr: nr.clone, arg0: 17 /* SIGCHLD: fork */ })).toBe(ALLOW);
      expect(run(program, { arch: audit, nr: nr.clone, arg0: 17 | CLONE_NEWUSER })).toBe(EPERM);
      expect(run(program, { arch: audit, nr: nr.clone, arg0: 17 | CLONE_NEWNS })).toBe(EPERM);
      // Typing into a terminal is denied; every other ioctl (TCGETS, FIONREAD) is not.
      expect(run(program, { arch: audit, nr: nr.ioctl, arg0: 1, arg1: 0x5412 })).toBe(EPERM);
      expect(run(program, { arch: audit, nr: nr.ioctl, arg0: 1, arg1: 0x541c })).toBe(EPERM);
      expect(run(program, { arch: audit, nr: nr.ioctl, arg0: 1, arg1: 0x5401 })).toBe(ALLOW);
      expect(run(program, { arch: audit, nr: nr.ioctl, arg0: 1, arg1: 0x541b })).toBe(ALLOW);
      // clone3's flags are behind a pointer: ENOSYS makes libc fall back to clone.
      expect(run(program, { arch: audit, nr: nr.clone3 })).toBe(ENOSYS);
    }
    // Ordinary calls: read, write, openat, execve.
    for (const nr of [0, 1, 257, 59]) expect(run(program, { arch: AUDIT_ARCH_X86_64, nr })).toBe(ALLOW);
    for (const nr of [63, 64, 56, 221]) expect(run(program, { arch: AUDIT_ARCH_AARCH64, nr })).toBe(ALLOW);
    // aarch64's numbers are not x86_64's: 40 is mount there, sendfile on x86_64.
    expect(run(program, { arch: AUDIT_ARCH_X86_64, nr: 40 })).toBe(ALLOW);
    expect(run(program, { arch: AUDIT_ARCH_AARCH64, nr: 40 })).toBe(EPERM);
  });

  it("the strict filter refuses AF_UNIX sockets and datagram unix pairs on x86_64 and aarch64; the permissive one does not", () => {
    const permissive = seccompProgram({ allowUnixSockets: true });
    const AF_UNIX = 1;
    const AF_INET = 2;
    const AF_INET6 = 10;
    const AF_NETLINK = 16;
    const SOCK_CLOEXEC = 0x80000;
    const SOCK_NONBLOCK = 0x800;
    for (const [arch, audit] of [
      ["x86_64", AUDIT_ARCH_X86_64],
      ["aarch64", AUDIT_ARCH_AARCH64],
    ] as const) {
      const { socket, socketpair } = SYSCALLS[arch];
      for (const type of [1, 2, 5, 1 | SOCK_CLOEXEC, 2 | SOCK_NONBLOCK | SOCK_CLOEXEC]) {
        expect(run(program, { arch: audit, nr: socket, arg0: AF_UNIX, arg1: type }), `${arch} socket AF_UNIX ${type}`).toBe(EPERM);
        expect(run(permissive, { arch: audit, nr: socket, arg0: AF_UNIX, arg1: type }), `${arch} permissive ${type}`).toBe(ALLOW);
      }
      // Only the low 32 bits of the domain are the int the kernel reads.
      expect(run(program, { arch: audit, nr: socket, arg0: AF_UNIX + 2 ** 32, arg1: 1 })).toBe(EPERM);
      for (const domain of [AF_INET, AF_INET6, AF_NETLINK, 0]) {
        expect(run(program, { arch: audit, nr: socket, arg0: domain, arg1: 1 }), `${arch} socket ${domain}`).toBe(ALLOW);
      }
      // A stream or seqpacket pair is born connected and cannot reach anything else; a datagram pair can sendto any path.
      for (const type of [1, 5, 1 | SOCK_CLOEXEC, 5 | SOCK_NONBLOCK]) {
        expect(run(program, { arch: audit, nr: socketpair, arg0: AF_UNIX, arg1: type }), `${arch} socketpair ${type}`).toBe(ALLOW);
      }
      for (const type of [2, 3, 2 | SOCK_CLOEXEC, 3 | SOCK_NONBLOCK | SOCK_CLOEXEC]) {
        expect(run(program, { arch: audit, nr: socketpair, arg0: AF_UNIX, arg1: type }), `${arch} socketpair ${type}`).toBe(EPERM);
        expect(run(permissive, { arch: audit, nr: socketpair, arg0: AF_UNIX, arg1: type })).toBe(ALLOW);
      }
      // The rest of the filter is the same in both.
      expect(run(permissive, { arch: audit, nr: SYSCALLS[arch].mount })).toBe(EPERM);
      expect(run(permissive, { arch: audit, nr: SYSCALLS[arch].ioctl, arg1: 0x5412 })).toBe(EPERM);
      expect(run(permissive, { arch: audit, nr: SYSCALLS[arch].clone, arg0: 17 | CLONE_NEWUSER })).toBe(EPERM);
    }
    // The numbers are per architecture: aarch64's socket (198) is lremovexattr on x86_64.
    expect(run(program, { arch: AUDIT_ARCH_X86_64, nr: 198, arg0: AF_UNIX })).toBe(ALLOW);
  });

  it("the bridge filter (a proxy bridge's shell, socat and inner bwrap) leaves unix sockets, namespaces and mounts, and nothing else", () => {
    const bridge = seccompProgram({ bridge: true });
    for (const [arch, audit] of [
      ["x86_64", AUDIT_ARCH_X86_64],
      ["aarch64", AUDIT_ARCH_AARCH64],
    ] as const) {
      const nr = SYSCALLS[arch];
      expect(run(bridge, { arch: audit, nr: nr.socket, arg0: 1, arg1: 1 })).toBe(ALLOW);
      expect(run(bridge, { arch: audit, nr: nr.clone, arg0: 17 | CLONE_NEWUSER })).toBe(ALLOW);
      for (const name of ["mount", "umount2", "pivot_root", "unshare"] as const)
        expect(run(bridge, { arch: audit, nr: nr[name] }), name).toBe(ALLOW);
      for (const name of ["setns", "ptrace", "bpf", "keyctl", "open_tree", "move_mount", "io_uring_setup", "process_vm_writev"] as const) {
        expect(run(bridge, { arch: audit, nr: nr[name] }), name).toBe(EPERM);
      }
      expect(run(bridge, { arch: audit, nr: nr.ioctl, arg1: 0x5412 })).toBe(EPERM);
      // The strict filter, which the inner bwrap loads for the command, refuses all of those again.
      expect(run(program, { arch: audit, nr: nr.socket, arg0: 1, arg1: 1 })).toBe(EPERM);
      expect(run(program, { arch: audit, nr: nr.clone, arg0: 17 | CLONE_NEWUSER })).toBe(EPERM);
      expect(run(program, { arch: audit, nr: nr.unshare })).toBe(EPERM);
    }
  });

  it("denies the x32 range on x86_64 and kills any other architecture (i386, arm32 compat calls)", () => {
    expect(run(program, { arch: AUDIT_ARCH_X86_64, nr: 0x40000000 | 165 })).toBe(EPERM);
    expect(run(program, { arch: AUDIT_ARCH_X86_64, nr: 0x40000000 })).toBe(EPERM);
    expect(run(program, { arch: 0x40000003 /* i386 */, nr: 3 })).toBe(KILL);
    expect(run(program, { arch: 0x40000028 /* arm */, nr: 3 })).toBe(KILL);
  });

  it.each([
    ["strict", program],
    ["permissive", seccompProgram({ allowUnixSockets: true })],
    ["bridge", seccompProgram({ bridge: true })],
  ])("the %s filter is well formed: whole instructions, every jump forward and inside the program", (_, bytes) => {
    expect(bytes.length % 8).toBe(0);
    const count = bytes.length / 8;
    for (let pc = 0; pc < count; pc++) {
      const code = bytes.readUInt16LE(pc * 8);
      if ((code & 0x07) === 0x05) {
        expect(pc + 1 + bytes.readUInt8(pc * 8 + 2)).toBeLessThan(count);
        expect(pc + 1 + bytes.readUInt8(pc * 8 + 3)).toBeLessThan(count);
      }
    }
    expect(bytes.readUInt16LE((count - 1) * 8)).toBe(0x06);
  });
});
