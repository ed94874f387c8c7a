/**
 * A local sandbox for commands, built on bubblewrap (`bwrap`, Linux, unprivileged user
 * namespaces). Each `exec` starts a fresh sandbox: new user, PID, IPC, UTS, cgroup, mount and
 * (unless `network: true`) network namespaces; a fresh `/proc` (the Node process and its
 * environment are invisible), the system read-only (`/usr`, the `/bin`…`/lib64` links and a few
 * `/etc` files a shell needs), a sized `/tmp`, and one writable directory: the thread's
 * workspace, bound at a neutral path (`/workspace`: the host's layout never shows; the tool
 * boundary maps it back, src/rewrite/mountPath.ts). Protected paths in it are read-only, no
 * set-id bit can be set (setidFilter.ts), and rlimits (plus a pids cgroup as root) bound each
 * call. The PID namespace dies with its init, so background jobs and `setsid` children end with
 * the call.
 *
 * `@anthropic-ai/sandbox-runtime` was the reference design (it needs Node ≥ 22.12, so it cannot
 * be a dependency of this Node 20 package). It binds the whole root read-only and filters the
 * network through a proxy; this module is stricter on files (only what a shell needs is
 * visible) and filters the network the same way with `network: { allow }` (`sandboxEgress.ts`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:fs";
import { access, lstat, mkdir, open, readdir, readlink, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";
import { LocalFileOperations } from "./localFileOperations.js";
import { LocalEnvironment } from "./localEnvironment.js";
import type { FileOperations } from "./fileOperations.js";
import { parseOptions } from "../options.js";
import { SANDBOX_LIMITS, sandboxLimitMessage, type SandboxLimitName } from "../guards/limits.js";
import { protectedPathList, protectedPathsOptionSchema, type ProtectedPath } from "../guards/protectedPaths.js";
import { createPidsCgroup, type PidsCgroup } from "./pidsCgroup.js";
import { shellQuote } from "./shellQuote.js";
import { setidSeccompFilter } from "./setidFilter.js";
import { networkOptionSchema, secretsOptionSchema, type EgressNetwork, type SecretsOption } from "./egressProxy.js";
import { startSandboxEgress, type SandboxEgress } from "./sandboxEgress.js";
import { mountinfoTrace } from "./mountinfoTrace.js";

const absolutePath = z
  .string()
  .min(1)
  .refine((p) => path.isAbsolute(p) && !p.includes("\0"), "must be an absolute path without NUL bytes");

const SYSTEM_MOUNTS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/dev", "/tmp"];
const mountPathSchema = absolutePath.refine(
  (p) => path.posix.normalize(p) === p && p !== "/" && !SYSTEM_MOUNTS.some((d) => p === d || p.startsWith(`${d}/`)),
  "must be a normalised absolute path outside the system directories, e.g. /workspace",
);
const positiveInt = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
/** Each limit of one sandboxed command; see `SANDBOX_LIMITS` for what each bounds and its default. */
export const sandboxLimitsSchema = z.strictObject({
  processes: positiveInt.optional(),
  memoryBytes: positiveInt.min(16 * 1024 * 1024).optional(),
  cpuSeconds: positiveInt.optional(),
  fileSizeBytes: positiveInt.optional(),
  tmpfsBytes: positiveInt.optional(),
  outputBytes: positiveInt.optional(),
});
/** The limits in force: every one set. */
export type SandboxLimits = { [K in SandboxLimitName]: number };

/** The checks on {@link SandboxEnvironmentOptions}. */
export const sandboxOptionsSchema = z.strictObject({
  /** The one writable directory (on the host), bound read-write at `mountPath` inside. */
  workspaceDir: absolutePath.refine((p) => path.resolve(p) !== "/", "must not be the file system root"),
  /**
   * `false` (default): no network at all. `true`: the host's network (loopback included).
   * `{ allow, deny?, onEgress?, lookup? }`: no network of its own, only the hosts allowed through
   * the egress proxy (see `src/environment/egressProxy.ts`).
   */
  network: networkOptionSchema.optional(),
  /** Credentials the command sees only as sentinels, swapped in by the egress proxy for their hosts. Needs an allow-list. */
  secrets: secretsOptionSchema.optional(),
  /** Variables of every command when a call gives none. Default: PATH, HOME (the mount path), LANG, TMPDIR. */
  env: z.record(z.string(), z.string()).optional(),
  /** Extra host paths visible read-only at the same path (e.g. a toolchain under /opt). */
  readOnlyBinds: z.array(absolutePath).optional(),
  /** The bwrap executable. Default: `bwrap` found on PATH. */
  bwrapPath: absolutePath.optional(),
  /** Timeout when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs: z.number().positive().finite().optional(),
  /** Where the workspace appears inside (default `/workspace`); never a system directory. */
  mountPath: mountPathSchema.optional(),
  /** Resource limits of each command (defaults: `SANDBOX_LIMITS` in guards/limits.ts). */
  limits: sandboxLimitsSchema.optional(),
  /** Workspace paths bound read-only (default list in guards/protectedPaths.ts); `false`: none. */
  protectedPaths: protectedPathsOptionSchema.optional(),
}).refine((o) => o.secrets === undefined || typeof o.network === "object", {
  message: "secrets need network: { allow: [...] } (the egress proxy puts them into requests to their hosts)",
  path: ["secrets"],
});

