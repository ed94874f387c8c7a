/**
 * Running one agent command line in a thread's environment: variable scrubbing, the bounded
 * head-and-tail capture, the sandbox choice and the danger screen. Shared by run_command and
 * WorkbenchBackend.execute.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import type { Environment } from "./environment.js";
import { shellQuote } from "./shellQuote.js";
import { commandEnvironmentFor, defaultSandboxEnv, SandboxEnvironment, sandboxLimitsSchema, type CommandEnvironment } from "./sandboxEnvironment.js";
import { protectedPathsOptionSchema } from "../guards/protectedPaths.js";
import { networkOptionSchema, secretsOptionSchema } from "./egressProxy.js";
import { defaultLocalEnvironment, isLocalEnvironment, type ThreadEnvironments } from "./threadEnvironment.js";
import type { FileOperations } from "./fileOperations.js";
import { redactSecrets } from "../guards/redact.js";
import { mountPathToHost } from "../rewrite/mountPath.js";
import { resolveRootDir, type Workspace } from "../workspace.js";
import { isDangerousCommand } from "../guards/commands.js";

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

/** The fields of {@link CommandSandboxOptions}, with their checks (spread into the schemas of run_command and WorkbenchBackend.execute). */
export const commandSandboxSchema = {
  /**
   * `"auto"` (default): each command runs in a bubblewrap sandbox when bwrap works here (see
   * README "Local sandbox"), else unsandboxed with one warning when the tool is built and a note
   * in every result. `"required"`: never run unsandboxed (building the tool throws when bwrap is
   * missing; a failed probe refuses each call). `"off"`: run on the host, explicitly.
   * Only for commands on this machine: a configured `environment` (container, SSH host) is its
   * own isolation.
   */
  sandbox: z.enum(["auto", "required", "off"]).optional(),
  /**
   * Network of sandboxed commands. `false` (default): none at all. `true`: the host's network.
   * `{ allow: [...], deny?, onEgress? }`: only the listed hosts, through the egress proxy
   * (README "Network and secrets in the sandbox"); needs the sandbox (never falls back to unsandboxed).
   */
  network: networkOptionSchema.optional(),
  /** Credentials commands see only as sentinels: `{ GITHUB_TOKEN: { value, hosts: ["api.github.com"] } }`. Needs an allow-list. */
  secrets: secretsOptionSchema.optional(),
  /**
   * Resource limits of each sandboxed command (processes, memoryBytes, cpuSeconds, fileSizeBytes,
   * tmpfsBytes, outputBytes); unset ones keep their defaults (`SANDBOX_LIMITS`, README "Local sandbox").
   */
  limits: sandboxLimitsSchema.optional(),
  /**
   * Workspace paths read-only in the sandbox (shell rc files, `.git/config`, `.git/hooks/`,
   * `.vscode/`…, see guards/protectedPaths.ts): `{ paths?, extra?, allowGitConfig?, protectAgentInstructions? }`, or `false`.
   */
  protectedPaths: protectedPathsOptionSchema.optional(),
};

/** How commands on this machine are isolated (`shell` options of run_command and WorkbenchBackend.execute): {@link commandSandboxSchema}'s input. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface CommandSandboxOptions extends z.input<z.ZodObject<typeof commandSandboxSchema>> {}

/**
 * Where a thread's commands run: the configured environment, else this machine — sandboxed by
 * default ({@link commandEnvironmentFor}). The one place that makes this choice.
 */
export async function commandEnvironmentForThread(environments: ThreadEnvironments, ws: Workspace, shell: CommandSandboxOptions = {}): Promise<CommandEnvironment> {
  if (environments.environment !== undefined) {
    const environment = await environments.environmentFor(ws.threadId);
    return { environment, sandboxed: environment.sandboxed === true };
  }
  return commandEnvironmentFor(ws.dir, {
    sandbox: shell.sandbox ?? "auto",
    ...(shell.network === undefined ? {} : { network: shell.network }),
    ...(shell.secrets === undefined ? {} : { secrets: shell.secrets }),
    ...(shell.limits === undefined ? {} : { limits: shell.limits }),
    ...(shell.protectedPaths === undefined ? {} : { protectedPaths: shell.protectedPaths }),
  });
}

/**
 * Checks at build time what can be checked synchronously and starts the sandbox probe, so the
 * one "unsandboxed" warning appears when the tools are built, not at the first call.
 */
export function prepareCommandSandbox(shell: CommandSandboxOptions, hasEnvironment: boolean, rootDir?: string): void {
  const egress = typeof shell.network === "object" || shell.secrets !== undefined;
  if (shell.secrets !== undefined && typeof shell.network !== "object") {
    throw new Error('shell.secrets need shell.network: { allow: [...] }: the egress proxy puts them into requests to their hosts.');
  }
  if (egress && hasEnvironment) {
    throw new Error("shell.network allow-lists and shell.secrets apply to the local bubblewrap sandbox, not to a configured environment (container, SSH host): configure that environment's network instead, e.g. DockerSandbox({ image, network: { allow: [...] }, secrets }).");
  }
  if (egress && shell.sandbox === "off") {
    throw new Error('shell.network allow-lists and shell.secrets need the sandbox, but shell.sandbox is "off". Set it to "auto" or "required".');
  }
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

/** The answer to an empty command line. */
const EMPTY_COMMAND_REFUSAL = "`command` is empty. Pass a bash command line, e.g. `ls -la`.";

/** Variables every agent command gets: no pager, no credential prompt. */
const AGENT_COMMAND_VARIABLES = { PAGER: "cat", GIT_PAGER: "cat", GIT_TERMINAL_PROMPT: "0" };

/**
 * One agent command line in a thread's environment, as `run_command` and WorkbenchBackend's
 * `execute` both run it: danger screen → thread directory created (through the environment's
 * file access) → exec with cwd = the thread directory, scrubbed variables, timeout, abort and a
 * bounded head-and-tail capture → secrets masked → host paths rewritten to workspace paths.
 */
export async function runAgentCommand(command: string, settings: AgentCommandSettings): Promise<AgentCommandResult> {
  if (typeof command !== "string" || command.trim() === "") return { refused: EMPTY_COMMAND_REFUSAL };
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
  // A bubblewrap sandbox shows the workspace at a neutral path; its output is mapped back below.
  const mountPath = settings.environment instanceof SandboxEnvironment ? settings.environment.mountPath : undefined;
  if (isLocalEnvironment(settings.environment) && settings.environment.sandboxed === true) {
    // A sandbox sees none of the host's home or tools layout: a minimal, explicit environment.
    const home = mountPath ?? ws.dir;
    env = { ...defaultSandboxEnv(home), PWD: home, ...extra };
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
  const hostSpelled = mountPath === undefined ? masked : mountPathToHost(masked, mountPath, ws.dir);
  return { ...result, output: ws.rewrite(hostSpelled), truncated: result.totalChars > result.output.length };
}
