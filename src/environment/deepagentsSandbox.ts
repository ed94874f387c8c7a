/**
 * An {@link Environment} on any deepagents sandbox provider (Modal, Daytona, LangSmith, Deno,
 * deepagents' own LocalShellBackend, a BaseSandbox subclass of your own): everything this
 * package builds on an Environment — file tools through ShellFileOperations, search, the tree,
 * run_command, time travel with `timeTravel: { remote: true }` — then runs where the provider runs.
 *
 * The provider protocol is narrow: `execute(command) → { output, exitCode, truncated }` with
 * stdout and stderr merged into one text, no stdin, no cwd, no timeout, no cancel; plus
 * `uploadFiles` / `downloadFiles` of bytes. Each `exec` is therefore one POSIX `sh` wrapper
 * script in one `execute`:
 * - the command runs in its own session (`setsid`), stdin from a file, stdout and stderr into
 *   files of a private temp directory (`<tempDir>/wb-exec-<random>`), so they stay apart and
 *   binary-safe;
 * - a watchdog in the sandbox kills the command's process group at the timeout, and leftovers
 *   in the group when it ends (a `setsid` of the command's own escapes that sweep);
 * - small stdin rides base64-encoded inside the script; small output comes back base64-encoded
 *   after a marker line carrying a per-call random tag (the command cannot forge it: its
 *   output goes to files), and the temp directory is removed in the same call;
 * - larger stdin is uploaded first (`uploadFiles`), larger output downloaded after
 *   (`downloadFiles`) and removed with one more `execute`; a provider without those methods gets
 *   both in chunks over `execute`.
 * So a call costs one round trip when stdin and output are under `inlineBytes`, two or three
 * otherwise, plus about ten short processes in the sandbox (mkdir, setsid, the watchdog, wc,
 * base64, rm). Abort sends a second `execute` that kills the call's process group.
 *
 * Needs in the sandbox: POSIX sh, coreutils (`base64`, `wc`, `head`, `mkdir`), `setsid`
 * (util-linux or busybox; without it only the command's own process is killed) — and GNU
 * coreutils/findutils for ShellFileOperations and time travel. Set the provider's own command
 * timeout above the longest `timeoutMs` you use, and its output cap above ~1.4 × `inlineBytes`.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { DEEPAGENTS_SANDBOX_LIMITS } from "../guards/limits.js";
import { parseOptions } from "../options.js";
import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";
import { withArgs } from "./shellQuote.js";

type MaybePromise<T> = T | Promise<T>;

/**
 * deepagents' sandbox protocol (`SandboxBackendProtocolV2`), the part this adapter uses; any
 * deepagents sandbox satisfies it. Declared here so this package does not load deepagents.
 */
export interface DeepAgentsSandbox {
  readonly id: string;
  execute(command: string): MaybePromise<{ output: string; exitCode: number | null; truncated: boolean }>;
  uploadFiles?(files: Array<[string, Uint8Array]>): MaybePromise<Array<{ path: string; error: string | null }>>;
  downloadFiles?(paths: string[]): MaybePromise<Array<{ path: string; content: Uint8Array | null; error: string | null }>>;
  close?(): MaybePromise<void>;
}

// Plain characters only: the wrapper splits `wc` output on spaces.
const absolutePath = z.string().regex(/^\/[A-Za-z0-9._/-]*$/, "must be an absolute path of letters, digits and ._-/");

/** Options of {@link DeepAgentsSandboxEnvironment}: one strict schema, unknown keys throw. */
export const deepAgentsSandboxOptionsSchema = z
  .object({
    /** Directory in the sandbox for each call's private temp directory. Default `/tmp`. */
    tempDir: absolutePath.default("/tmp"),
    /** Timeout of a call that gives none, in ms. Default 60,000. */
    defaultTimeoutMs: z.number().int().positive().default(60_000),
    /**
     * Whether commands run isolated from this process (reported by run_command). Default: true,
     * except for deepagents' LocalShellBackend (id `local-…`), which runs them on this machine.
     */
    sandboxed: z.boolean().optional(),
    /** Stdin, and stdout + stderr, up to this many bytes travel inside the one `execute`. Default 48 KiB. */
    inlineBytes: z.number().int().min(1024).max(96 * 1024).default(DEEPAGENTS_SANDBOX_LIMITS.inlineBytes),
    /** Stdout (and stderr) beyond this many bytes are cut in the sandbox. Default 256 MiB. */
    maxOutputBytes: z.number().int().positive().default(DEEPAGENTS_SANDBOX_LIMITS.outputBytes),
    /** `close()` also closes the sandbox (`sandbox.close()`). Default false: whoever made it closes it. */
    closeSandbox: z.boolean().default(false),
  })
  .strict();