/** Options of {@link SandboxEnvironment}. */
export type SandboxEnvironmentOptions = z.input<typeof sandboxOptionsSchema>;

/** Host directories a shell needs; each is a symlink (merged /usr) or a directory on the host. */
const SYSTEM_DIRS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** `/etc` entries bound read-only when present: users, the dynamic linker, DNS, TLS roots, time zone. */
const ETC_ENTRIES = [
  "passwd",
  "group",
  "nsswitch.conf",
  "host.conf",
  "hosts",
  "resolv.conf",
  "gai.conf",
  "services",
  "protocols",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "alternatives",
  "localtime",
  "timezone",
  "ssl",
  "ca-certificates",
  "ca-certificates.conf",
  "os-release",
  "debian_version",
  "locale.alias",
  "mime.types",
  "magic",
  "inputrc",
  "terminfo",
];
/**
 * Run first inside the sandbox: closes descriptors the Node process inherited from its own parent
 * without close-on-exec (bwrap passes them on), then becomes `bash -c <command>` exactly.
 */
const CLOSE_INHERITED_FDS =
  'for f in /proc/$$/fd/*; do n=${f##*/}; case $n in 0|1|2) ;; *) [ -e "$f" ] && eval "exec $n>&-" ;; esac; done; [ -n "$2" ] && eval "$2"; exec bash -c "$1"';
/** The neutral path of the workspace inside the sandbox. */
export const DEFAULT_MOUNT_PATH = "/workspace";
/** Processes the launcher and bwrap itself hold in a call's pids cgroup, on top of the limit. */
const LAUNCHER_TASKS = 4;
/** Exit code of a command the sandbox stopped at a limit (as if killed by SIGKILL). */
const LIMIT_EXIT_CODE = 137;
const SETID_FILTER = setidSeccompFilter();
/** What a command's output shows when it ran into a limit (bash, glibc, Python, coreutils messages). */
const LIMIT_TRACES: [SandboxLimitName, string[]][] = [
  ["processes", ["fork: retry: Resource temporarily unavailable", "fork: Resource temporarily unavailable", "fork: retry: No child processes"]],
  ["memoryBytes", ["Cannot allocate memory", "cannot allocate memory", "xmalloc: cannot allocate", "xrealloc: cannot allocate", "MemoryError", "std::bad_alloc"]],
  ["fileSizeBytes", ["File too large", "File size limit exceeded"]],
  ["tmpfsBytes", ["No space left on device"]],
  ["cpuSeconds", ["CPU time limit exceeded"]],
];

/**
 * The rlimits, set inside the sandbox's user namespace (so RLIMIT_NPROC counts this sandbox's
 * processes only): soft and hard, so the command cannot raise them. CPU time's hard limit is a
 * few seconds past the soft one, so the kernel first sends SIGXCPU (exit 152, told as the CPU
 * limit) and kills with SIGKILL only a process that ignores it. bash's units: `-d` KiB, `-f`
 * 1,024-byte blocks.
 */
function limitsPrelude(l: SandboxLimits): string {
  const kib = (n: number) => Math.max(1, Math.floor(n / 1024));
  return `ulimit -HS -u ${l.processes} -d ${kib(l.memoryBytes)} -f ${kib(l.fileSizeBytes)} && ulimit -S -t ${l.cpuSeconds} && ulimit -H -t ${l.cpuSeconds + 5} || exit 126; `;
}

function isInsideDir(dir: string, candidate: string): boolean {
  const rel = path.relative(dir, candidate);
  return path.isAbsolute(candidate) && !rel.startsWith("..") && !path.isAbsolute(rel);
}

/**
 * The protected paths of one call: existing ones (a real directory or regular file, reached
 * without a symlink) are bound read-only over the workspace bind; the identity of each is kept,
 * and {@link changed} names every protected path that after the call exists but was not there
 * (or is another file) — created at a name that had no placeholder to hold it, or put in place of
 * one by renaming a parent. Those are removed (see `removeInside`): nothing planted at a
 * protected path outlives the call. Missing paths get no placeholder, so the workspace shows no
 * empty `.bashrc` or `.vscode/` and `git init` still works.
 */
/** `.git/config` as `git init` writes it: kept when a call creates it (anything else is removed). */
const GIT_INIT_CONFIG_LINE = /^(?:\[core\]|\t(?:repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks) = (?:true|false|0|1))$/;
const MAX_SAMPLE_HOOKS = 64;

