/**
 * WorkbenchBackend's `execute`: deepagents' sandbox protocol over the one agent command runner
 * (src/environment/runShellCommand.ts), so a command runs exactly as `run_command` runs it — empty and
 * dangerous commands refused with the same words, scrubbed variables, timeout, output cap,
 * secrets masked, workspace paths. deepagents' execute tool adds the exit code line itself.
 */
import type { ExecuteResponse } from "deepagents";
import { commandEnvironmentForThread, DEFAULT_COMMAND_TIMEOUT_SECONDS, DEFAULT_MAX_OUTPUT_CHARS, prepareCommandSandbox, runAgentCommand } from "../environment/runShellCommand.js";
import type { ThreadEnvironments } from "../environment/threadEnvironment.js";
import type { Workspace } from "../workspace.js";
import type { WorkbenchExecuteOptions } from "./options.js";

/** What `execute` needs from the backend serving the call. */
export interface ExecuteHost {
  environments: ThreadEnvironments;
  redact: boolean;
  workspace(): Workspace;
}

/**
 * The `execute` member for `options` (checked when built: the sandbox probe starts and bad
 * sandbox settings throw now, not at the first call). `host()` is the backend serving a call.
 */
export function commandExecutor(options: WorkbenchExecuteOptions, hasEnvironment: boolean, rootDir: string): (host: ExecuteHost, command: string) => Promise<ExecuteResponse> {
  const seconds = options.timeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS;
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  prepareCommandSandbox(options, hasEnvironment, rootDir);
  return async (host, command) => {
    let ws: Workspace | undefined;
    try {
      ws = host.workspace();
      const chosen = await commandEnvironmentForThread(host.environments, ws, options);
      const result = await runAgentCommand(command, {
        environment: chosen.environment,
        fileOps: await host.environments.fileOpsFor(ws.threadId),
        workspace: ws,
        timeoutMs: Math.round(seconds * 1000),
        maxOutputChars,
        allowDangerous: options.allowDangerous,
        env: options.env,
        redact: host.redact,
      });
      if (result.refused !== undefined) return { output: `Error: ${result.refused}`, exitCode: null, truncated: false };
      // No "pass a larger timeout" (run_command's advice): deepagents' execute takes no timeout.
      const output = result.timedOut ? `${result.output}\n[timed out after ${seconds} s: the command and its child processes were killed]` : result.output;
      return { output, exitCode: result.exitCode, truncated: result.truncated };
    } catch (err) {
      const message = `Error: could not run the command: ${err instanceof Error ? err.message : String(err)}`;
      return { output: ws ? ws.rewrite(message) : message, exitCode: null, truncated: false };
    }
  };
}
