/**
 * A local sandbox for commands, built on bubblewrap (`bwrap`, Linux, unprivileged user
 * namespaces). Each `exec` starts a fresh sandbox: new user, PID, IPC, UTS, cgroup, mount and
 * (unless `network: true`) network namespaces; a fresh `/proc` (the Node process and its
 * environment are invisible), the system read-only (`/usr`, the `/bin`…`/lib64` links and a few
 * `/etc` files a shell needs), an empty `/tmp`, no home directory, and one writable directory:
 * the thread's workspace, bound at its own absolute path so paths agree with the host-side file
 * tools. The PID namespace dies with its init, so background jobs and `setsid` children end with
 * the call.
 *
 * `@anthropic-ai/sandbox-runtime` was the reference design (it needs Node ≥ 22.12, so it cannot
 * be a dependency of this Node 20 package). It binds the whole root read-only and filters the
 * network through a proxy; this module is stricter on files (only what a shell needs is
 * visible) and simpler on network (all or nothing).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:fs";
import { access, lstat, mkdir, readlink, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";
import { LocalFileOperations } from "./local.js";
import { LocalEnvironment } from "./localShell.js";
import type { FileOperations } from "./types.js";
import { parseOptions } from "../options.js";

const absolutePath = z
  .string()
  .min(1)
  .refine((p) => path.isAbsolute(p) && !p.includes("\0"), "must be an absolute path without NUL bytes");

const sandboxOptionsSchema = z.strictObject({
  /** The one writable directory, bound read-write at the same absolute path. */
  workspaceDir: absolutePath.refine((p) => path.resolve(p) !== "/", "must not be the file system root"),
  /** Share the host's network (loopback included). Default false: no network at all. */
  network: z.boolean().optional(),
  /** Variables of every command when a call gives none. Default: PATH, HOME (the workspace), LANG, TMPDIR. */
  env: z.record(z.string(), z.string()).optional(),
  /** Extra host paths visible read-only at the same path (e.g. a toolchain under /opt). */
  readOnlyBinds: z.array(absolutePath).optional(),
  /** The bwrap executable. Default: `bwrap` found on PATH. */
  bwrapPath: absolutePath.optional(),
  /** Timeout when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs: z.number().positive().finite().optional(),
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
  'for f in /proc/$$/fd/*; do n=${f##*/}; case $n in 0|1|2) ;; *) [ -e "$f" ] && eval "exec $n>&-" ;; esac; done; exec bash -c "$1"';
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
function baseArgs(layout: HostLayout, network: boolean): string[] {
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

/** The default variables of sandboxed commands: enough to run, nothing from the host process. */
export function defaultSandboxEnv(workspaceDir: string): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOME: workspaceDir, LANG: "C.UTF-8", TMPDIR: "/tmp" };
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
  private readonly network: boolean;
  private readonly env: Record<string, string>;
  private readonly readOnlyBinds: string[];
  private readonly bwrapPath: string | undefined;
  private resolvedBwrap: Promise<string | undefined> | undefined;
  private readonly defaultTimeoutMs: number;
  private readonly running = new Set<() => void>();

  constructor(options: SandboxEnvironmentOptions) {
    const opts = parseOptions(sandboxOptionsSchema, options ?? {}, "Invalid SandboxEnvironment options");
    this.workspaceDir = path.resolve(opts.workspaceDir);
    this.network = opts.network ?? false;
    this.env = opts.env ?? defaultSandboxEnv(this.workspaceDir);
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
    const args = [...baseArgs(layout, this.network)];
    for (const p of this.readOnlyBinds) args.push("--ro-bind", p, p);
    // After /tmp and the read-only binds, so a workspace below either stays writable.
    args.push("--bind", this.workspaceDir, this.workspaceDir);
    // The sandbox root (a tmpfs holding the empty parents of the workspace) becomes read-only.
    args.push("--remount-ro", "/", "--chdir", cwd, "--clearenv");
    for (const [name, value] of Object.entries(options.env ?? this.env)) {
      if (name === "" || name.includes("=") || name.includes("\0") || value.includes("\0")) {
        throw new TypeError(`exec: invalid environment variable name or value: ${JSON.stringify(name)}`);
      }
      args.push("--setenv", name, value);
    }
    return this.spawnSandbox(bwrapPath, args, command, options);
  }

  private checkCwd(cwd: string | undefined): string {
    if (cwd === undefined) return this.workspaceDir;
    const resolved = path.resolve(this.workspaceDir, cwd);
    const rel = path.relative(this.workspaceDir, resolved);
    if (!path.isAbsolute(cwd) || rel.startsWith("..") || path.isAbsolute(rel)) {
      throw new Error(`exec: cwd must be an absolute path inside the sandbox workspace ${this.workspaceDir} (got ${cwd})`);
    }
    return resolved;
  }

  /**
   * Spawns bwrap with an empty environment (its own /proc/1/environ is visible inside). The
   * options go through fd 3 (`--args`), so variable values never appear in a host `ps`; fd 4
   * (`--json-status-fd`) reports the sandbox init's host pid, used to kill the whole namespace,
   * and tells a sandbox that failed to start from a command that failed.
   */
  private spawnSandbox(bwrapPath: string, args: string[], command: string, options: ExecOptions): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(bwrapPath, ["--args", "3", "--json-status-fd", "4", "--", "bash", "-c", CLOSE_INHERITED_FDS, "bash", command], {
        env: {},
        stdio: ["pipe", "pipe", "pipe", "pipe", "pipe"],
        detached: true,
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const setupError: Buffer[] = [];
      let setupErrorBytes = 0;
      let status = "";
      let initPid: number | undefined;
      let timedOut = false;
      let aborted = false;
      let settled = false;
      const kill = () => killTree(child, initPid);
      this.running.add(kill);
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, options.timeoutMs ?? this.defaultTimeoutMs);
      const onAbort = () => {
        aborted = true;
        kill();
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => {
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        this.running.delete(kill);
      };

      const argsPipe = child.stdio[3] as NodeJS.WritableStream & { on(e: "error", f: () => void): void };
      const statusPipe = child.stdio[4] as NodeJS.ReadableStream;
      argsPipe.on("error", () => undefined);
      argsPipe.end(Buffer.from(args.map((a) => `${a}\0`).join("")));
      statusPipe.on("data", (chunk: Buffer) => {
        status += chunk.toString("utf8");
        initPid ??= Number(/"child-pid":\s*(\d+)/.exec(status)?.[1]) || undefined;
        // An abort that arrived before the pid was known only reached bwrap's group.
        if (initPid !== undefined && (timedOut || aborted)) kill();
      });
      child.stdout!.on("data", (chunk: Buffer) => (options.onOutput ? options.onOutput(chunk, "stdout") : stdout.push(chunk)));
      child.stderr!.on("data", (chunk: Buffer) => {
        if (setupErrorBytes < SETUP_ERROR_BYTES) {
          setupError.push(chunk);
          setupErrorBytes += chunk.length;
        }
        if (options.onOutput) options.onOutput(chunk, "stderr");
        else stderr.push(chunk);
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
        if (!started && !timedOut && !aborted) {
          const why = early.trim() || `bwrap exited with ${code}`;
          reject(new Error(`the sandbox could not start: ${why}`));
          return;
        }
        resolve({
          stdout: Buffer.concat(stdout),
          stderr: Buffer.concat(stderr).toString("utf8"),
          exitCode: timedOut || aborted ? -1 : (code ?? -1),
          timedOut,
          ...(aborted ? { aborted: true } : {}),
        });
      });
      if (options.signal?.aborted) onAbort();
    });
  }

  /** Kills every command still running in this environment. */
  async close(): Promise<void> {
    for (const kill of [...this.running]) kill();
  }
}

const commandEnvironmentSchema = z.strictObject({
  /** "auto" (default): sandbox when available, else unsandboxed with one warning. "required": throw. "off": never. */
  sandbox: z.enum(["auto", "required", "off"]).optional(),
  network: z.boolean().optional(),
  env: z.record(z.string(), z.string()).optional(),
  bwrapPath: absolutePath.optional(),
  defaultTimeoutMs: z.number().positive().finite().optional(),
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
  const unsandboxed = (reason: string): CommandEnvironment => ({
    environment: new LocalEnvironment({ env: opts.env ?? defaultSandboxEnv(workspaceDir), defaultTimeoutMs: opts.defaultTimeoutMs }),
    sandboxed: false,
    reason,
  });
  if (mode === "off") return unsandboxed('commands run unsandboxed: shell.sandbox is "off"');
  const found = await detectSandbox({ bwrapPath: opts.bwrapPath });
  if (found.available) {
    return {
      environment: new SandboxEnvironment({
        workspaceDir,
        network: opts.network,
        env: opts.env,
        bwrapPath: found.bwrapPath,
        defaultTimeoutMs: opts.defaultTimeoutMs,
      }),
      sandboxed: true,
    };
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