/**
 * Whether a protected path created during the call is what `git init` makes and nothing more: a
 * `.git/config` of core settings only, a `.git/hooks/` of `*.sample` files (git never runs
 * those). Read through one descriptor that follows no link and never blocks, bounded.
 */
async function isGitInitDefault(workspaceDir: string, rel: string): Promise<boolean> {
  const host = path.join(workspaceDir, rel);
  if (rel === ".git/config") {
    const fh = await open(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
    if (!fh) return false;
    try {
      const s = await fh.stat();
      if (!s.isFile() || s.size > 4096) return false;
      const { buffer, bytesRead } = await fh.read(Buffer.alloc(4096), 0, 4096, 0);
      const lines = buffer.subarray(0, bytesRead).toString("latin1").split("\n");
      return lines.pop() === "" && lines.every((l) => GIT_INIT_CONFIG_LINE.test(l));
    } finally {
      await fh.close();
    }
  }
  if (rel === ".git/hooks") {
    const s = await lstat(host).catch(() => undefined);
    if (!s?.isDirectory()) return false;
    const entries = await readdir(host, { withFileTypes: true }).catch(() => undefined);
    return entries !== undefined && entries.length <= MAX_SAMPLE_HOOKS && entries.every((e) => e.isFile() && e.name.endsWith(".sample"));
  }
  return false;
}

async function protectedState(workspaceDir: string, mountPath: string, list: readonly ProtectedPath[]) {
  const before = new Map<string, string | undefined>();
  const args: string[] = [];
  const identity = async (rel: string) => {
    const s = await lstat(path.join(workspaceDir, rel)).catch(() => undefined);
    return s ? `${s.dev}:${s.ino}:${s.isDirectory() ? "d" : s.isFile() ? "f" : "o"}` : undefined;
  };
  const realWorkspace = await realpath(workspaceDir).catch(() => workspaceDir);
  await Promise.all(
    list.map(async (entry) => {
      const host = path.join(workspaceDir, entry.path);
      const id = await identity(entry.path);
      before.set(entry.path, id);
      if (id === undefined || id.endsWith(":o")) return;
      // A parent that is a symlink would make bwrap bind what it points to: never.
      if ((await realpath(host).catch(() => "")) !== path.join(realWorkspace, entry.path)) return;
      args.push("--ro-bind", host, path.posix.join(mountPath, entry.path));
    }),
  );
  return {
    args,
    async changed(): Promise<string[]> {
      const planted = await Promise.all(
        list.map(async (entry) => {
          const now = await identity(entry.path);
          if (now === undefined || (now === before.get(entry.path) && !now.endsWith(":o"))) return false;
          return !(before.get(entry.path) === undefined && (await isGitInitDefault(workspaceDir, entry.path)));
        }),
      );
      return list.filter((_, i) => planted[i]).map((entry) => entry.path);
    },
  };
}

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const DEFAULT_TIMEOUT_MS = 60_000;
const PROBE_TIMEOUT_MS = 10_000;
/** Bytes of bwrap's stderr kept to explain a sandbox that failed to start. */
const SETUP_ERROR_BYTES = 4_096;

/** What the host offers, computed once per bwrap executable. */
interface HostLayout {
  /** bwrap arguments that build the read-only system part of the sandbox. */
  systemArgs: string[];
  /** bwrap ≥ 0.8 can forbid nested user namespaces inside the sandbox. */
  disableUserns: boolean;
}

const layouts = new Map<string, Promise<HostLayout>>();

function hostLayout(bwrapPath: string): Promise<HostLayout> {
  let layout = layouts.get(bwrapPath);
  if (!layout) {
    layout = computeLayout(bwrapPath);
    layouts.set(bwrapPath, layout);
    // A failed probe (e.g. bwrap missing) is retried on next use rather than cached forever.
    layout.catch(() => layouts.delete(bwrapPath));
  }
  return layout;
}

async function computeLayout(bwrapPath: string): Promise<HostLayout> {
  const systemArgs = ["--ro-bind", "/usr", "/usr"];
  for (const dir of SYSTEM_DIRS) {
    const s = await lstat(dir).catch(() => undefined);
    if (s?.isSymbolicLink()) systemArgs.push("--symlink", await readlink(dir), dir);
    else if (s?.isDirectory()) systemArgs.push("--ro-bind", dir, dir);
  }
  for (const entry of ETC_ENTRIES) systemArgs.push("--ro-bind-try", `/etc/${entry}`, `/etc/${entry}`);
  const help = await runBwrap(bwrapPath, ["--help"], PROBE_TIMEOUT_MS);
  return { systemArgs, disableUserns: help.output.includes("--disable-userns") };
}

/** The namespace, process and file-system arguments shared by every sandbox and by the probe. */
function baseArgs(layout: HostLayout, network: boolean, tmpfsBytes?: number): string[] {
  return [
    "--unshare-all",
    // Explicit (not "-try"): without a user namespace the rest is not unprivileged-safe.
    "--unshare-user",
    ...(network ? ["--share-net"] : []),
    ...(layout.disableUserns ? ["--disable-userns"] : []),
    // When run as root, bwrap otherwise keeps every capability inside the namespace.
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    // No controlling terminal: a command cannot push keystrokes into the caller's tty (TIOCSTI).
    "--new-session",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    ...layout.systemArgs,
    ...(tmpfsBytes === undefined ? [] : ["--size", String(tmpfsBytes)]),
    "--tmpfs",
    "/tmp",
  ];
}

/** Finds `bwrap` on PATH (bwrap itself is spawned with an empty environment, so it needs a full path). */
async function findBwrap(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (!dir) continue;
    const candidate = path.join(dir, "bwrap");
    if (await access(candidate, constants.X_OK).then(() => true, () => false)) return candidate;
  }
  return undefined;
}

