import { spawn } from "node:child_process";
import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";

/**
 * Runs `file args…` as a child process, feeds `stdin`, collects stdout (raw) and stderr, and
 * kills the whole process group on timeout (a pipeline such as `cut | sed` must not outlive it).
 * Shared by the local-shell and docker environments.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  options: Omit<ExecOptions, "env"> & { env?: NodeJS.ProcessEnv } = {},
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
      // Own process group, so a timeout can kill every process of the command line.
      detached: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    let settled = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killGroup(child.pid);
          }, options.timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    // The command may exit without reading all of stdin (e.g. it failed early): EPIPE is expected.
    child.stdin.on("error", () => undefined);
    child.on("error", (error) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve({
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr).toString("utf8"),
        exitCode: code ?? -1,
        timedOut,
      });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

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
    return runProcess(this.shell, ["-c", command], {
      ...options,
      timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs,
      env: this.env,
    });
  }

  async close(): Promise<void> {
    // Nothing is held between calls.
  }
}