export type DeepAgentsSandboxOptions = z.input<typeof deepAgentsSandboxOptionsSchema>;
type Settings = z.output<typeof deepAgentsSandboxOptionsSchema>;

/** How long a call waits for the provider to answer after its kill was sent (abort, backstop). */
const STOP_GRACE_MS = 10_000;
/** The client-side backstop beyond the in-sandbox watchdog, for a provider that never answers. */
const BACKSTOP_MS = 30_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The per-call wrapper. `$1` temp dir, `$2` tag, `$3` command, `$4` cwd or "", `$5` timeout in
 * seconds, `$6` stdin mode (i inline, f uploaded to `$1.in`, else none), `$7` inline stdin
 * base64, `$8` inline output limit, `$9` output cap, `$10` 1 when the rest are NAME=value (exact
 * environment). Its own diagnostics go nowhere: the provider's output holds only its report.
 */
const WRAPPER = `exec 2>/dev/null
wb_d=$1 wb_tag=$2 wb_c=$3 wb_cwd=$4 wb_t=$5 wb_in=$6 wb_b=$7 wb_inl=$8 wb_cap=$9 wb_x=\${10}
shift 10
wb_end() { printf '\\n%s E %s\\n' "$wb_tag" "$1"; rm -rf -- "$wb_d" "$wb_d.in"; exit 0; }
command -v base64 >/dev/null || wb_end "base64 is missing in the sandbox"
mkdir -m 700 -- "$wb_d" || wb_end "cannot create a temporary directory under the tempDir option"
case $wb_in in
  i) printf %s "$wb_b" | base64 -d > "$wb_d/in" || wb_end "stdin could not be decoded"; wb_i=$wb_d/in ;;
  f) wb_i=$wb_d.in ;;
  *) wb_i=/dev/null ;;
esac
wb_sh=sh wb_ss=
command -v bash >/dev/null && wb_sh=bash
command -v setsid >/dev/null && wb_ss=setsid
: > "$wb_d/out"
if [ -n "$wb_cwd" ] && ! cd -- "$wb_cwd" 2> "$wb_d/err"; then
  wb_rc=1
else
  if [ "$wb_x" = 1 ]; then
    \${wb_ss:+"$wb_ss"} env -i "$@" "$wb_sh" -c "$wb_c" < "$wb_i" > "$wb_d/out" 2> "$wb_d/err" &
  else
    \${wb_ss:+"$wb_ss"} "$wb_sh" -c "$wb_c" < "$wb_i" > "$wb_d/out" 2> "$wb_d/err" &
  fi
  wb_p=$!
  printf %s "$wb_p" > "$wb_d/pid"
  [ -e "$wb_d.abort" ] && { kill -9 -"$wb_p" || kill -9 "$wb_p"; }
  \${wb_ss:+"$wb_ss"} sh -c 'sleep "$1"; : > "$2/timedout"; kill -9 -"$3" 2>/dev/null || kill -9 "$3" 2>/dev/null' wb "$wb_t" "$wb_d" "$wb_p" < /dev/null > /dev/null &
  wb_w=$!
  wait "$wb_p"
  wb_rc=$?
  kill -9 -"$wb_w" || kill -9 "$wb_w"
  kill -9 -"$wb_p"
fi
wb_to=0
[ -e "$wb_d/timedout" ] && wb_to=1
wb_cut=0
set -- $(wc -c "$wb_d/out" "$wb_d/err")
wb_out=$1 wb_err=$3
for wb_f in out err; do
  eval "wb_n=\\$wb_$wb_f"
  if [ "$wb_n" -gt "$wb_cap" ]; then
    head -c "$wb_cap" "$wb_d/$wb_f" > "$wb_d/cut" && mv -f -- "$wb_d/cut" "$wb_d/$wb_f"
    wb_cut=1 wb_n=$wb_cap
  fi
  eval "wb_$wb_f=\\$wb_n"
done
printf '\\n%s R %s %s %s %s %s\\n' "$wb_tag" "$wb_rc" "$wb_to" "$wb_out" "$wb_err" "$wb_cut"
if [ $((wb_out + wb_err)) -le "$wb_inl" ]; then
  base64 < "$wb_d/out"
  printf '%s.\\n' "$wb_tag"
  base64 < "$wb_d/err"
  printf '%s!\\n' "$wb_tag"
  rm -rf -- "$wb_d" "$wb_d.in"
else
  printf '%s+\\n' "$wb_tag"
fi
exit 0`;