/** Result of {@link detectSandbox}. */
export type SandboxAvailability = { available: true; bwrapPath: string } | { available: false; reason: string };

const detections = new Map<string, Promise<SandboxAvailability>>();

/**
 * Whether commands can run in a bubblewrap sandbox here: probes once per bwrap path (cached for
 * the process) by starting a real sandbox with the same flags `exec` uses and running `true`.
 * Unprivileged user namespaces may be disabled by the kernel or AppArmor; `reason` then says so.
 */
export function detectSandbox(options: { bwrapPath?: string } = {}): Promise<SandboxAvailability> {
  const key = options.bwrapPath ?? "";
  let found = detections.get(key);
  if (!found) {
    found = probe(options.bwrapPath);
    detections.set(key, found);
  }
  return found;
}

async function probe(configured: string | undefined): Promise<SandboxAvailability> {
  if (process.platform !== "linux") return { available: false, reason: `bubblewrap needs Linux (this is ${process.platform})` };
  const bwrapPath = configured ?? (await findBwrap());
  if (!bwrapPath) return { available: false, reason: "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)" };
  try {
    const layout = await hostLayout(bwrapPath);
    const run = await runBwrap(bwrapPath, [...baseArgs(layout, false), "--remount-ro", "/", "--", "true"], PROBE_TIMEOUT_MS);
    if (run.exitCode === 0) return { available: true, bwrapPath };
    return { available: false, reason: explainProbeFailure(bwrapPath, run.output) };
  } catch (err) {
    return { available: false, reason: `${bwrapPath} could not be run: ${(err as Error).message}` };
  }
}

function explainProbeFailure(bwrapPath: string, output: string): string {
  const message = output.trim().split("\n").slice(-3).join(" ") || "no message";
  const userns = /namespace|uid map|Operation not permitted|Permission denied/i.test(message)
    ? " — unprivileged user namespaces look disabled (check sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, " +
      "or on Ubuntu ≥ 23.10 kernel.apparmor_restrict_unprivileged_userns / an AppArmor profile for bwrap; inside Docker, " +
      "the default seccomp profile blocks them)"
    : "";
  return `${bwrapPath} failed to start a sandbox: ${message}${userns}`;
}

/** Runs bwrap with an empty environment and collects its combined output (probe and --help). */
function runBwrap(bwrapPath: string, args: string[], timeoutMs: number): Promise<{ exitCode: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bwrapPath, args, { env: {}, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => killTree(child, undefined), timeoutMs);
    child.stdout.on("data", (c: Buffer) => chunks.push(c));
    child.stderr.on("data", (c: Buffer) => chunks.push(c));
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ exitCode: code ?? -1, output: Buffer.concat(chunks).toString("utf8") });
    });
  });
}

/** Kills the sandbox's init (the PID namespace dies with it) and bwrap's own process group. */
function killTree(child: ChildProcess, sandboxInitPid: number | undefined): void {
  for (const target of [sandboxInitPid, child.pid === undefined ? undefined : -child.pid]) {
    if (target === undefined) continue;
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/**
 * The default variables of sandboxed commands: enough to run, nothing from the host process.
 * `home` is the workspace as the command sees it (the sandbox's mount path).
 */
export function defaultSandboxEnv(home: string = DEFAULT_MOUNT_PATH): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: home, LANG: "C.UTF-8", TMPDIR: "/tmp" };
}

/**
 * Runs each command in a fresh bubblewrap sandbox that sees only the system (read-only) and
 * `workspaceDir` (read-write, same path). See the module comment for what is isolated.
 */
