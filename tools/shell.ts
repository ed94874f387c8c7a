import { existsSync } from "node:fs";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { tool, type StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import type { Environment, EnvironmentOption } from "../src/fileops/environment.js";
import { shellQuote } from "../src/fileops/quote.js";
import { commandEnvironmentFor, defaultSandboxEnv, type CommandEnvironment } from "../src/fileops/sandbox.js";
import { defaultLocalEnvironment, isEnvironmentOption, isLocalEnvironment, ThreadEnvironments, ENVIRONMENT_OPTION_MESSAGE } from "../src/fileops/threadEnvironment.js";
import type { FileOperations } from "../src/fileops/types.js";
import { redactSecrets } from "../src/guards/redact.js";
import { resolveRootDir, type Workspace } from "../src/workspace.js";
import { isDangerousCommand } from "./dangerousCommands.js";
import { markWorkbenchTool, workspaceFromConfig } from "../src/context/thread.js";

export { isDangerousCommand } from "./dangerousCommands.js";

/** Default limit on how long a command may run. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 60;
/** Default cap on the characters of output returned to the model. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;

/** Names that look like credentials (`OPENAI_API_KEY`, `GITHUB_TOKEN`, `DB_PASSWORD`, `SSH_AUTH_SOCK`…). */
const SECRET_NAME = /API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE_?KEY|ACCESS_?KEY|_KEY$|^KEY$|AUTH/i;
/** Values that embed credentials, e.g. `postgres://user:pass@host/db`. */
const SECRET_VALUE = /\b[a-z][\w+.-]*:\/\/[^\s/:@]+:[^\s/@]+@/i;
/** Never scrubbed, whatever they look like: the child needs them to run at all. */
const ALWAYS_KEEP = new Set(["PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR", "PWD"]);

/**
 * A copy of `env` without variables that look like secrets (by name or by a credential-bearing
 * URL value). The agent's commands can print their environment; keys must not reach the model.
 */
export function scrubEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const keep = ALWAYS_KEEP.has(name) || name.startsWith("LC_") || (!SECRET_NAME.test(name) && !SECRET_VALUE.test(value));
    if (keep) out[name] = value;
  }
  return out;
}

/** Keeps the first and last halves of a stream of text within a fixed memory bound. */
class HeadTailBuffer {
  private head = "";
  private tail: string[] = [];
  private tailLength = 0;
  total = 0;
  private readonly headMax: number;
  private readonly tailMax: number;

  constructor(readonly max: number) {
    this.headMax = Math.ceil(max / 2);
    this.tailMax = Math.floor(max / 2);
  }

  push(text: string): void {
    if (!text) return;
    this.total += text.length;
    if (this.head.length < this.headMax) {
      const take = this.headMax - this.head.length;
      this.head += text.slice(0, take);
      text = text.slice(take);
    }
    if (!text) return;
    this.tail.push(text);
    this.tailLength += text.length;
    // Compacting only past twice the bound keeps pushes amortised O(1) and memory O(max).
    if (this.tailLength > 2 * this.tailMax + 65_536) this.compact();
  }

  private compact(): void {
    const kept = this.tail.join("").slice(-this.tailMax);
    this.tail = [kept];
    this.tailLength = kept.length;
  }

  toString(): string {
    const tail = this.tail.join("");
    if (this.total <= this.max) return this.head + tail;
    const kept = this.tailMax > 0 ? tail.slice(-this.tailMax) : "";
    const omitted = this.total - this.head.length - kept.length;
    return (
      `${this.head}\n\n[… ${omitted.toLocaleString("en-US")} characters omitted from the middle of the output. ` +
      `To see all of it, redirect to a file (cmd > out.txt 2>&1) and search or read that file in parts …]\n\n${kept}`
    );
  }
}

/** Options of {@link runShellCommand}. */
export interface RunShellCommandOptions {
  /** Working directory (absolute system path). */
  cwd: string;
  /** Kill the whole process group after this many milliseconds. */
  timeoutMs: number;
  /** Cap on returned output characters (head and tail kept, middle elided). */
  maxOutputChars: number;
  /** Environment of the child (scrub it first). */
  env: Record<string, string>;
  /** Aborting kills the process group. */
  signal?: AbortSignal;
}

