/**
 * A long-lived command with an open stdin and a streamed stdout: what a request/response agent
 * inside an environment needs (ShellFileOperations runs its operations through one, so a tool
 * call's sequence of stat/realpath/read costs one process start instead of one per step).
 * Optional: environments that can offer it implement {@link ChannelEnvironment.openChannel}.
 */
import type { Environment } from "./environment.js";

export interface ExecChannel {
  /** Sends bytes to the command's stdin. */
  write(data: Buffer): void;
  /** Closes stdin: a well-behaved agent exits at end of input. */
  end(): void;
  /** Stops the command now, with every process it started. */
  kill(): void;
  /** Keeps (true) or stops keeping (false) this process alive while the channel is open. */
  hold(on: boolean): void;
  /** Resolves when the command has ended, with its exit status and (bounded) stderr. */
  readonly ended: Promise<{ exitCode: number; stderr: string }>;
}

export interface ChannelEnvironment extends Environment {
  /** Starts `command` (a POSIX sh script); `onStdout` gets its output as it arrives. */
  openChannel(command: string, onStdout: (chunk: Buffer) => void): Promise<ExecChannel>;
}

export function hasChannel(env: Environment): env is ChannelEnvironment {
  return typeof (env as Partial<ChannelEnvironment>).openChannel === "function";
}