export class SandboxEnvironment implements Environment {
  readonly kind = "sandbox";
  readonly sandboxed = true;
  /** The workspace is a host directory, so file tools use the native file system. */
  readonly fileOps: FileOperations = new LocalFileOperations();
  readonly workspaceDir: string;
  private readonly network: boolean | EgressNetwork;
  private readonly secrets: SecretsOption | undefined;
  private readonly env: Record<string, string>;
  private readonly readOnlyBinds: string[];
  private readonly bwrapPath: string | undefined;
  private resolvedBwrap: Promise<string | undefined> | undefined;
  private readonly defaultTimeoutMs: number;
  /** Where the workspace appears inside the sandbox (its host path never does). */
  readonly mountPath: string;
  private readonly limits: SandboxLimits;
  /** `ulimit` lines run inside before the command (lowering a limit needs no privilege). */
  private readonly limitsPrelude: string;
  /** As root the kernel ignores RLIMIT_NPROC for the sandbox user (host uid 0): a pids cgroup counts instead. */
  private readonly rootNeedsCgroup = process.getuid?.() === 0;
  private readonly protectedPaths: ProtectedPath[];
  private readonly running = new Set<(why: "close") => void>();

  constructor(options: SandboxEnvironmentOptions) {
    const opts = parseOptions(sandboxOptionsSchema, options ?? {}, "Invalid SandboxEnvironment options");
    this.workspaceDir = path.resolve(opts.workspaceDir);
    this.network = opts.network ?? false;
    this.secrets = opts.secrets;
    this.mountPath = opts.mountPath ?? DEFAULT_MOUNT_PATH;
    this.env = opts.env ?? defaultSandboxEnv(this.mountPath);
    this.limits = { ...SANDBOX_LIMITS, ...opts.limits };
    this.limitsPrelude = limitsPrelude(this.limits);
    this.protectedPaths = protectedPathList(opts.protectedPaths);
    this.readOnlyBinds = (opts.readOnlyBinds ?? []).map((p) => path.resolve(p));
    this.bwrapPath = opts.bwrapPath;
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (typeof command !== "string") throw new TypeError("exec: command must be a string");
    checkExecOptions(options);
    const cwd = this.checkCwd(options.cwd);
    this.resolvedBwrap ??= this.bwrapPath ? Promise.resolve(this.bwrapPath) : findBwrap();
    const bwrapPath = await this.resolvedBwrap;
    if (!bwrapPath) throw new Error("SandboxEnvironment: bwrap is not installed (apt-get install bubblewrap)");
    const layout = await hostLayout(bwrapPath);
    await mkdir(this.workspaceDir, { recursive: true });
    if (cwd !== this.workspaceDir) {
      const s = await stat(cwd).catch(() => undefined);
      if (!s?.isDirectory()) throw new Error(`exec: cwd ${cwd} is not a directory inside the workspace`);
    }
    const args = [...baseArgs(layout, this.network === true, this.limits.tmpfsBytes)];
    for (const p of this.readOnlyBinds) args.push("--ro-bind", p, p);
    // At a neutral path: $PWD, $HOME, getcwd() and error texts never show the host's layout.
    args.push("--bind", this.workspaceDir, this.mountPath);
    // The sandbox root (a tmpfs holding the empty parents of the mount path) becomes read-only.
    args.push("--remount-ro", "/", "--chdir", this.insidePath(cwd), "--clearenv");
    for (const [name, value] of Object.entries(options.env ?? this.env)) {
      if (name === "" || name.includes("=") || name.includes("\0") || value.includes("\0")) {
        throw new TypeError(`exec: invalid environment variable name or value: ${JSON.stringify(name)}`);
      }
      args.push("--setenv", name, value);
    }
    if (typeof this.network !== "object") return this.spawnSandbox(bwrapPath, args, command, options, "");
    // An allow-list: the proxy lives as long as this command.
    const egress: SandboxEgress = await startSandboxEgress(this.network, this.secrets);
    try {
      // Before the root becomes read-only: bwrap creates the socket's mount point there.
      const rootRo = args.findIndex((a, i) => a === "--remount-ro" && args[i + 1] === "/");
      args.splice(rootRo, 0, ...egress.args);
      for (const [name, value] of Object.entries(egress.env)) args.push("--setenv", name, value);
      return await this.spawnSandbox(bwrapPath, args, command, options, egress.prelude);
    } finally {
      await egress.close();
    }
  }

  /** The path inside the sandbox of a host path in the workspace. */
  private insidePath(hostPath: string): string {
    const rel = path.relative(this.workspaceDir, hostPath);
    return rel === "" ? this.mountPath : path.posix.join(this.mountPath, ...rel.split(path.sep));
  }