/** What {@link runShellCommand} observed. */
export interface ShellCommandResult {
  /** stdout and stderr interleaved in arrival order, capped. */
  output: string;
  /** Exit code, or `null` when the shell was killed by a signal. */
  exitCode: number | null;
  /** The signal that ended the shell, if any (`null` when unknown). */
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** Characters produced in total (more than `output.length` when capped). */
  totalChars: number;
  /** The environment could not run the command at all (spawn or connection failure, told in `output`). */
  notStarted?: boolean;
}

/**
 * Runs `command` in `environment` with stdin closed, streaming its output into a head-and-tail
 * buffer (memory stays O(maxOutputChars) whatever the command prints). Never rejects on the
 * command's behalf: a failure to start is reported in `output` with exit code `null`.
 */
export async function execCapped(
  environment: Environment,
  command: string,
  options: { cwd: string; timeoutMs: number; maxOutputChars: number; env?: Record<string, string>; signal?: AbortSignal },
): Promise<ShellCommandResult> {
  const buffer = new HeadTailBuffer(options.maxOutputChars);
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  let streamed = false;
  try {
    const result = await environment.exec(command, {
      cwd: options.cwd,
      timeoutMs: options.timeoutMs,
      ...(options.env ? { env: options.env } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      onOutput: (chunk, stream) => {
        streamed = true;
        buffer.push(decoders[stream].write(chunk));
      },
    });
    buffer.push(decoders.stdout.end() + decoders.stderr.end());
    // An environment that ignores onOutput still answers with buffered output.
    if (!streamed) buffer.push(result.stdout.toString("utf8") + result.stderr);
    const aborted = result.aborted === true || (options.signal?.aborted === true && !result.timedOut);
    return {
      output: buffer.toString(),
      exitCode: result.exitCode >= 0 && !result.timedOut && !aborted ? result.exitCode : null,
      signal: null,
      timedOut: result.timedOut,
      aborted,
      totalChars: buffer.total,
    };
  } catch (err) {
    buffer.push(`Could not run the command: ${(err as Error)?.message ?? String(err)}`);
    return { output: buffer.toString(), exitCode: null, signal: null, timedOut: false, aborted: false, totalChars: buffer.total, notStarted: true };
  }
}

/**
 * Runs `command` with `bash -c` on this machine ({@link LocalEnvironment}: own process group,
 * so a timeout kills every descendant, not only the shell), stdin closed, output captured with a
 * memory bound. Never rejects on the command's behalf.
 */
export function runShellCommand(command: string, options: RunShellCommandOptions): Promise<ShellCommandResult> {
  return execCapped(defaultLocalEnvironment(), command, options);
}

/** How commands on this machine are isolated (`shell` options of run_command and WorkbenchBackend.execute). */
export interface CommandSandboxOptions {
  /**
   * `"auto"` (default): each command runs in a bubblewrap sandbox when bwrap works here (see
   * README "Local sandbox"), else unsandboxed with one warning when the tool is built and a note
   * in every result. `"required"`: never run unsandboxed (building the tool throws when bwrap is
   * missing; a failed probe refuses each call). `"off"`: run on the host, explicitly.
   * Only for commands on this machine: a configured `environment` (container, SSH host) is its
   * own isolation.
   */
  sandbox?: "auto" | "required" | "off";
  /** Let sandboxed commands use the network (default false: no network at all). */
  network?: boolean;
}

export const commandSandboxSchema = {
  sandbox: z.enum(["auto", "required", "off"]).optional(),
  network: z.boolean().optional(),
};

/**
 * Where a thread's commands run: the configured environment, else this machine — sandboxed by
 * default ({@link commandEnvironmentFor}). The one place that makes this choice.
 */
export async function commandEnvironmentForThread(environments: ThreadEnvironments, ws: Workspace, shell: CommandSandboxOptions = {}): Promise<CommandEnvironment> {
  if (environments.environment !== undefined) {
    const environment = await environments.environmentFor(ws.threadId);
    return { environment, sandboxed: environment.sandboxed === true };
  }
  return commandEnvironmentFor(ws.dir, { sandbox: shell.sandbox ?? "auto", ...(shell.network === undefined ? {} : { network: shell.network }) });
}

/**
 * Checks at build time what can be checked synchronously and starts the sandbox probe, so the
 * one "unsandboxed" warning appears when the tools are built, not at the first call.
 */
export function prepareCommandSandbox(shell: CommandSandboxOptions, hasEnvironment: boolean, rootDir?: string): void {
  if (hasEnvironment || shell.sandbox === "off") return;
  if (shell.sandbox === "required" && !bwrapOnPath()) {
    throw new Error(
      'shell.sandbox is "required" but bwrap (bubblewrap) is not installed. Install it (Debian/Ubuntu: apt-get install bubblewrap), or set shell.sandbox to "auto" or "off".',
    );
  }
  commandEnvironmentFor(resolveRootDir(rootDir), { sandbox: shell.sandbox ?? "auto" }).catch(() => undefined);
}

function bwrapOnPath(): boolean {
  return (process.env.PATH ?? "/usr/bin:/bin").split(path.delimiter).some((dir) => dir !== "" && existsSync(path.join(dir, "bwrap")));
}

/** Settings of {@link runAgentCommand}. */
export interface AgentCommandSettings {
  /** Where the command runs. */
  environment: Environment;
  /** The thread's file access (creates the thread directory where the command runs). */
  fileOps: FileOperations;
  /** The thread's workspace: the command's working directory; its paths are rewritten in the output. */
  workspace: Workspace;
  timeoutMs: number;
  maxOutputChars: number;
  /** Run commands the danger screen flags (only behind human approval). */
  allowDangerous?: boolean;
  /** Variables passed on purpose, added after scrubbing. */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** Mask secrets in the output (default true). */
  redact?: boolean;
}

/** What {@link runAgentCommand} answers. */
export type AgentCommandResult =
  | { refused: string }
  | (ShellCommandResult & { refused?: undefined; truncated: boolean });

/** Variables every agent command gets: no pager, no credential prompt. */
const AGENT_COMMAND_VARIABLES = { PAGER: "cat", GIT_PAGER: "cat", GIT_TERMINAL_PROMPT: "0" };

/**
 * One agent command line in a thread's environment, as `run_command` and WorkbenchBackend's
 * `execute` both run it: danger screen → thread directory created (through the environment's
 * file access) → exec with cwd = the thread directory, scrubbed variables, timeout, abort and a
 * bounded head-and-tail capture → secrets masked → host paths rewritten to workspace paths.
 */
export async function runAgentCommand(command: string, settings: AgentCommandSettings): Promise<AgentCommandResult> {
  if (!settings.allowDangerous) {
    const reason = isDangerousCommand(command);
    if (reason) {
      return {
        refused: `command refused because ${reason}. It is outside what this workspace tool may do; work on files inside the workspace instead. If this is really needed, ask the user to run it.`,
      };
    }
  }
  const ws = settings.workspace;
  await ws.ensure(settings.fileOps);
  // ensure() is memoised; the directory may have been deleted since.
  await settings.fileOps.mkdirp(ws.dir);
  const extra = { ...AGENT_COMMAND_VARIABLES, ...settings.env };
  let line = command;
  let env: Record<string, string> | undefined;
  if (isLocalEnvironment(settings.environment) && settings.environment.sandboxed === true) {
    // A sandbox sees none of the host's home or tools layout: a minimal, explicit environment.
    env = { ...defaultSandboxEnv(ws.dir), PWD: ws.dir, ...extra };
  } else if (isLocalEnvironment(settings.environment)) {
    env = { ...scrubEnv(process.env), PWD: ws.dir, ...extra };
  } else {
    // A remote host or container keeps its own PATH and HOME: only the chosen variables are set,
    // on the first line so the command's own line numbers stay the same.
    line = `export ${Object.entries(extra).map(([k, v]) => `${k}=${shellQuote(v)}`).join(" ")}; ${command}`;
  }
  const result = await execCapped(settings.environment, line, {
    cwd: ws.dir,
    timeoutMs: settings.timeoutMs,
    maxOutputChars: settings.maxOutputChars,
    ...(env ? { env } : {}),
    ...(settings.signal ? { signal: settings.signal } : {}),
  });
  const masked = settings.redact === false ? result.output : redactSecrets(result.output);
  return { ...result, output: ws.rewrite(masked), truncated: result.totalChars > result.output.length };
}

/** Options of the `run_command` tool. */
export interface RunCommandToolOptions {
  /** Workspace root (else `WORKBENCH_ROOT`, else `./agent_files`). */
  rootDir?: string;
  /** Default timeout in seconds when the model gives none. Default 60. */
  defaultTimeoutSeconds?: number;
  /** Largest timeout the model may ask for, in seconds. Default 600. */
  maxTimeoutSeconds?: number;
  /** Output cap in characters. Default 30,000. */
  maxOutputChars?: number;
  /**
   * Run commands that {@link isDangerousCommand} flags. Default false: they are refused. Set it
   * only when a human approves each call, e.g.
   * `humanInTheLoopMiddleware({ interruptOn: { run_command: { allowedDecisions: ["approve", "reject"] } } })`.
   */
  allowDangerous?: boolean;
  /** Extra variables for the child, added after scrubbing (so they are passed on purpose). */
  env?: Record<string, string>;
  /**
   * Where commands run: an Environment for every thread, or `(threadId) => Environment` for one
   * per thread (see `createWorkbench`). Default: this machine, sandboxed ({@link commandEnvironmentForThread}).
   */
  environment?: EnvironmentOption;
  /** File access used to create the thread directory (default: the environment's own). */
  fileOps?: FileOperations;
  /** Sandbox for commands on this machine: `"auto"` (default), `"required"` or `"off"`; see {@link CommandSandboxOptions}. */
  sandbox?: CommandSandboxOptions["sandbox"];
  /** Network inside the sandbox (default false). */
  network?: boolean;
}

const runCommandOptionsSchema = z.object({
  ...commandSandboxSchema,
  rootDir: z.string().min(1).optional(),
  environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
  fileOps: z.custom<FileOperations>((v) => typeof v === "object" && v !== null && typeof (v as FileOperations).mkdirp === "function", "fileOps must implement FileOperations").optional(),
  defaultTimeoutSeconds: z.number().positive().max(86_400).optional(),
  maxTimeoutSeconds: z.number().positive().max(86_400).optional(),
  maxOutputChars: z.number().int().min(200).optional(),
  allowDangerous: z.boolean().optional(),
  env: z.record(z.string(), z.string()).optional(),
});

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
 * from the child environment and refuses {@link isDangerousCommand} hits unless
 * `allowDangerous` is set.
 */
export function createRunCommandTool(options: RunCommandToolOptions = {}): StructuredTool {
  const parsed = runCommandOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw new TypeError(`Invalid run_command options: ${z.prettifyError(parsed.error)}`);
  const opts = parsed.data;
  const maxTimeout = opts.maxTimeoutSeconds ?? 600;
  const defaultTimeout = Math.min(opts.defaultTimeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS, maxTimeout);
  const maxOutputChars = opts.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const environments = new ThreadEnvironments({ environment: opts.environment });
  prepareCommandSandbox(opts, opts.environment !== undefined, opts.rootDir);

  const runCommand = tool(
    async ({ command, timeout }, config) => {
      if (typeof command !== "string" || command.trim() === "") {
        return withMeta("Error: `command` is empty. Pass a bash command line, e.g. `ls -la`.");
      }
      const seconds = timeout ?? defaultTimeout;
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > maxTimeout) {
        return withMeta(`Error: timeout must be between 1 and ${maxTimeout} seconds (got ${String(timeout)}). Omit it for the default of ${defaultTimeout} s.`);
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
        if (result.refused !== undefined) return withMeta(`Error: ${result.refused}`, meta);
        return withMeta(formatResult(result, seconds), meta);
      } catch (err) {
        return withMeta(`Error: could not run the command: ${(err as Error)?.message ?? String(err)}`);
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
function withMeta(content: string, meta: Record<string, unknown> = {}): [string, Record<string, unknown>] {
  return [content, meta];
}

function formatResult(r: ShellCommandResult, seconds: number): string {
  const body = r.output.length > 0 ? r.output.replace(/\s+$/, "") : "(no output)";
  let status: string;
  if (r.timedOut) status = `[timed out after ${seconds} s: the command and its child processes were killed. Pass a larger timeout or run less at once]`;
  else if (r.aborted) status = "[cancelled: the run was aborted and the command was killed]";
  else if (r.exitCode !== null) status = `[exit code ${r.exitCode}]`;
  else if (r.notStarted) status = "[the command could not be started]";
  else status = `[killed by signal ${r.signal ?? "unknown"}]`;
  return `${body}\n${status}`;
}
