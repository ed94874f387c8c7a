import { spawn } from "node:child_process";
import path from "node:path";
import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";
import { LocalFileOperations } from "./localFileOperations.js";

/** Options of {@link runProcess}: the shared exec options plus how the process tree is ended. */
export interface RunProcessOptions extends Omit<ExecOptions, "env"> {
  env?: NodeJS.ProcessEnv;
  /**
   * On timeout or abort, send SIGTERM to the process group and SIGKILL this many ms later.
   * Default 0: SIGKILL at once.
   */
  killGraceMs?: number;
  /**
   * When the command exits: SIGKILL what is left of its process group (background jobs), then
   * wait at most `drainMs` for the output pipes to close (a `setsid` child may hold them) before
   * answering. Unset: wait for the pipes, however long (file transfers must not lose a byte).
   */
  drainMs?: number;
}

/**
 * Runs `file args…` as a child process in its own process group, feeds `stdin`, collects or
 * streams stdout (raw) and stderr, and kills the whole group on timeout or abort (a pipeline
 * such as `cut | sed` must not outlive it). Shared by the local environments and docker.
 */
export function runProcess(file: string, args: readonly string[], options: RunProcessOptions = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
      // Own process group, so a timeout can kill every process of the command line.
      detached: true,
      windowsHide: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const onOutput = options.onOutput;
    let timedOut = false;
    let aborted = false;
    let settled = false;
    let exitCode: number | null | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      if ((options.killGraceMs ?? 0) <= 0) return killGroup(child.pid, "SIGKILL");
      killGroup(child.pid, "SIGTERM");
      killTimer ??= setTimeout(() => killGroup(child.pid, "SIGKILL"), options.killGraceMs);
    };
    const onAbort = () => {
      aborted = true;
      stop();
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            stop();
          }, options.timeoutMs);
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      options.signal?.removeEventListener("abort", onAbort);
    };
    child.stdout.on("data", (chunk: Buffer) => (onOutput ? onOutput(chunk, "stdout") : stdout.push(chunk)));
    child.stderr.on("data", (chunk: Buffer) => (onOutput ? onOutput(chunk, "stderr") : stderr.push(chunk)));
    // The command may exit without reading all of stdin (e.g. it failed early): EPIPE is expected.
    child.stdin.on("error", () => undefined);
    child.on("error", (error) => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(error);
    });
    const finish = () => {
      if (settled) return;
      settled = true;
      cleanup();
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr).toString("utf8"),
        exitCode: exitCode ?? -1,
        timedOut,
        ...(aborted ? { aborted } : {}),
      });
    };
    child.on("exit", (code) => {
      exitCode = code;
      if (options.drainMs === undefined) return;
      // Background jobs would hold the pipes (and outlive the call): end them with the shell.
      killGroup(child.pid, "SIGKILL");
      drainTimer = setTimeout(finish, options.drainMs);
    });
    child.on("close", (code) => {
      exitCode ??= code;
      finish();
    });
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdin.end(options.stdin ?? "");
  });
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * `bash -c` with stdin on a socket (how Node connects a child's stdin) and no SHLVL in its
 * environment believes it was started by rshd and sources `~/.bashrc`: slower, noisy on
 * stderr, and not the agent's business. `--norc` turns that off.
 */
const BASH_NO_RC: readonly string[] = ["--norc", "-c"];

/** Options of {@link LocalShellEnvironment}. */
export interface LocalShellEnvironmentOptions {
  /** Shell executable run as `<shell> -c <command>`. Default `"bash"`. */
  shell?: string;
  /** Environment variables for the commands. Default: this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Timeout applied when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs?: number;
}

/**
 * Runs commands with a local `bash -c`. Mostly useful to exercise ShellFileOperations against
 * the same machine (contract tests, benchmarks); LocalFileOperations is the fast local path.
 */
export class LocalShellEnvironment implements Environment {
  readonly kind = "local-shell";
  private readonly shell: string;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly defaultTimeoutMs: number;

  constructor(options: LocalShellEnvironmentOptions = {}) {
    if (options.shell !== undefined && (typeof options.shell !== "string" || options.shell === "")) {
      throw new TypeError("LocalShellEnvironment: shell must be a non-empty executable name or path");
    }
    if (options.defaultTimeoutMs !== undefined && !(Number.isFinite(options.defaultTimeoutMs) && options.defaultTimeoutMs > 0)) {
      throw new TypeError("LocalShellEnvironment: defaultTimeoutMs must be a positive number");
    }
    this.shell = options.shell ?? "bash";
    this.env = options.env;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    checkExecOptions(options);
    return runProcess(this.shell, (path.basename(this.shell) === "bash" ? BASH_NO_RC : ["-c"]).concat(command), {
      ...options,
      timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs,
      env: options.env ?? this.env,
    });
  }

  async close(): Promise<void> {
    // Nothing is held between calls.
  }
}

/** Options of {@link LocalEnvironment}. */
export interface LocalEnvironmentOptions {
  /** Variables for commands whose call gives no `env`. Default: this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Timeout applied when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs?: number;
}

/** After SIGTERM (timeout or abort), how long the process group gets before SIGKILL. */
const LOCAL_KILL_GRACE_MS = 2_000;
/** After the shell exits, how long to wait for a detached (`setsid`) child still holding the pipes. */
const LOCAL_PIPE_DRAIN_MS = 250;

const localFileOps = new LocalFileOperations();

/**
 * This machine, unsandboxed: files through the native fs ({@link LocalFileOperations}),
 * commands with `bash -c` in their own process group. A timeout or abort sends SIGTERM to the
 * group, then SIGKILL 2 s later; when the shell exits, what is left of its group (background
 * jobs) is killed and the call answers at most 250 ms later even if a `setsid` child (which left
 * the group and cannot be reached) keeps the output pipes open. The default environment of
 * every part when no `environment` option is given.
 */
export class LocalEnvironment implements Environment {
  readonly kind = "local";
  readonly fileOps = localFileOps;
  readonly sandboxed = false;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly defaultTimeoutMs: number;

  constructor(options: LocalEnvironmentOptions = {}) {
    if (options === null || typeof options !== "object") throw new TypeError("LocalEnvironment: options must be an object");
    if (options.defaultTimeoutMs !== undefined && !(Number.isFinite(options.defaultTimeoutMs) && options.defaultTimeoutMs > 0)) {
      throw new TypeError("LocalEnvironment: defaultTimeoutMs must be a positive number");
    }
    this.env = options.env;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    checkExecOptions(options);
    if (typeof command !== "string") throw new TypeError("command must be a string");
    return runProcess("bash", BASH_NO_RC.concat(command), {
      ...options,
      env: options.env ?? this.env ?? process.env,
      timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs,
      killGraceMs: LOCAL_KILL_GRACE_MS,
      drainMs: LOCAL_PIPE_DRAIN_MS,
    });
  }

  async close(): Promise<void> {
    // Nothing is held between calls.
  }
}