  /** The host path of a cwd given as a host path in the workspace or as a path under the mount path. */
  private checkCwd(cwd: string | undefined): string {
    if (cwd === undefined) return this.workspaceDir;
    const mountRel = path.posix.relative(this.mountPath, path.posix.resolve(this.mountPath, cwd));
    if (path.isAbsolute(cwd) && !mountRel.startsWith("..") && !path.isAbsolute(mountRel) && !isInsideDir(this.workspaceDir, cwd)) {
      cwd = path.join(this.workspaceDir, mountRel);
    }
    const resolved = path.resolve(this.workspaceDir, cwd);
    const rel = path.relative(this.workspaceDir, resolved);
    if (!path.isAbsolute(cwd) || rel.startsWith("..") || path.isAbsolute(rel)) {
      throw new Error(`exec: cwd must be an absolute path inside the sandbox workspace ${this.workspaceDir} (got ${cwd})`);
    }
    return resolved;
  }

  /**
   * One call: the protected paths bound read-only over the workspace (and anything created at
   * one during the call removed afterwards, see {@link ProtectedState}), a pids cgroup when
   * rlimits cannot count processes (root), then bwrap.
   */
  private async spawnSandbox(bwrapPath: string, args: string[], command: string, options: ExecOptions, prelude: string): Promise<ExecResult> {
    const guarded = await protectedState(this.workspaceDir, this.mountPath, this.protectedPaths);
    const bind = args.findIndex((a, i) => a === "--bind" && args[i + 1] === this.workspaceDir && args[i + 2] === this.mountPath);
    args.splice(bind + 3, 0, ...guarded.args);
    const cgroup = this.rootNeedsCgroup ? await createPidsCgroup(this.limits.processes + LAUNCHER_TASKS) : undefined;
    try {
      return await this.spawnBwrap(bwrapPath, args, command, options, `${this.limitsPrelude}${prelude}`, cgroup);
    } finally {
      // Not awaited: the kernel may still be reaping the last tasks; the result does not wait for it.
      void cgroup?.release();
      const changed = await guarded.changed();
      if (changed.length > 0) await this.removeInside(bwrapPath, changed);
    }
  }

  /**
   * Removes paths (workspace-relative) from inside a fresh sandbox: whatever the call left there
   * (a symlink, a directory swapped for a link), `rm` only ever sees the sandbox's own view.
   */
  private async removeInside(bwrapPath: string, rels: string[]): Promise<void> {
    const layout = await hostLayout(bwrapPath);
    const args = [...baseArgs(layout, false), "--bind", this.workspaceDir, this.mountPath, "--remount-ro", "/", "--chdir", this.mountPath, "--clearenv"];
    const script = `rm -rf -- ${rels.map((r) => shellQuote(`./${r}`)).join(" ")}`;
    await this.spawnBwrap(bwrapPath, args, script, { timeoutMs: PROBE_TIMEOUT_MS }, "", undefined).catch(() => undefined);
  }

