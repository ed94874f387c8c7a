/**
 * Where ShellFileOperations runs its commands: a local bash, an SSH host, a docker container.
 * An Environment only runs a command line in a POSIX shell and reports what happened; it never
 * interprets file-system semantics (that is ShellFileOperations' job).
 */

export interface ExecOptions {
  /** Working directory for the command (absolute path on the target). */
  cwd?: string;
  /** Kill the command after this many milliseconds; the result then has `timedOut: true`. */
  timeoutMs?: number;
  /** Bytes written to the command's stdin, then stdin is closed (content never goes in argv). */
  stdin?: string | Buffer;
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
}

export interface Environment {
  /** Short name used in `FileOperations.kind` ("local-shell", "ssh", "docker"). */
  readonly kind: string;
  /**
   * Runs `command` with a POSIX shell (`bash -c`, the SSH user's shell, `sh -c` in a container).
   * Resolves for any exit status; rejects only when the command could not be run at all
   * (invalid options, spawn failure, SSH connection failure).
   */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Releases connections or processes held by the environment. Safe to call more than once. */
  close?(): Promise<void>;
}

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
}
