/**
 * A seccomp filter (classic BPF, handed to bwrap's `--seccomp FD`) that makes setting a set-user-ID
 * or set-group-ID bit fail with EPERM: chmod/fchmod/fchmodat/fchmodat2 with a mode that has
 * 06000, open/openat/creat creating a file with such a mode, mknod/mknodat likewise. When the
 * agent runs as root the sandbox user is host uid 0, so a `chmod 4755` inside would leave a
 * setuid-root program in the workspace on the host; with this filter no such bit is ever set
 * (the kernel clears them on write and chown, so no later step restores one). `openat2` (whose
 * mode sits behind a pointer) answers ENOSYS, so callers fall back to `openat`; so do syscalls of
 * another ABI (x32, i386 through `int 0x80`). Built by hand: a dozen instructions, no dependency.
 */

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_EPERM = 0x00050001;
const RET_ENOSYS = 0x00050026;
const SETID_BITS = 0o6000;
/** O_CREAT | __O_TMPFILE (same values on x86_64 and aarch64). */
const CREATING = 0o100 | 0o20000000;
const ARG = (i: number) => 16 + 8 * i; // low 32 bits of args[i] (little-endian)

/** Per architecture: its audit id and the numbers of the calls to check, by which argument holds the mode. */
interface Arch {
  audit: number;
  /** Calls whose mode is argument 1 or 2. */
  modeArg1: number[];
  modeArg2: number[];
  /** open(path, flags, mode) and openat(dirfd, path, flags, mode). */
  open: number | undefined;
  openat: number;
  openat2: number;
  /** Syscall numbers at or above this belong to another ABI (x32). */
  foreignFrom: number | undefined;
}

const ARCHES: Record<string, Arch> = {
  // chmod 90, creat 85, mknod 133 | fchmod 91 has mode in arg 1 too; fchmodat 268, mknodat 259, fchmodat2 452.
  x64: { audit: 0xc000003e, modeArg1: [90, 91, 85, 133], modeArg2: [268, 259, 452], open: 2, openat: 257, openat2: 437, foreignFrom: 0x40000000 },
  // The generic table: fchmod 52, fchmodat 53, mknodat 33, fchmodat2 452.
  arm64: { audit: 0xc00000b7, modeArg1: [52], modeArg2: [53, 33, 452], open: undefined, openat: 56, openat2: 437, foreignFrom: undefined },
};

type Insn = { code: number; jt: number | string; jf: number | string; k: number; label?: string };

/** The filter for this machine's architecture, or `undefined` where none is built (then setid bits are not filtered). */
export function setidSeccompFilter(arch: string = process.arch): Buffer | undefined {
  const a = ARCHES[arch];
  if (!a) return undefined;
  const p: Insn[] = [];
  const op = (code: number, k: number, jt: number | string = 0, jf: number | string = 0, label?: string) => p.push({ code, jt, jf, k, ...(label ? { label } : {}) });
  op(LD_W_ABS, 4);
  op(JEQ_K, a.audit, 0, "enosys");
  op(LD_W_ABS, 0);
  if (a.foreignFrom !== undefined) op(JGE_K, a.foreignFrom, "enosys", 0);
  for (const nr of a.modeArg1) op(JEQ_K, nr, "mode1", 0);
  for (const nr of a.modeArg2) op(JEQ_K, nr, "mode2", 0);
  if (a.open !== undefined) op(JEQ_K, a.open, "open", 0);
  op(JEQ_K, a.openat, "openat", 0);
  op(JEQ_K, a.openat2, "enosys", 0);
  op(RET_K, RET_ALLOW);
  op(LD_W_ABS, ARG(1), 0, 0, "mode1");
  op(JSET_K, SETID_BITS, "eperm", "allow");
  op(LD_W_ABS, ARG(1), 0, 0, "open");
  op(JSET_K, CREATING, "mode2", "allow");
  op(LD_W_ABS, ARG(2), 0, 0, "mode2");
  op(JSET_K, SETID_BITS, "eperm", "allow");
  op(LD_W_ABS, ARG(2), 0, 0, "openat");
  op(JSET_K, CREATING, 0, "allow");
  op(LD_W_ABS, ARG(3));
  op(JSET_K, SETID_BITS, "eperm", "allow");
  op(RET_K, RET_ALLOW, 0, 0, "allow");
  op(RET_K, RET_EPERM, 0, 0, "eperm");
  op(RET_K, RET_ENOSYS, 0, 0, "enosys");
  return assemble(p);
}

function assemble(p: Insn[]): Buffer {
  const at = new Map<string, number>();
  p.forEach((insn, i) => insn.label && at.set(insn.label, i));
  const out = Buffer.alloc(p.length * 8);
  p.forEach((insn, i) => {
    const jump = (j: number | string) => {
      if (typeof j === "number") return j;
      const target = at.get(j);
      if (target === undefined || target <= i || target - i - 1 > 255) throw new Error(`seccomp: bad jump to ${j}`);
      return target - i - 1;
    };
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(jump(insn.jt), i * 8 + 2);
    out.writeUInt8(jump(insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}