  /**
   * Spawns bwrap with an empty environment (its own /proc/1/environ is visible inside). The
   * options go through fd 3 (`--args`), so variable values never appear in a host `ps`; fd 4
   * (`--json-status-fd`) reports the sandbox init's host pid, used to kill the whole namespace,
   * and tells a sandbox that failed to start from a command that failed; fd 5 carries the
   * set-id seccomp filter. With a cgroup, a `sh` launcher joins it and becomes bwrap.
   *
   * How a call ends is decided once, by the first of: the timeout, the abort signal, `close()`,
   * a limit the output shows — each always reports the same status and exit code (timeout and
   * abort and close: -1; a limit: 137), whatever the sandbox's own exit looked like.
   */
  private spawnBwrap(
    bwrapPath: string,
    args: string[],
    command: string,
    options: ExecOptions,
    prelude: string,
    cgroup: PidsCgroup | undefined,
  ): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const filter = SETID_FILTER;
      const bwrapArgs = [
        "--args", "3", "--json-status-fd", "4", ...(filter ? ["--seccomp", "5"] : []),
        "--", "bash", "-c", CLOSE_INHERITED_FDS, "bash", command, prelude,
      ];
      const [file, argv] = cgroup
        ? ["/bin/sh", ["-c", 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, bwrapPath, ...bwrapArgs]]
        : [bwrapPath, bwrapArgs];
      const child = spawn(file, argv, {
        env: {},
        stdio: ["pipe", "pipe", "pipe", "pipe", "pipe", "pipe"],
        detached: true,
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const setupError: Buffer[] = [];
      let setupErrorBytes = 0;
      let outputBytes = 0;
      let status = "";
      let initPid: number | undefined;
      let ended: "timeout" | "abort" | "close" | SandboxLimitName | undefined;
      const noted = new Set<SandboxLimitName>();
      let settled = false;
      const kill = () => killTree(child, initPid);
      const end = (why: NonNullable<typeof ended>) => {
        ended ??= why;
        kill();
      };
      this.running.add(end);
      const timer = setTimeout(() => end("timeout"), options.timeoutMs ?? this.defaultTimeoutMs);
      const onAbort = () => end("abort");
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => {
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        this.running.delete(end);
      };
      const emit = (chunk: Buffer, stream: "stdout" | "stderr") => {
        if (options.onOutput) options.onOutput(chunk, stream);
        else (stream === "stdout" ? stdout : stderr).push(chunk);
      };
      /** Counts output against its limit and looks for the traces other limits leave. */
      const watch = (chunk: Buffer) => {
        if (ended !== undefined) return;
        outputBytes += chunk.length;
        if (outputBytes > this.limits.outputBytes) return end("outputBytes");
        const text = chunk.toString("latin1");
        for (const [name, traces] of LIMIT_TRACES) {
          if (!noted.has(name) && traces.some((t) => text.includes(t))) noted.add(name);
        }
        // Past the process limit a fork bomb never ends by itself: the call ends here.
        if (noted.has("processes")) end("processes");
      };

      const argsPipe = child.stdio[3] as NodeJS.WritableStream & { on(e: "error", f: () => void): void };
      const statusPipe = child.stdio[4] as NodeJS.ReadableStream;
      const filterPipe = (child.stdio as unknown[])[5] as NodeJS.WritableStream & { on(e: "error", f: () => void): void };
      argsPipe.on("error", () => undefined);
      argsPipe.end(Buffer.from(args.map((a) => `${a}\0`).join("")));
      filterPipe.on("error", () => undefined);
      filterPipe.end(filter ?? Buffer.alloc(0));
      statusPipe.on("data", (chunk: Buffer) => {
        status += chunk.toString("utf8");
        initPid ??= Number(/"child-pid":\s*(\d+)/.exec(status)?.[1]) || undefined;
        // An end that came before the pid was known only reached bwrap's group.
        if (initPid !== undefined && ended !== undefined) kill();
      });
      child.stdout!.on("data", (chunk: Buffer) => {
        if (ended === undefined || ended === "processes") emit(chunk, "stdout");
        watch(chunk);
      });
      child.stderr!.on("data", (chunk: Buffer) => {
        if (setupErrorBytes < SETUP_ERROR_BYTES) {
          setupError.push(chunk);
          setupErrorBytes += chunk.length;
        }
        if (ended === undefined || ended === "processes") emit(chunk, "stderr");
        watch(chunk);
      });
      child.stdin!.on("error", () => undefined);
      child.stdin!.end(options.stdin ?? "");
      child.on("error", (err) => {
        if (settled) return;
        cleanup();
        reject(err);
      });
      child.on("close", (code) => {
        if (settled) return;
        cleanup();
        const early = Buffer.concat(setupError).toString("utf8");
        // Mounts are made after the child is cloned, so a bad bind shows as exit 1 + "bwrap: …".
        const started = /"child-pid"/.test(status) && !(code === 1 && early.startsWith("bwrap: "));
        if (!started && ended === undefined) {
          const why = early.trim() || `bwrap exited with ${code}`;
          reject(new Error(`the sandbox could not start: ${why}`));
          return;
        }
        // Killed by a signal the limits send: the kernel's verdict, told as that limit.
        if (ended === undefined && code === 128 + 24) noted.add("cpuSeconds");
        if (ended === undefined && code === 128 + 25) noted.add("fileSizeBytes");
        const limit = ended !== undefined && ended in this.limits ? (ended as SandboxLimitName) : undefined;
        if (limit) noted.add(limit);
        if (noted.size > 0) {
          const notes = [...noted].map((name) => sandboxLimitMessage(name, this.limits[name])).join("\n");
          emit(Buffer.from(`\n${notes}\n`), "stderr");
        }
        const killed = ended === "timeout" || ended === "abort" || ended === "close";
        resolve({
          stdout: Buffer.concat(stdout),
          stderr: Buffer.concat(stderr).toString("utf8"),
          exitCode: killed ? -1 : limit ? LIMIT_EXIT_CODE : (code ?? -1),
          timedOut: ended === "timeout",
          ...(ended === "abort" || ended === "close" ? { aborted: true } : {}),
        });
      });
      if (options.signal?.aborted) onAbort();
    });
  }

  /** Kills every command still running in this environment; each reports itself aborted (exit -1). */
  async close(): Promise<void> {
    for (const end of [...this.running]) end("close");
  }
}

/** The checks on {@link CommandEnvironmentOptions}. */
export const commandEnvironmentSchema = z.strictObject({
  /** "auto" (default): sandbox when available, else unsandboxed with one warning. "required": throw. "off": never. */
  sandbox: z.enum(["auto", "required", "off"]).optional(),
  /** Network of the sandboxed commands, as {@link SandboxEnvironmentOptions}' `network`; an allow-list never falls back to unsandboxed. */
  network: networkOptionSchema.optional(),
  /** Credentials the commands see only as sentinels (needs `network: { allow }`), as {@link SandboxEnvironmentOptions}' `secrets`. */
  secrets: secretsOptionSchema.optional(),
  /** Variables of every command when a call gives none. Default: PATH, HOME, LANG, TMPDIR (sandboxed or not). */
  env: z.record(z.string(), z.string()).optional(),
  /** The bwrap executable. Default: `bwrap` found on PATH. */
  bwrapPath: absolutePath.optional(),
  /** Timeout when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs: z.number().positive().finite().optional(),
  /** Resource limits of each sandboxed command (defaults: `SANDBOX_LIMITS` in guards/limits.ts). */
  limits: sandboxLimitsSchema.optional(),
  /** Workspace paths bound read-only in the sandbox (default list in guards/protectedPaths.ts); `false`: none. */
  protectedPaths: protectedPathsOptionSchema.optional(),
});

