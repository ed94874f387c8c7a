/** The `run_command` tool: a thin tool over runAgentCommand (src/environment/runShellCommand.ts). */
import type { ToolMessage } from "@langchain/core/messages";
import { tool, type StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import { workspaceFromConfig } from "../src/context/thread.js";
import { describeThrown, markWorkbenchTool, toolError } from "./toolResult.js";
import {
  commandEnvironmentForThread,
  commandSandboxSchema,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  DEFAULT_MAX_OUTPUT_CHARS,
  prepareCommandSandbox,
  runAgentCommand,
  type ShellCommandResult,
} from "../src/environment/runShellCommand.js";
import type { EnvironmentOption } from "../src/environment/environment.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption, ThreadEnvironments } from "../src/environment/threadEnvironment.js";
import { sharedEnvironmentsOf } from "../src/environment/sharedEnvironments.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { assertUsableRootDir, rootDirIsLocal } from "../src/environment/rootDir.js";
import { resolveRootDir } from "../src/workspace.js";
import { parseOptions } from "../src/options.js";

/** The checks on {@link RunCommandToolOptions} (strict: an unknown key throws, naming the accepted ones). */
export const runCommandOptionsSchema = z.strictObject({
  ...commandSandboxSchema,
  /** Workspace root (else `WORKBENCH_ROOT`, else `./agent_files`). */
  rootDir: z.string().min(1).optional(),
  /**
   * Where commands run: an Environment for every thread, or `(threadId) => Environment` for one
   * per thread (see `createWorkbench`). Default: this machine, sandboxed ({@link commandEnvironmentForThread}).
   */
  environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
  /** File access used to create the thread directory (default: the environment's own). */
  fileOps: z.custom<FileOperations>((v) => typeof v === "object" && v !== null && typeof (v as FileOperations).mkdirp === "function", "fileOps must implement FileOperations").optional(),
  /** Default timeout in seconds when the model gives none. Default 60. */
  defaultTimeoutSeconds: z.number().positive().max(86_400).optional(),
  /** Largest timeout the model may ask for, in seconds. Default 600. */
  maxTimeoutSeconds: z.number().positive().max(86_400).optional(),
  /** Output cap in characters. Default 30,000. */
  maxOutputChars: z.number().int().min(200).optional(),
  /**
   * Run commands that `isDangerousCommand` flags. Default false: they are refused. Set it
   * only when a human approves each call, e.g.
   * `humanInTheLoopMiddleware({ interruptOn: { run_command: { allowedDecisions: ["approve", "reject"] } } })`.
   */
  allowDangerous: z.boolean().optional(),
  /** Extra variables for the child, added after scrubbing (so they are passed on purpose). */
  env: z.record(z.string(), z.string()).optional(),
});

/** Options of the `run_command` tool: the schema's input (its sandbox fields are `CommandSandboxOptions`'s). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface RunCommandToolOptions extends z.input<typeof runCommandOptionsSchema> {}

const runCommandInput = z.object({
  command: z
    .string()
    .describe(
      "A bash command line, run with `bash -c` in the workspace directory (relative paths are inside the workspace). " +
        "No stdin: use non-interactive flags (e.g. `-y`). Prefer file tools for reading and editing files.",
    ),
  timeout: z
    .number()
    .optional()
    .describe("Seconds before the command and all its child processes are killed. Default 60. Raise it for builds or installs."),
});

/**
 * The `run_command` tool: the terminal fallback for what the file tools cannot do. Runs in the
 * calling thread's workspace (`configurable.thread_id`), kills the whole process group on
 * timeout, caps output (head and tail), reports the exit code, scrubs secret-looking variables
 * from the child environment and refuses `isDangerousCommand` hits unless
 * `allowDangerous` is set.
 */
export function createRunCommandTool(options: RunCommandToolOptions = {}): StructuredTool {
  // createWorkbench's one view of the environments (used when `options` names no environment of its own).
  const shared = sharedEnvironmentsOf(options);
  const parsed = parseOptions(runCommandOptionsSchema, options ?? {}, "Invalid run_command options");
  const environment = parsed.environment ?? shared?.environment;
  const opts = environment === undefined ? parsed : { ...parsed, environment };
  const maxTimeout = opts.maxTimeoutSeconds ?? 600;
  const defaultTimeout = Math.min(opts.defaultTimeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS, maxTimeout);
  const maxOutputChars = opts.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  assertUsableRootDir(resolveRootDir(opts.rootDir), { local: rootDirIsLocal(opts) });
  const environments = parsed.environment === undefined && shared ? shared : new ThreadEnvironments({ environment: opts.environment });
  prepareCommandSandbox(opts, opts.environment !== undefined, opts.rootDir);

  const runCommand = tool(
    async ({ command, timeout }, config) => {
      const seconds = timeout ?? defaultTimeout;
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > maxTimeout) {
        return failure(config, `timeout must be between 1 and ${maxTimeout} seconds (got ${String(timeout)}). Omit it for the default of ${defaultTimeout} s`);
      }
      try {
        const ws = workspaceFromConfig(config, opts.rootDir);
        const chosen = await commandEnvironmentForThread(environments, ws, opts);
        const meta = { sandboxed: chosen.sandboxed, environment: chosen.environment.kind, ...(chosen.reason ? { note: chosen.reason } : {}) };
        const result = await runAgentCommand(command, {
          environment: chosen.environment,
          fileOps: opts.fileOps ?? (await environments.fileOpsFor(ws.threadId)),
          workspace: ws,
          timeoutMs: Math.round(seconds * 1000),
          maxOutputChars,
          allowDangerous: opts.allowDangerous,
          env: opts.env,
          signal: config?.signal,
        });
        if (result.refused !== undefined) return failure(config, result.refused, {}, meta);
        const failed = failureOf(result, seconds);
        if (failed) return failure(config, failed, { output: outputOf(result) }, meta);
        return withMeta(`${outputOf(result)}\n${exitStatus(result)}`, meta);
      } catch (err) {
        return failure(config, `could not run the command: ${describeThrown(err)}. ${RETRY_HINT}`);
      }
    },
    {
      name: "run_command",
      // The artifact carries how the command ran ({ sandboxed, environment, note }) for the app;
      // the model sees only the content.
      responseFormat: "content_and_artifact",
      description:
        "Run a shell command (bash) in the workspace directory and get its combined stdout/stderr and exit code. " +
        `Output over ${maxOutputChars.toLocaleString("en-US")} characters keeps only its beginning and end. ` +
        "Commands that could damage the machine (rm -rf /, mkfs, dd to disks, curl | sh, shutdown…) are refused.",
      schema: runCommandInput,
    },
  );
  return markWorkbenchTool(runCommand) as unknown as StructuredTool;
}

