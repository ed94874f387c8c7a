/**
 * The unit of "where": a thread's files, its search, its terminal and its tree all live in one
 * Environment (the local machine, a bubblewrap sandbox, a Docker container, an SSH host). An
 * Environment runs a command line in a POSIX shell and reports what happened, and may offer a
 * native {@link FileOperations} for its file system; without one, ShellFileOperations over
 * `exec` is used. Paths are the same strings in every environment: the thread directory
 * `ROOT/<thread>` has one absolute path, valid wherever the thread's commands run.
 */
import type { FileOperations } from "./fileOperations.js";

export interface ExecOptions {
  /** Working directory for the command (absolute path on the target). */
  cwd?: string;
  /** Kill the command after this many milliseconds; the result then has `timedOut: true`. */
  timeoutMs?: number;
  /** Bytes written to the command's stdin, then stdin is closed (content never goes in argv). */
  stdin?: string | Buffer;
  /**
   * The command's environment variables, exactly (already scrubbed by the caller). Default: the
   * environment's own configured variables.
   */
  env?: Record<string, string>;
  /** Aborting kills the command and everything it started, like a timeout. */
  signal?: AbortSignal;
  /**
   * Streams output as it arrives (stdout and stderr interleaved in arrival order). When given,
   * the environment does not buffer output: `ExecResult.stdout` is empty and `stderr` is "",
   * so a command that prints gigabytes costs the caller only what it keeps.
   */
  onOutput?: (chunk: Buffer, stream: "stdout" | "stderr") => void;
}

export interface ExecResult {
  /** Raw stdout: file content may be binary, so it is not decoded here. */
  stdout: Buffer;
  /** stderr decoded as UTF-8 (diagnostics only). */
  stderr: string;
  /** Exit status; `-1` when the command was killed by a signal or the channel ended without one. */
  exitCode: number;
  /** True when `timeoutMs` elapsed and the command was killed. */
  timedOut: boolean;
  /** True when `signal` aborted the command. */
  aborted?: boolean;
}

export interface Environment {
  /** Short name used in `FileOperations.kind` ("local", "local-shell", "sandbox", "ssh", "docker"). */
  readonly kind: string;
  /**
   * Native file access to this environment's file system (LocalFileOperations for the local
   * machine and local sandboxes, SFTP for SSH). Absent: ShellFileOperations over `exec`.
   */
  readonly fileOps?: FileOperations;
  /**
   * True when commands run isolated from the host process (own PID namespace or container, no
   * view of other threads' directories or of the host's secrets). The shell tool reports
   * unsandboxed runs in its result metadata.
   */
  readonly sandboxed?: boolean;
  /**
   * Runs `command` with a POSIX shell (`bash -c`, the SSH user's shell, `sh -c` in a container).
   * Resolves for any exit status; rejects only when the command could not be run at all
   * (invalid options, spawn failure, SSH connection failure). When it resolves, no process the
   * command started is left running where the environment can prevent it (sandboxes and
   * containers kill their whole process tree; document what a given environment cannot reach).
   */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Releases connections or processes held by the environment. Safe to call more than once. */
  close?(): Promise<void>;
}

/**
 * A thread's environment, or a provider that gives one per thread (e.g. a container per
 * thread). A provider is called on every use: cache inside it (see DockerSandbox).
 */
export type EnvironmentProvider = (threadId: string) => Environment | Promise<Environment>;
/** What the `environment` option of every part accepts. */
export type EnvironmentOption = Environment | EnvironmentProvider;

/** Validates the shared exec options so every environment rejects the same bad input. */
export function checkExecOptions(options: ExecOptions | undefined): void {
  if (options === undefined) return;
  if (options.cwd !== undefined && (typeof options.cwd !== "string" || options.cwd === "" || options.cwd.includes("\0"))) {
    throw new TypeError("exec option cwd must be a non-empty string without NUL bytes");
  }
  if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
    throw new TypeError("exec option timeoutMs must be a positive number of milliseconds");
  }
  if (options.stdin !== undefined && typeof options.stdin !== "string" && !Buffer.isBuffer(options.stdin)) {
    throw new TypeError("exec option stdin must be a string or a Buffer");
  }
  if (options.env !== undefined && (typeof options.env !== "object" || options.env === null || Object.values(options.env).some((v) => typeof v !== "string"))) {
    throw new TypeError("exec option env must be an object of string values");
  }
  if (options.onOutput !== undefined && typeof options.onOutput !== "function") {
    throw new TypeError("exec option onOutput must be a function");
  }
}