/** Kills call `$1`'s process group (or marks it, when the wrapper has not started it yet). */
const KILL = `exec 2>/dev/null
: > "$1.abort"
if [ -r "$1/pid" ]; then wb_p=$(cat "$1/pid"); kill -9 -"$wb_p" || kill -9 "$wb_p"; fi
exit 0`;

/** Removes call `$1`'s temp files. */
const CLEAN = `rm -rf -- "$1" "$1.in" "$1.abort" 2>/dev/null; exit 0`;

/** Appends chunk `$2` (base64) to `$1`; `$3` = 1 creates the file (refusing an existing one). */
const APPEND = `umask 077
if [ "$3" = 1 ]; then set -C; : > "$1" || exit 1; set +C; fi
printf %s "$2" | base64 -d >> "$1"`;

/** Prints bytes `$2`.. (`$3` of them) of `$1`, base64-encoded. */
const READ_CHUNK = `tail -c +$(($2 + 1)) -- "$1" | head -c "$3" | base64`;

/** What the wrapper reported. */
interface Report {
  exitCode: number;
  timedOut: boolean;
  outBytes: number;
  errBytes: number;
  cut: boolean;
  inline?: { stdout: Buffer; stderr: Buffer };
}

/**
 * An Environment over a deepagents sandbox. `kind` is `"deepagents-sandbox"`: a remote kind, so
 * file access goes through ShellFileOperations and changes are polled.
 *
 * @example
 * import { ModalSandbox } from "@langchain/modal";
 * const sandbox = await ModalSandbox.create({ imageName: "python:3.12-slim" });
 * const wb = createWorkbench({
 *   rootDir: "/workspace",
 *   environment: new DeepAgentsSandboxEnvironment(sandbox),
 *   timeTravel: { remote: true },
 * });
 */
export class DeepAgentsSandboxEnvironment implements Environment {
  readonly kind = "deepagents-sandbox";
  readonly sandboxed: boolean;
  private readonly settings: Settings;