/** Options of {@link commandEnvironmentFor}. */
export type CommandEnvironmentOptions = z.input<typeof commandEnvironmentSchema>;

/** What {@link commandEnvironmentFor} chose. */
export interface CommandEnvironment {
  environment: Environment;
  sandboxed: boolean;
  /** Why commands run unsandboxed (for the shell tool's result metadata); absent when sandboxed. */
  reason?: string;
}

let warnedUnsandboxed = false;
let checkedTrace = false;

/**
 * Says once per process when sandboxed commands could read the host's layout in
 * `/proc/self/mountinfo` (the workspace root is not a filesystem of its own: mountinfoTrace.ts).
 */
function warnMountinfoTrace(workspaceDir: string): void {
  if (checkedTrace) return;
  checkedTrace = true;
  void realpath(path.dirname(workspaceDir))
    .then((rootDir) => mountinfoTrace(rootDir))
    .then((shown) => {
      if (shown === undefined) return;
      console.warn(
        `langgraph-workbench: sandboxed commands can read this host's path of the workspace root in /proc/self/mountinfo ("${shown}/<thread_id>": the kernel names a bind mount's source within its filesystem). ` +
          "To hide it, put rootDir on a filesystem of its own (a dedicated volume or tmpfs mount): then only /<thread_id> shows.",
      );
    })
    .catch(() => undefined);
}

/**
 * The environment `run_command` should use for a workspace: a {@link SandboxEnvironment} when
 * bubblewrap works here, else (mode "auto") the local shell with one process-wide warning, or
 * (mode "required") an error. Call it when tools are built, so "required" fails early.
 */
export async function commandEnvironmentFor(workspaceDir: string, options: CommandEnvironmentOptions = {}): Promise<CommandEnvironment> {
  const opts = parseOptions(commandEnvironmentSchema, options ?? {}, "Invalid shell sandbox options");
  if (typeof workspaceDir !== "string" || !path.isAbsolute(workspaceDir)) {
    throw new TypeError(`commandEnvironmentFor: workspaceDir must be an absolute path (got ${String(workspaceDir)})`);
  }
  const mode = opts.sandbox ?? "auto";
  // An allow-list or secrets only mean something inside the sandbox: never fall back to the host.
  const egress = typeof opts.network === "object" || opts.secrets !== undefined;
  if (egress && mode === "off") throw new Error('shell.network allow-lists and shell.secrets need the sandbox, but shell.sandbox is "off". Set it to "auto" or "required".');
  const unsandboxed = (reason: string): CommandEnvironment => ({
    environment: new LocalEnvironment({ env: opts.env ?? defaultSandboxEnv(workspaceDir), defaultTimeoutMs: opts.defaultTimeoutMs }),
    sandboxed: false,
    reason,
  });
  if (mode === "off") return unsandboxed('commands run unsandboxed: shell.sandbox is "off"');
  const found = await detectSandbox({ bwrapPath: opts.bwrapPath });
  if (found.available) {
    warnMountinfoTrace(workspaceDir);
    return {
      environment: new SandboxEnvironment({
        workspaceDir,
        network: opts.network,
        secrets: opts.secrets,
        env: opts.env,
        bwrapPath: found.bwrapPath,
        defaultTimeoutMs: opts.defaultTimeoutMs,
        limits: opts.limits,
        protectedPaths: opts.protectedPaths,
      }),
      sandboxed: true,
    };
  }
  if (egress) {
    throw new Error(
      `shell.network allow-lists and shell.secrets need the sandbox, and none is available: ${found.reason}. ` +
        "Install bubblewrap and allow unprivileged user namespaces (commands never run unsandboxed with an allow-list).",
    );
  }
  if (mode === "required") {
    throw new Error(
      `shell.sandbox is "required" but no sandbox is available: ${found.reason}. ` +
        'Install bubblewrap and allow unprivileged user namespaces, or set shell.sandbox to "auto" or "off".',
    );
  }
  if (!warnedUnsandboxed) {
    warnedUnsandboxed = true;
    console.warn(`langgraph-workbench: run_command runs WITHOUT a sandbox: ${found.reason}. Set shell.sandbox to "off" to silence this, or "required" to refuse.`);
  }
  return unsandboxed(`commands run unsandboxed: ${found.reason}`);
}
