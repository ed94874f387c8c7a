import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { tool, type StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import { isDangerousCommand } from "./dangerousCommands.js";
import { markWorkbenchTool, workspaceFromConfig } from "./context.js";

export { isDangerousCommand } from "./dangerousCommands.js";

/** Default limit on how long a command may run. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 60;
/** Default cap on the characters of output returned to the model. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;
/** After SIGTERM, how long the process group gets before SIGKILL. */
const KILL_GRACE_MS = 2_000;
/** After the shell exits, how long to wait for background children still holding the pipes. */
const PIPE_DRAIN_MS = 250;

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
  /** The signal that ended the shell, if any. */
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** Characters produced in total (more than `output.length` when capped). */
  totalChars: number;
}

/**
 * Runs `command` with `bash -c` in its own process group (so a timeout kills every descendant,
 * not only the shell), stdin closed, output captured with a memory bound. Never rejects on the
 * command's behalf: spawn failures are reported in `output` with exit code `null`.
 */
export function runShellCommand(command: string, options: RunShellCommandOptions): Promise<ShellCommandResult> {
  return new Promise((resolve) => {
    const buffer = new HeadTailBuffer(options.maxOutputChars);
    let timedOut = false;
    let aborted = false;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

    const child = spawn("bash", ["-c", command], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });

    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // Group already gone.
      }
    };
    const stop = () => {
      killGroup("SIGTERM");
      killTimer ??= setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS);
    };
    const onAbort = () => {
      aborted = true;
      stop();
    };
    const timeout = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    if (options.signal?.aborted) onAbort();

    const decoders = [new StringDecoder("utf8"), new StringDecoder("utf8")] as const;
    child.stdout.on("data", (b: Buffer) => buffer.push(decoders[0].write(b)));
    child.stderr.on("data", (b: Buffer) => buffer.push(decoders[1].write(b)));

    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      options.signal?.removeEventListener("abort", onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      buffer.push(decoders[0].end() + decoders[1].end());
      resolve({
        output: buffer.toString(),
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        timedOut,
        aborted,
        totalChars: buffer.total,
      });
    };

    child.once("error", (err) => {
      buffer.push(`Could not start bash: ${err.message}`);
      finish();
    });
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      // Background children may keep the pipes open; do not wait for them indefinitely.
      drainTimer = setTimeout(finish, PIPE_DRAIN_MS);
    });
    child.once("close", finish);
  });
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
}

const runCommandOptionsSchema = z.object({
  rootDir: z.string().min(1).optional(),
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

  const runCommand = tool(
    async ({ command, timeout }, config) => {
      if (typeof command !== "string" || command.trim() === "") {
        return "Error: `command` is empty. Pass a bash command line, e.g. `ls -la`.";
      }
      const seconds = timeout ?? defaultTimeout;
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > maxTimeout) {
        return `Error: timeout must be between 1 and ${maxTimeout} seconds (got ${String(timeout)}). Omit it for the default of ${defaultTimeout} s.`;
      }
      if (!opts.allowDangerous) {
        const reason = isDangerousCommand(command);
        if (reason) {
          return `Error: command refused because ${reason}. It is outside what this workspace tool may do; work on files inside the workspace instead. If this is really needed, ask the user to run it.`;
        }
      }
      try {
        const ws = workspaceFromConfig(config, opts.rootDir);
        await ws.ensure();
        await mkdir(ws.dir, { recursive: true });
        const env = { ...scrubEnv(process.env), PWD: ws.dir, PAGER: "cat", GIT_PAGER: "cat", GIT_TERMINAL_PROMPT: "0", ...opts.env };
        const result = await runShellCommand(command, {
          cwd: ws.dir,
          env,
          timeoutMs: Math.round(seconds * 1000),
          maxOutputChars,
          signal: config?.signal,
        });
        return ws.rewrite(formatResult(result, seconds));
      } catch (err) {
        return `Error: could not run the command: ${(err as Error)?.message ?? String(err)}`;
      }
    },
    {
      name: "run_command",
      description:
        "Run a shell command (bash) in the workspace directory and get its combined stdout/stderr and exit code. " +
        `Output over ${maxOutputChars.toLocaleString("en-US")} characters keeps only its beginning and end. ` +
        "Commands that could damage the machine (rm -rf /, mkfs, dd to disks, curl | sh, shutdown…) are refused.",
      schema: runCommandInput,
    },
  );
  return markWorkbenchTool(runCommand) as unknown as StructuredTool;
}

function formatResult(r: ShellCommandResult, seconds: number): string {
  const body = r.output.length > 0 ? r.output.replace(/\s+$/, "") : "(no output)";
  let status: string;
  if (r.timedOut) status = `[timed out after ${seconds} s: the command and its child processes were killed. Pass a larger timeout or run less at once]`;
  else if (r.aborted) status = "[cancelled: the run was aborted and the command was killed]";
  else if (r.exitCode !== null) status = `[exit code ${r.exitCode}]`;
  else status = `[killed by signal ${r.signal ?? "unknown"}]`;
  return `${body}\n${status}`;
}