/** run_command's answer: the text for the model and, as the ToolMessage artifact, how it ran. */
function withMeta(content: string | ToolMessage, meta: Record<string, unknown> = {}): [string | ToolMessage, Record<string, unknown>] {
  return [content, meta];
}

/**
 * run_command's failures, answered as tool errors (`status: "error"`): the call could not be
 * carried out as asked and must change — refused by the screen or empty (runAgentCommand), a
 * timeout out of range, could not start, timed out (killed before it finished: a larger timeout
 * or a smaller step; its partial output is kept) or cancelled with the run. A command that ran to
 * its end is a result, whatever its exit code or the signal that ended it.
 */
function failureOf(r: ShellCommandResult, seconds: number): string | undefined {
  if (r.timedOut) return `timed out after ${seconds} s: the command and its child processes were killed. Pass a larger timeout or run less at once`;
  if (r.aborted) return "cancelled: the run was aborted and the command was killed";
  if (r.exitCode === null && r.notStarted) return `the command could not be started. ${RETRY_HINT}`;
  return undefined;
}

const RETRY_HINT = "Try again; if it keeps failing, commands cannot run here right now: tell the user";

function failure(config: unknown, message: string, details: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) {
  return withMeta(toolError("run_command", config, message, details, meta), meta);
}

function outputOf(r: ShellCommandResult): string {
  return r.output.length > 0 ? r.output.replace(/\s+$/, "") : "(no output)";
}

/** The status line under a finished command's output. */
function exitStatus(r: ShellCommandResult): string {
  return r.exitCode !== null ? `[exit code ${r.exitCode}]` : `[killed by signal ${r.signal ?? "unknown"}]`;
}