  constructor(
    readonly sandbox: DeepAgentsSandbox,
    options: DeepAgentsSandboxOptions = {},
  ) {
    if (!sandbox || typeof sandbox.execute !== "function") {
      throw new TypeError("DeepAgentsSandboxEnvironment needs a deepagents sandbox: an object with execute(command) (and uploadFiles/downloadFiles)");
    }
    this.settings = parseOptions(deepAgentsSandboxOptionsSchema, options, "DeepAgentsSandboxEnvironment options");
    this.sandboxed = this.settings.sandboxed ?? !(typeof sandbox.id === "string" && sandbox.id.startsWith("local-"));
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    checkExecOptions(options);
    if (typeof command !== "string") throw new TypeError("exec command must be a string");
    if (command.includes("\0")) throw new TypeError("exec command must not contain NUL bytes");
    const envPairs = options.env === undefined ? undefined : envArgs(options.env);
    if (options.signal?.aborted) return { stdout: Buffer.alloc(0), stderr: "", exitCode: -1, timedOut: false, aborted: true };
    const { tempDir, inlineBytes, maxOutputBytes } = this.settings;
    const nonce = randomBytes(12).toString("hex");
    const dir = `${tempDir.replace(/\/+$/, "")}/wb-exec-${nonce}`;
    const tag = `@@WB-${nonce}`;
    const timeoutMs = options.timeoutMs ?? this.settings.defaultTimeoutMs;

    const stdin = options.stdin === undefined ? undefined : Buffer.isBuffer(options.stdin) ? options.stdin : Buffer.from(options.stdin, "utf8");
    let stdinMode = "";
    let inlineStdin = "";
    if (stdin && stdin.length > 0) {
      if (stdin.length <= inlineBytes) {
        stdinMode = "i";
        inlineStdin = stdin.toString("base64");
      } else {
        stdinMode = "f";
        await this.put(`${dir}.in`, stdin);
      }
    }
    const script = withArgs(WRAPPER, [
      dir,
      tag,
      command,
      options.cwd ?? "",
      (timeoutMs / 1000).toFixed(3),
      stdinMode,
      inlineStdin,
      String(inlineBytes),
      String(maxOutputBytes),
      envPairs ? "1" : "0",
      ...(envPairs ?? []),
    ]);

    let stopped: "timeout" | "abort" | undefined;
    let killed: Promise<unknown> | undefined;
    const run = this.execute(script);
    run.catch(() => undefined);
    let graceTimer: NodeJS.Timeout | undefined;
    let endWait: (value: undefined) => void = () => undefined;
    const halted = new Promise<undefined>((resolve) => (endWait = resolve));
    const halt = (why: "timeout" | "abort") => {
      if (stopped) return;
      stopped = why;
      killed = this.execute(withArgs(KILL, [dir])).catch(() => undefined);
      graceTimer = setTimeout(() => endWait(undefined), STOP_GRACE_MS);
    };
    const onAbort = () => halt("abort");
    const backstop = setTimeout(() => halt("timeout"), timeoutMs + BACKSTOP_MS);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    // The temp directory is left to remove when the call was stopped or its output downloaded.
    let clean = false;
    try {
      const response = await Promise.race([run, halted]).finally(() => {
        clearTimeout(backstop);
        clearTimeout(graceTimer);
        options.signal?.removeEventListener("abort", onAbort);
      });
      if (stopped) clean = true;
      const stoppedResult = (stdout: Buffer, stderr: string): ExecResult => ({
        stdout: options.onOutput ? Buffer.alloc(0) : stdout,
        stderr: options.onOutput ? "" : stderr,
        exitCode: -1,
        timedOut: stopped === "timeout",
        ...(stopped === "abort" ? { aborted: true } : {}),
      });
      if (response === undefined) return stoppedResult(Buffer.alloc(0), "");

      const report = parseReport(response.output, tag);
      if (typeof report === "string") {
        if (stopped) return stoppedResult(Buffer.alloc(0), "");
        // The wrapper did not finish (the provider's own timeout?): kill what it started.
        clean = true;
        killed = this.execute(withArgs(KILL, [dir])).catch(() => undefined);
        throw new Error(`${this.kind} ${this.sandbox.id}: ${report}`);
      }
      let stdout: Buffer;
      let stderrBytes: Buffer;
      if (report.inline) {
        ({ stdout, stderr: stderrBytes } = report.inline);
      } else {
        clean = true;
        const [out, err] = await this.get([`${dir}/out`, `${dir}/err`], [report.outBytes, report.errBytes]);
        stdout = out ?? Buffer.alloc(0);
        stderrBytes = err ?? Buffer.alloc(0);
      }
      let stderr = stderrBytes.toString("utf8");
      if (report.cut) stderr += `\n[output cut at ${maxOutputBytes} bytes in the sandbox]\n`;
      if (stopped) return stoppedResult(stdout, stderr);
      if (options.onOutput) {
        if (stdout.length) options.onOutput(stdout, "stdout");
        if (stderr.length) options.onOutput(Buffer.from(stderr, "utf8"), "stderr");
        stdout = Buffer.alloc(0);
        stderr = "";
      }
      return { stdout, stderr, exitCode: report.timedOut ? -1 : report.exitCode, timedOut: report.timedOut };
    } finally {
      if (clean) void Promise.resolve(killed).then(() => this.execute(withArgs(CLEAN, [dir]))).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    if (this.settings.closeSandbox) await this.sandbox.close?.();
  }

  /** The provider's `execute`, a synchronous throw included, as a promise. */
  private execute(script: string): Promise<{ output: string; exitCode: number | null; truncated: boolean }> {
    try {
      return Promise.resolve(this.sandbox.execute(script)).then((r) => {
        if (!r || typeof r.output !== "string") throw new Error(`${this.kind} ${this.sandbox.id}: execute returned no output string`);
        return r;
      });
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Puts `data` at `path` in the sandbox: `uploadFiles`, else base64 chunks over `execute`. */
  private async put(path: string, data: Buffer): Promise<void> {
    if (typeof this.sandbox.uploadFiles === "function") {
      const [answer] = await this.sandbox.uploadFiles([[path, new Uint8Array(data.buffer, data.byteOffset, data.length)]]);
      if (answer?.error === null) return;
      throw new Error(`${this.kind} ${this.sandbox.id}: uploading stdin failed (${answer?.error ?? "no answer"})`);
    }
    for (let offset = 0; offset < data.length || offset === 0; offset += this.settings.inlineBytes) {
      const chunk = data.subarray(offset, offset + this.settings.inlineBytes).toString("base64");
      const r = await this.execute(withArgs(APPEND, [path, chunk, offset === 0 ? "1" : "0"]));
      if (r.exitCode !== 0 && r.exitCode !== null) throw new Error(`${this.kind} ${this.sandbox.id}: writing stdin failed (exit ${r.exitCode})`);
      if (data.length === 0) break;
    }
  }

  /** Reads files of known sizes: `downloadFiles`, else base64 chunks over `execute`. */
  private async get(paths: string[], sizes: number[]): Promise<Buffer[]> {
    if (typeof this.sandbox.downloadFiles === "function") {
      const answers = await this.sandbox.downloadFiles(paths);
      return paths.map((p, i) => {
        const answer = answers[i];
        if (!answer?.content || answer.error !== null) throw new Error(`${this.kind} ${this.sandbox.id}: downloading output failed (${answer?.error ?? "no answer"})`);
        return Buffer.from(answer.content.buffer, answer.content.byteOffset, answer.content.byteLength);
      });
    }
    const out: Buffer[] = [];
    for (const [i, p] of paths.entries()) {
      const parts: Buffer[] = [];
      for (let offset = 0; offset < sizes[i]!; offset += this.settings.inlineBytes) {
        const r = await this.execute(withArgs(READ_CHUNK, [p, String(offset), String(this.settings.inlineBytes)]));
        if (r.truncated) throw new Error(`${this.kind} ${this.sandbox.id}: the provider cut a chunk of output; lower the inlineBytes option`);
        parts.push(Buffer.from(r.output.replace(/[^A-Za-z0-9+/=]/g, ""), "base64"));
      }
      out.push(Buffer.concat(parts));
    }
    return out;
  }
}

/** `NAME=value` arguments for `env -i`, names checked (a value is an argument: quoted, never parsed). */
function envArgs(env: Record<string, string>): string[] {
  return Object.entries(env).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw new TypeError(`exec option env: invalid variable name ${JSON.stringify(name)}`);
    if (value.includes("\0")) throw new TypeError(`exec option env: ${name} must not contain NUL bytes`);
    return `${name}=${value}`;
  });
}

/**
 * The wrapper's report in the provider's output (hostile text: found by the call's random tag
 * with indexOf, never a pattern over the whole output). A string says why there is none.
 */
function parseReport(output: string, tag: string): Report | string {
  const head = output.lastIndexOf(`\n${tag} `);
  if (head < 0) {
    return `the sandbox ended the call without the adapter's report (the provider's own timeout or output limit?): ${output.slice(0, 300)}`;
  }
  const lineEnd = output.indexOf("\n", head + 1);
  const line = output.slice(head + 1 + tag.length + 1, lineEnd < 0 ? undefined : lineEnd);
  if (line.startsWith("E ")) return `could not run the command: ${line.slice(2)}`;
  const fields = line.split(" ");
  if (fields[0] !== "R" || fields.length !== 6 || lineEnd < 0) return `unreadable report from the sandbox: ${line.slice(0, 200)}`;
  const [exitCode, timedOut, outBytes, errBytes, cut] = fields.slice(1).map(Number) as [number, number, number, number, number];
  const report: Report = { exitCode, timedOut: timedOut === 1, outBytes, errBytes, cut: cut === 1 };
  const rest = output.slice(lineEnd + 1);
  if (rest.startsWith(`${tag}+`)) return report;
  const mid = rest.indexOf(`${tag}.\n`);
  const end = rest.indexOf(`${tag}!`, mid + 1);
  if (mid < 0 || end < 0) return "the provider cut the call's output (lower the inlineBytes option below its output limit)";
  const stdout = Buffer.from(rest.slice(0, mid), "base64");
  const stderr = Buffer.from(rest.slice(mid + tag.length + 2, end), "base64");
  if (stdout.length !== outBytes || stderr.length !== errBytes) return "the call's output arrived damaged (sizes differ from the report)";
  return { ...report, inline: { stdout, stderr } };
}
