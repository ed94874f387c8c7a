/**
 * WorkbenchBackend: deepagents' `BackendProtocolV2` over this package's per-thread Workspace and
 * guarded file operations, so deepagents' own `ls`/`read_file`/`write_file`/`edit_file`/`glob`/
 * `grep`/`delete` tools inherit confinement, device-path and binary refusal, credential-file
 * protection and secret redaction — and never show a host path.
 *
 * Types come from `deepagents` as type-only imports: the package stays an optional peer.
 */
import path from "node:path";
import { getConfig } from "@langchain/langgraph";
import pLimit from "p-limit";
import type {
  BackendProtocolV2,
  BackendRuntime,
  DeleteResult,
  EditResult,
  FileInfo,
  GlobResult,
  GrepMatch,
  GrepResult,
  LsResult,
  ReadRawResult,
  ReadResult,
  ExecuteResponse,
  WriteResult,
} from "deepagents";
import { isAtomicTempName } from "../fileops/tempFiles.js";
import { hasBinaryExtension, SNIFF_BYTES, sniffBinary } from "../guards/binary.js";
import { mediaReadDecision } from "../guards/media.js";
import { PdfReadError } from "../media/pdf.js";
import { openForRead, pdfLines, type OpenedRead } from "../media/read.js";
import { accessOpenGuard, contentAccessReason, looksLikeDedupStub, writeAccessReason, type AccessPolicy } from "../guards/access.js";
import type { CredentialPattern } from "../guards/credentials.js";
import { devicePathReason, nonRegularFileReason } from "../guards/devices.js";
import { editInputProblem, editResultProblem, LIMITS } from "../guards/limits.js";
import { containsRedactionMarker, redactSecrets, secretEditReason, SECRET_EDIT_REFUSAL } from "../guards/redact.js";
import type { EnvironmentOption } from "../fileops/environment.js";
import { isLocalFileOperations, ThreadEnvironments } from "../fileops/threadEnvironment.js";
import { runJsSearch } from "../search/fallback.js";
import { detectRipgrep, runRipgrep } from "../search/ripgrep.js";
import type { SearchOutcome, SearchRequest } from "../search/types.js";
import { withPathLock } from "../fileops/lock.js";
import { OpenRefusedError, type FileOperations, type OpenGuard } from "../fileops/types.js";
import { dropHardLinkedResults, verifyReportedLines } from "../search/refused.js";
import { resolveRootDir, Workspace, WorkspacePathError } from "../workspace.js";
import { threadIdFromConfig } from "../context/thread.js";
import { commandEnvironmentForThread, DEFAULT_COMMAND_TIMEOUT_SECONDS, DEFAULT_MAX_OUTPUT_CHARS, prepareCommandSandbox, runAgentCommand, type CommandSandboxOptions } from "../fileops/command.js";
import { GlobLimitError, globMatcher } from "./glob.js";

/** Options of {@link WorkbenchBackend}. */
export interface WorkbenchBackendOptions {
  /** Root holding the thread directories (else `WORKBENCH_ROOT`, else `./agent_files`). */
  rootDir?: string;
  /**
   * Pin the backend to one thread. Unset (the usual case), each call uses the thread of the run
   * it serves (`configurable.thread_id`), so one backend instance serves every thread.
   */
  threadId?: string;
  /**
   * File operations (default: the environment's file access, else native local fs). Given with
   * `environment`, `fileOps` wins for file access and the environment runs `execute`.
   */
  fileOps?: FileOperations;
  /**
   * Where each thread's files are and its commands run: an Environment, or
   * `(threadId) => Environment` for one per thread. Default: this machine.
   */
  environment?: EnvironmentOption;
  /**
   * Implement deepagents' sandbox protocol (`execute` + `id`), so createDeepAgent adds its
   * `execute` tool, run in the thread's environment exactly as `run_command` runs (danger screen,
   * scrubbed variables, timeout, output cap, secret masking, workspace paths). Default false:
   * a shell reaches beyond the file guards; enable it deliberately.
   */
  execute?: boolean | WorkbenchExecuteOptions;
  /** Extra credential-file patterns (globs on the base name, or RegExps on the path). */
  credentialPatterns?: readonly CredentialPattern[];
  /** Redact secrets in read and grep output (default true). */
  redact?: boolean;
  /** Most characters one `read` returns before asking for a smaller window (default 100,000). */
  maxReadChars?: number;
  /** Lines longer than this are cut in `read` output (default 2,000). */
  maxLineChars?: number;
  /** Largest PNG/JPEG/GIF/WebP file `read` returns as image bytes, in bytes (default 5 MiB). */
  maxImageBytes?: number;
  /** Return images for deepagents' image blocks (default true); false refuses them with guidance. */
  readImages?: boolean;
  /** Most files `glob`/`grep` visit before reporting a truncated result (default 20,000). */
  maxWalkFiles?: number;
  /** Largest file `grep` searches, in bytes (default 5 MB). */
  maxGrepFileBytes?: number;
  /** Directory names `glob`/`grep` never enter (default `.git`, `node_modules`). */
  skipDirs?: readonly string[];
  /** Read files with more than one hard link (default false: refused; see README "Security model"). */
  allowHardLinks?: boolean;
}

/** Settings of {@link WorkbenchBackend}'s `execute`. */
export interface WorkbenchExecuteOptions {
  /** Seconds before a command and its children are killed (default 60). */
  timeoutSeconds?: number;
  /** Output cap in characters, head and tail kept (default 30,000). */
  maxOutputChars?: number;
  /** Run commands the danger screen refuses (only behind human approval). Default false. */
  allowDangerous?: boolean;
  /** Variables passed on purpose, added after scrubbing. */
  env?: Record<string, string>;
  /** Sandbox for commands on this machine (default `"auto"`), as run_command's `sandbox` option. */
  sandbox?: CommandSandboxOptions["sandbox"];
  /** Network inside the sandbox (default false). */
  network?: boolean;
}

const DEFAULTS = {
  maxReadChars: 100_000,
  maxLineChars: 2_000,
  maxWalkFiles: 20_000,
  maxGrepFileBytes: 5 * 1024 * 1024,
  skipDirs: [".git", "node_modules"],
};

const EMPTY_FILE_NOTE = "System reminder: File exists but has empty contents";

interface Target {
  ws: Workspace;
  /** The thread's file access. */
  ops: FileOperations;
  /** The agent path as deepagents shows it: `/`-rooted at the workspace. */
  shown: string;
  system: string;
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) throw new TypeError(`WorkbenchBackend: ${name} must be a positive integer`);
  return value;
}

/** Implements deepagents' `BackendProtocolV2` on a per-thread {@link Workspace}. */
export class WorkbenchBackend implements BackendProtocolV2 {
  private readonly rootDir: string;
  private readonly threadId: string | undefined;
  private readonly environments: ThreadEnvironments;
  private readonly credentialPatterns: readonly CredentialPattern[];
  private readonly redact: boolean;
  private readonly maxReadChars: number;
  private readonly maxLineChars: number;
  private readonly maxImageBytes: number;
  private readonly maxWalkFiles: number;
  private readonly maxGrepFileBytes: number;
  private readonly skipDirs: ReadonlySet<string>;
  private readonly allowHardLinks: boolean;
  /** Bounds concurrent stat calls (glob metadata). */
  private readonly io = pLimit(32);

  constructor(options: WorkbenchBackendOptions = {}) {
    if (typeof options !== "object" || options === null) throw new TypeError("WorkbenchBackend: options must be an object");
    this.rootDir = resolveRootDir(options.rootDir);
    this.threadId = options.threadId;
    this.environments = new ThreadEnvironments({ environment: options.environment, fileOps: options.fileOps });
    this.credentialPatterns = options.credentialPatterns ?? [];
    this.redact = options.redact ?? true;
    this.maxReadChars = positiveInt("maxReadChars", options.maxReadChars, DEFAULTS.maxReadChars);
    this.maxLineChars = positiveInt("maxLineChars", options.maxLineChars, DEFAULTS.maxLineChars);
    this.maxImageBytes = options.readImages === false ? 0 : positiveInt("maxImageBytes", options.maxImageBytes, LIMITS.imageMaxBytes);
    this.maxWalkFiles = positiveInt("maxWalkFiles", options.maxWalkFiles, DEFAULTS.maxWalkFiles);
    this.maxGrepFileBytes = positiveInt("maxGrepFileBytes", options.maxGrepFileBytes, DEFAULTS.maxGrepFileBytes);
    this.skipDirs = new Set(options.skipDirs ?? DEFAULTS.skipDirs);
    this.allowHardLinks = options.allowHardLinks === true;
    if (options.execute) this.enableExecute(options.execute === true ? {} : options.execute);
  }

  /**
   * deepagents' sandbox protocol, present only with the `execute` option (deepagents detects a
   * sandbox by these two members): runs `command` in the calling thread's environment with cwd =
   * its workspace, exactly as `run_command` does.
   */
  declare readonly execute?: (command: string) => Promise<ExecuteResponse>;
  /** Sandbox id for deepagents (`"workbench"`), present only with the `execute` option. */
  declare readonly id?: string;

  private enableExecute(options: WorkbenchExecuteOptions): void {
    if (typeof options !== "object" || options === null) throw new TypeError("WorkbenchBackend: execute must be true or an options object");
    const seconds = options.timeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS;
    if (!(Number.isFinite(seconds) && seconds > 0)) throw new TypeError("WorkbenchBackend: execute.timeoutSeconds must be a positive number");
    const maxOutputChars = positiveInt("execute.maxOutputChars", options.maxOutputChars, DEFAULT_MAX_OUTPUT_CHARS);
    if (options.sandbox !== undefined && !["auto", "required", "off"].includes(options.sandbox)) {
      throw new TypeError('WorkbenchBackend: execute.sandbox must be "auto", "required" or "off"');
    }
    prepareCommandSandbox(options, this.environments.environment !== undefined, this.rootDir);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- fallback for a detached call
    const owner = this;
    // A function, not an arrow: `this` is the backend it is called on (a forThread() pin).
    const execute = async function (this: WorkbenchBackend | undefined, command: string): Promise<ExecuteResponse> {
      const self = this instanceof WorkbenchBackend ? this : owner;
      if (typeof command !== "string" || command.trim() === "") {
        return { output: "Error: command is empty. Pass a shell command line, e.g. `ls -la`.", exitCode: null, truncated: false };
      }
      let ws: Workspace | undefined;
      try {
        ws = self.workspace();
        const chosen = await commandEnvironmentForThread(self.environments, ws, options);
        const result = await runAgentCommand(command, {
          environment: chosen.environment,
          fileOps: await self.environments.fileOpsFor(ws.threadId),
          workspace: ws,
          timeoutMs: Math.round(seconds * 1000),
          maxOutputChars,
          allowDangerous: options.allowDangerous,
          env: options.env,
          redact: self.redact,
        });
        if (result.refused !== undefined) return { output: `Error: ${result.refused}`, exitCode: null, truncated: false };
        let output = result.output;
        if (result.timedOut) output += `\n[timed out after ${seconds} s: the command and its child processes were killed]`;
        return { output, exitCode: result.exitCode, truncated: result.truncated };
      } catch (err) {
        const message = `Error: could not run the command: ${err instanceof Error ? err.message : String(err)}`;
        return { output: ws ? ws.rewrite(message) : message, exitCode: null, truncated: false };
      }
    };
    Object.defineProperty(this, "execute", { value: execute, enumerable: true });
    Object.defineProperty(this, "id", { value: "workbench", enumerable: true });
  }

  /**
   * A deepagents backend factory (`backend: WorkbenchBackend.factory({ rootDir })`) that binds
   * each call to the thread of the runtime deepagents passes in. Equivalent to passing an
   * instance, which reads the thread from the run's config itself.
   */
  static factory(options: Omit<WorkbenchBackendOptions, "threadId"> = {}): (runtime: BackendRuntime) => WorkbenchBackend {
    const shared = new WorkbenchBackend(options);
    return (runtime) => shared.forThread(threadIdFromConfig(runtime) ?? threadIdFromConfig(safeConfig()));
  }

  /** A backend with the same options pinned to `threadId`. */
  forThread(threadId: string | undefined): WorkbenchBackend {
    const pinned = Object.create(this) as WorkbenchBackend;
    Object.defineProperty(pinned, "threadId", { value: threadId });
    return pinned;
  }

  /** The workspace this call serves: the pinned thread, else the current run's thread. */
  workspace(): Workspace {
    return Workspace.forThread(this.rootDir, this.threadId ?? threadIdFromConfig(safeConfig()));
  }

  /** Lists a directory (not recursive): `/`-rooted paths, directories with a trailing `/`, sizes and mtimes. */
  async ls(dirPath: string): Promise<LsResult> {
    return this.guarded(dirPath || "/", async (t) => {
      const s = await t.ops.stat(t.system);
      if (!s) return { error: `Directory '${t.shown}' not found. Call ls("/") to see the workspace.` };
      if (s.type !== "directory") return { error: `'${t.shown}' is a file, not a directory. Use read_file to read it.` };
      const entries = (await t.ops.readdir(t.system)).filter((e) => !isAtomicTempName(e.name)).sort((a, b) => a.name.localeCompare(b.name));
      const files = await Promise.all(
        entries.map(async (e): Promise<FileInfo> => {
          const child = joinSystem(t.system, e.name);
          const cs = await this.io(() => t.ops.lstat(child).catch(() => null));
          const isDir = e.type === "directory";
          return {
            path: this.shownPath(t.ws, child) + (isDir ? "/" : ""),
            is_dir: isDir,
            size: cs && !isDir ? cs.size : 0,
            modified_at: cs ? new Date(cs.mtimeMs).toISOString() : undefined,
          };
        }),
      );
      return { files };
    });
  }

  /**
   * A window of a text file: `offset` is 0-based (deepagents' convention), lines longer than
   * `maxLineChars` are cut, secrets redacted. A PNG/JPEG/GIF/WebP image (by its bytes, up to
   * `maxImageBytes`) comes back whole as bytes with its MIME type, which deepagents' read_file
   * turns into an image block; a PDF as its extracted text, windowed by lines. Refuses
   * credential, other binary, device and non-regular files.
   */
  async read(filePath: string, offset = 0, limit = 500): Promise<ReadResult> {
    return this.guarded(filePath, async (t) => {
      const opened = await this.openRead(t, true);
      if ("error" in opened) return { error: opened.error };
      const start = Math.max(0, Math.floor(Number.isFinite(offset) ? offset : 0));
      const count = Math.max(1, Math.floor(Number.isFinite(limit) && limit > 0 ? limit : 500));
      if (opened.kind !== "text") {
        const changed = await this.recheckAfterRead(t);
        if (changed) return { error: changed };
        // deepagents' read_file turns image bytes into an image block for the model.
        if (opened.kind === "image") return { content: new Uint8Array(opened.bytes), mimeType: opened.mimeType };
        if (opened.kind === "pdf") return this.readPdf(t, opened.bytes, start, count);
      }
      const guard = this.openGuard("read", t);
      const window = await t.ops.readLines(t.system, { offset: start + 1, limit: count, maxLineChars: this.maxLineChars }, guard);
      const changed = await this.recheckAfterRead(t);
      if (changed) return { error: changed };
      if (window.lines.length === 0) {
        if (start === 0) return { content: EMPTY_FILE_NOTE, mimeType: "text/plain" };
        const total = window.totalLines ?? (await t.ops.countLines(t.system, guard));
        return { error: `Line offset ${start} is past the end of '${t.shown}' (${total} lines). Use an offset below ${total}.` };
      }
      const cut = new Set(window.cutLines);
      let lines = window.lines.map((l, i) => (cut.has(start + i + 1) ? `${l}... [truncated]` : l));
      let chars = 0;
      let kept = 0;
      for (const l of lines) {
        if (kept > 0 && chars + l.length + 1 > this.maxReadChars) break;
        chars += l.length + 1;
        kept++;
      }
      const capped = kept < lines.length;
      lines = lines.slice(0, kept);
      const text = lines.join("\n");
      // Counting streams the rest of the file: worth it for the "of T lines" hint on ordinary
      // files, not for a window at the top of a multi-GB log (totalLines is optional in deepagents).
      const size = (await t.ops.stat(t.system))?.size ?? Number.POSITIVE_INFINITY;
      const totalLines = window.totalLines ?? (size <= COUNT_LINES_MAX_BYTES ? await t.ops.countLines(t.system, guard) : undefined);
      const endLine = start + lines.length;
      const more = capped || window.hasMore || (totalLines !== undefined && endLine < totalLines);
      return {
        // Raw lines, before deepagents adds its gutters; a window after line 1 may start inside a key.
        content: this.redact ? redactSecrets(text, { startsMidFile: start > 0 }) : text,
        mimeType: "text/plain",
        ...(totalLines === undefined ? {} : { totalLines }),
        startLine: start + 1,
        endLine,
        nextOffset: more ? endLine : undefined,
      };
    });
  }

  /**
   * The whole text file (redacted) as deepagents `FileData`, or an image's or PDF's bytes with
   * their MIME type; refuses the same files as `read` and text files over 4× `maxReadChars` bytes.
   */
  async readRaw(filePath: string): Promise<ReadRawResult> {
    return this.guarded(filePath, async (t) => {
      const opened = await this.openRead(t, true);
      if ("error" in opened) return { error: opened.error };
      const s = (await t.ops.stat(t.system))!;
      if (opened.kind !== "text") {
        const changed = await this.recheckAfterRead(t);
        if (changed) return { error: changed };
        const stamp = new Date(s.mtimeMs).toISOString();
        const mimeType = opened.kind === "image" ? opened.mimeType : "application/pdf";
        return { data: { content: new Uint8Array(opened.bytes), mimeType, created_at: stamp, modified_at: stamp } };
      }
      if (s.size > this.maxReadChars * 4) {
        return { error: `'${t.shown}' is ${s.size} bytes, too large to load whole. Use read_file with offset and limit.` };
      }
      const text = await t.ops.readText(t.system, this.openGuard("read", t));
      const changed = await this.recheckAfterRead(t);
      if (changed) return { error: changed };
      const stamp = new Date(s.mtimeMs).toISOString();
      return {
        data: { content: this.redact ? redactSecrets(text) : text, mimeType: "text/plain", created_at: stamp, modified_at: stamp },
      };
    });
  }

  /**
   * Creates a new file atomically (parents created). Refuses to overwrite an existing file (use
   * `edit`), credential files, and content holding redaction markers.
   */
  async write(filePath: string, content: string): Promise<WriteResult> {
    return this.guarded(filePath, async (t) => {
      if (typeof content !== "string") return { error: "content must be a string: pass the full text of the file." };
      const refused = await this.refuseWrite(t, content);
      if (refused) return { error: refused };
      return withPathLock(t.system, async () => {
        const existing = await t.ops.lstat(t.system);
        if (existing) {
          return { error: `'${t.shown}' already exists. Use edit_file to change it, or read it first and write a new path.` };
        }
        await t.ops.writeAtomic(t.system, content, this.openGuard("write", t));
        return { path: t.shown, filesUpdate: null };
      });
    });
  }

  /** Replaces `oldString` (unique unless `replaceAll`) under a per-path lock, atomically; same refusals as `read` and `write`. */
  async edit(filePath: string, oldString: string, newString: string, replaceAll = false): Promise<EditResult> {
    return this.guarded(filePath, async (t) => {
      if (typeof oldString !== "string" || typeof newString !== "string") {
        return { error: "old_string and new_string must both be strings." };
      }
      const refused = (await this.refuseRead(t)) ?? (await this.refuseWrite(t, newString));
      if (refused) return { error: refused };
      if (containsRedactionMarker(oldString)) {
        return { error: "old_string contains a redaction marker («redacted…»): the file holds the real secret there. Anchor the edit on nearby lines instead." };
      }
      if (oldString === "") return { error: "old_string is empty. Pass the exact text to replace (read the file first)." };
      return withPathLock(t.system, async (): Promise<EditResult> => {
        const tooLarge = editInputProblem(t.shown, (await t.ops.stat(t.system))?.size ?? 0);
        if (tooLarge) return { error: tooLarge };
        const before = await t.ops.readText(t.system, this.openGuard("read", t));
        const notFound = { error: `String not found in '${t.shown}'. Read the file and copy the exact text, whitespace included.` };
        const ambiguous = (n: number) => ({ error: `String appears ${n} times in '${t.shown}'. Add surrounding lines to make it unique, or set replace_all.` });
        const occurrences = before.split(oldString).length - 1;
        // Refused before the new text is built: replace_all can multiply a file's size.
        const grown = occurrences > 0 ? editResultProblem(t.shown, before.length + (replaceAll ? occurrences : 1) * (newString.length - oldString.length)) : undefined;
        if (grown) return { error: grown };
        const after = replaceAll ? before.split(oldString).join(newString) : before.replace(oldString, () => newString);
        if (occurrences === 0 || (occurrences > 1 && !replaceAll) || (this.redact && secretEditReason(before, after))) {
          if (!this.redact) return occurrences === 0 ? notFound : ambiguous(occurrences);
          // Answer from the masked view (what read showed): no oracle on text inside a secret.
          const visible = redactSecrets(before).split(oldString).length - 1;
          if (visible === 0) return notFound;
          if (visible > 1 && !replaceAll) return ambiguous(visible);
          return { error: SECRET_EDIT_REFUSAL };
        }
        await t.ops.writeAtomic(t.system, after, this.openGuard("write", t));
        return { path: t.shown, filesUpdate: null, occurrences: replaceAll ? occurrences : 1 };
      });
    });
  }

  /** Deletes one file (not a directory). */
  async delete(filePath: string): Promise<DeleteResult> {
    return this.guarded(filePath, async (t) => {
      const s = await t.ops.lstat(t.system);
      if (!s) return { error: `'${t.shown}' not found.` };
      if (s.type === "directory") return { error: `'${t.shown}' is a directory; delete its files one by one.` };
      const denied = writeAccessReason(t.system, { ...this.policy(t.ws), workspaceDir: t.ws.dir });
      if (denied) return { error: `'${t.shown}' ${denied}` };
      await t.ops.remove(t.system, this.openGuard("write", t));
      return { path: t.shown, filesUpdate: null };
    });
  }

  /**
   * Files under `basePath` whose relative path matches `pattern` (`*`, `?`, `**`, `{a,b}`, `[…]`);
   * `.git`/`node_modules` skipped, symlinks out of the workspace ignored, walk capped at `maxWalkFiles`.
   */
  async glob(pattern: string, basePath = "/"): Promise<GlobResult> {
    return this.guarded(basePath || "/", async (t) => {
      if (typeof pattern !== "string" || pattern.trim() === "") return { error: "pattern must be a non-empty glob such as '**/*.md'." };
      const matches = globMatcher(pattern);
      const listed = await this.listFiles(t);
      const hits = listed.files.filter((f) => matches(f.rel));
      const stats = await Promise.all(hits.map((f) => this.io(() => t.ops.stat(f.system).catch(() => null))));
      const files: FileInfo[] = hits.map((f, i) => ({
        path: this.shownPath(t.ws, f.system),
        is_dir: false,
        size: stats[i]?.size,
        modified_at: stats[i] ? new Date(stats[i]!.mtimeMs).toISOString() : undefined,
      }));
      files.sort((a, b) => a.path.localeCompare(b.path));
      return listed.truncated ? { files, truncated: true } : { files };
    });
  }

  /**
   * Literal-text search. Skips credential files (and says so when that leaves no match), binary
   * files (extension or content) and files over `maxGrepFileBytes`; redacts matched lines.
   * Local workspaces use the package's search engine (ripgrep, else its JS walker).
   */
  async grep(pattern: string, basePath?: string | null, glob?: string | null, maxCount?: number | null): Promise<GrepResult> {
    return this.guarded(basePath || "/", async (t) => {
      if (typeof pattern !== "string" || pattern === "") return { error: "pattern must be non-empty literal text to search for." };
      const s = await t.ops.stat(t.system);
      if (!s) return { error: `Path '${t.shown}' not found. Use "/" to search the whole workspace.` };
      if (s.type === "file") {
        // The path itself is judged on what it really is: `README.txt -> .env` is a credential file.
        const refused = await this.refuseRead(t);
        if (refused) return { error: refused };
      }
      const cap = maxCount && maxCount > 0 ? Math.min(Math.floor(maxCount), MAX_GREP_MATCHES) : MAX_GREP_MATCHES;
      const found = isLocalFileOperations(t.ops) ? await this.grepWithEngine(t, pattern, glob ?? undefined, cap) : await this.grepByWalking(t, s.type === "file", pattern, glob ?? undefined, cap);
      const matches = found.matches.slice(0, cap).map((m) => {
        const line = m.text.length > this.maxLineChars ? `${m.text.slice(0, this.maxLineChars)}... [truncated]` : m.text;
        return { path: this.shownPath(t.ws, m.path), line: m.line, text: this.redact ? redactSecrets(line, { startsMidFile: true }) : line };
      });
      // Credential files were never searched; nothing here (not even an error) depends on whether they would have matched.
      const result: GrepResult = { matches };
      if (found.truncated || found.matches.length > cap) result.truncated = true;
      return result;
    });
  }

  // ---- internals ----

  /** Resolves the agent path and runs `fn`; every failure becomes an `{ error }` without host paths. */
  private async guarded<R extends { error?: string }>(agentPath: string, fn: (t: Target) => Promise<R>): Promise<R> {
    let ws: Workspace | undefined;
    try {
      if (typeof agentPath !== "string" || agentPath.trim() === "") {
        return { error: "path must be a non-empty string such as '/notes.md'." } as R;
      }
      const device = devicePathReason(agentPath.trim());
      if (device) return { error: device } as R;
      ws = this.workspace();
      const ops = await this.environments.fileOpsFor(ws.threadId);
      const system = await ws.resolve(agentPath, ops);
      return await fn({ ws, ops, system, shown: this.shownPath(ws, system) });
    } catch (err) {
      const message =
        err instanceof WorkspacePathError || err instanceof GlobLimitError || err instanceof SearchEngineError
          ? err.message
          : err instanceof OpenRefusedError
            ? `'${agentPath}' ${err.reason}`
            : describeFsError(err, agentPath);
      return { error: ws ? ws.rewrite(message) : message } as R;
    }
  }

  /** Why a text read or edit of this target is refused (guiding text), or `undefined`. */
  private async refuseRead(t: Target): Promise<string | undefined> {
    const opened = await this.openRead(t, false);
    return "error" in opened ? opened.error : undefined;
  }

  /**
   * The read guards, then what the file is (src/media): text, or — with `loadMedia` — an image
   * or a PDF loaded under its size cap. Without `loadMedia` media is refused as not text.
   */
  private async openRead(t: Target, loadMedia: boolean): Promise<{ error: string } | Exclude<OpenedRead, { kind: "refused" }>> {
    const policy = this.policy(t.ws);
    const named = contentAccessReason(t.system, { ...policy, workspaceDir: t.ws.dir });
    if (named) return { error: `'${t.shown}' ${named}` };
    const s = await t.ops.stat(t.system);
    if (!s) return { error: await this.notFound(t) };
    const nonRegular = nonRegularFileReason(t.shown, s);
    if (nonRegular) return { error: nonRegular };
    // What the name leads to: `README.txt -> .env` is the credential file it points at.
    const real = await t.ops.realpath(t.system).catch(() => t.system);
    const denied = contentAccessReason(real, policy);
    if (denied) return { error: `'${t.shown}' ${denied}` };
    const target = { systemPath: t.system, shown: t.shown, names: [t.system, real] };
    const guard = this.openGuard("read", t);
    if (loadMedia) {
      const opened = await openForRead(t.ops, target, s.size, guard, this.maxImageBytes);
      return opened.kind === "refused" ? { error: opened.reason } : opened;
    }
    const head = await t.ops.readBytes(t.system, 0, Math.min(SNIFF_BYTES, s.size), guard);
    const decision = mediaReadDecision(t.shown, target.names, head, s.size, this.maxImageBytes);
    if (decision.action === "refuse") return { error: decision.reason };
    if (decision.action === "load") return { error: `'${t.shown}' is ${decision.media.kind === "image" ? "an image" : "a PDF"}, not a text file: it can be read but not edited.` };
    return { kind: "text" };
  }

  /** A PDF's text as lines (page headers included), windowed like a text file. */
  private async readPdf(t: Target, bytes: Buffer, start: number, count: number): Promise<ReadResult> {
    let lines: string[];
    try {
      lines = await pdfLines(bytes);
    } catch (err) {
      if (err instanceof PdfReadError) return { error: `'${t.shown}' ${err.message}` };
      throw err;
    }
    if (start >= lines.length) return { error: `Line offset ${start} is past the end of '${t.shown}' (${lines.length} lines of extracted PDF text). Use an offset below ${lines.length}.` };
    const shown: string[] = [];
    let chars = 0;
    for (const line of lines.slice(start, start + count)) {
      const l = line.length > this.maxLineChars ? `${line.slice(0, this.maxLineChars)}... [truncated]` : line;
      if (shown.length > 0 && chars + l.length + 1 > this.maxReadChars) break;
      chars += l.length + 1;
      shown.push(l);
    }
    const text = shown.join("\n");
    const endLine = start + shown.length;
    return {
      content: this.redact ? redactSecrets(text, { startsMidFile: start > 0 }) : text,
      mimeType: "text/plain",
      totalLines: lines.length,
      startLine: start + 1,
      endLine,
      nextOffset: endLine < lines.length ? endLine : undefined,
    };
  }

  /**
   * Remote FileOperations cannot verify the descriptor they read from: judge the real path again
   * after the read (local reads were verified on the descriptor and skip this).
   */
  private async recheckAfterRead(t: Target): Promise<string | undefined> {
    if (isLocalFileOperations(t.ops)) return undefined;
    const real = await t.ops.realpath(t.system).catch(() => undefined);
    const reason = real === undefined ? "was moved or removed while it was being read. Try again." : contentAccessReason(real, this.policy(t.ws));
    return reason ? `'${t.shown}' ${reason}` : undefined;
  }

  /** The access policy (src/guards/access.ts) of a workspace: confined, this backend's patterns. */
  private policy(ws: Workspace): AccessPolicy {
    return { workspaceDir: ws.realDirectory(), confine: true, credentialPatterns: this.credentialPatterns, allowHardLinks: this.allowHardLinks };
  }

  /** Checked by the FileOperations on the descriptor it actually opens (race-free locally). */
  private openGuard(kind: "read" | "write", t: Target): OpenGuard {
    return accessOpenGuard(kind, this.policy(t.ws));
  }

  private async refuseWrite(t: Target, content: string): Promise<string | undefined> {
    const rel = t.ws.toAgentPath(t.system);
    if (rel === ".") return "The path names the workspace directory itself; add a file name.";
    const policy = this.policy(t.ws);
    const real = await realTarget(t.ops, t.system);
    const denied = writeAccessReason(t.system, { ...policy, workspaceDir: t.ws.dir }) ?? writeAccessReason(real, policy);
    if (denied) return `'${t.shown}' ${denied}`;
    if (looksLikeDedupStub(content)) {
      return "The content is read_file's \"unchanged\" placeholder, not the file: writing it would replace the file with the placeholder. Send the real text.";
    }
    if (containsRedactionMarker(content)) {
      return "The content contains a redaction marker («redacted…»): writing it would replace a real secret with the marker. Leave secret lines out or ask the user to edit them.";
    }
    return undefined;
  }

  private async notFound(t: Target): Promise<string> {
    const dir = t.system.slice(0, t.system.lastIndexOf("/")) || "/";
    const base = t.system.slice(t.system.lastIndexOf("/") + 1).toLowerCase();
    const siblings = await t.ops.readdir(dir).catch(() => []);
    const similar = siblings
      .map((e) => e.name)
      .filter((n) => !isAtomicTempName(n))
      .filter((n) => {
        const stem = n.toLowerCase().replace(/\.[^.]*$/, "");
        return !contentAccessReason(joinSystem(dir, n), { ...this.policy(t.ws), workspaceDir: t.ws.dir, confine: false }) && ((base.length >= 3 && n.toLowerCase().startsWith(base.slice(0, 3))) || (stem.length >= 3 && base.includes(stem)));
      })
      .slice(0, 5)
      .map((n) => this.shownPath(t.ws, joinSystem(dir, n)));
    return `File '${t.shown}' not found.${similar.length ? ` Similar: ${similar.join(", ")}.` : ""} Use ls or glob to find the right path.`;
  }

  /** Files under the target (the target itself when it is a file), paths relative to it. */
  private async listFiles(t: Target): Promise<{ files: { system: string; rel: string }[]; truncated: boolean }> {
    const files: { system: string; rel: string }[] = [];
    if (isLocalFileOperations(t.ops)) {
      const outcome = await this.searchEngine({
        target: "files",
        pattern: "*",
        mode: "files_only",
        cwd: t.ws.dir,
        searchPath: t.system,
        context: 0,
        maxRecords: this.maxWalkFiles,
        timeoutMs: SEARCH_TIMEOUT_MS,
        maxOutputBytes: 64 * 1024 * 1024,
      });
      if (outcome.error) throw new SearchEngineError(outcome.error);
      for (const system of outcome.files) files.push({ system, rel: relativeTo(t.system, system) });
      return { files, truncated: !outcome.complete };
    }
    const truncated = await this.walk(t, t.system, async (system, rel) => {
      files.push({ system, rel });
    });
    return { files, truncated };
  }

  private async grepWithEngine(t: Target, literal: string, glob: string | undefined, cap: number): Promise<RawGrep> {
    const outcome = await this.searchEngine({
      target: "content",
      pattern: literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
      mode: "content",
      cwd: t.ws.dir,
      searchPath: t.system,
      ...(glob ? { fileGlob: glob } : {}),
      context: 0,
      maxRecords: cap + 1,
      timeoutMs: SEARCH_TIMEOUT_MS,
      maxOutputBytes: 16 * 1024 * 1024,
      // Credential files are excluded before anything is counted (no oracle in caps or totals).
      exclude: (p) => contentAccessReason(p, { ...this.policy(t.ws), workspaceDir: t.ws.dir }) !== undefined,
    });
    if (outcome.error) throw new SearchEngineError(outcome.error);
    await dropHardLinkedResults(outcome, this.policy(t.ws));
    if (outcome.engine === "ripgrep") await verifyReportedLines(outcome, t.ws.realDirectory());
    const raw: RawGrep = { matches: [], truncated: !outcome.complete };
    for (const rec of outcome.lines) {
      if (rec.match) raw.matches.push({ path: rec.path, line: rec.line, text: rec.text });
    }
    return raw;
  }

  /** The grep for remote file operations (SSH, Docker): one file at a time through `ops`. */
  private async grepByWalking(t: Target, isFile: boolean, literal: string, glob: string | undefined, cap: number): Promise<RawGrep> {
    const include = glob ? globMatcher(glob, true) : () => true;
    const raw: RawGrep = { matches: [], truncated: false };
    const policy = this.policy(t.ws);
    const guard = accessOpenGuard("read", policy);
    const visit = async (system: string, rel: string, real = system): Promise<boolean | void> => {
      if (!include(rel)) return;
      // Credential files (by name, and by where a link leads) are skipped silently: never counted.
      if (contentAccessReason(system, { ...policy, workspaceDir: t.ws.dir }) || contentAccessReason(real, policy)) return;
      if (hasBinaryExtension(rel)) return;
      const s = await t.ops.stat(system).catch(() => null);
      if (!s || s.type !== "file" || s.size > this.maxGrepFileBytes) return;
      if (sniffBinary(await t.ops.readBytes(system, 0, SNIFF_BYTES, guard))) return;
      const text = await t.ops.readText(system, guard);
      if (!text.includes(literal)) return;
      const lines = text.split(/\r?\n/);
      for (let i = 0; i < lines.length; i++) {
        if (!lines[i]!.includes(literal)) continue;
        raw.matches.push({ path: system, line: i + 1, text: lines[i]! });
        if (raw.matches.length > cap) return true;
      }
    };
    const realTop = isFile ? await t.ops.realpath(t.system).catch(() => t.system) : t.system;
    raw.truncated = isFile ? (await visit(t.system, relativeTo(t.ws.dir, t.system), realTop)) === true : await this.walk(t, t.system, visit);
    return raw;
  }

  private async searchEngine(req: SearchRequest): Promise<SearchOutcome> {
    const rg = await detectRipgrep();
    return rg ? runRipgrep(req, rg) : runJsSearch(req);
  }

  /**
   * Walks `dir` breadth-first, calling `visit(systemPath, relToDir)` for each regular file or
   * symlink (never followed into directories). Unreadable directories are skipped, not fatal.
   * Returns true when the walk stopped early (file cap, or `visit` returned true).
   */
  private async walk(t: Target, dir: string, visit: (system: string, rel: string, real?: string) => Promise<boolean | void>): Promise<boolean> {
    const queue: [string, string][] = [[dir, ""]];
    let seen = 0;
    while (queue.length > 0) {
      const [current, rel] = queue.shift()!;
      const entries = await t.ops.readdir(current).catch(() => []);
      entries.sort((a, b) => a.name.localeCompare(b.name));
      for (const e of entries) {
        if (isAtomicTempName(e.name)) continue;
        const childRel = rel ? `${rel}/${e.name}` : e.name;
        const child = joinSystem(current, e.name);
        if (e.type === "directory") {
          if (!this.skipDirs.has(e.name)) queue.push([child, childRel]);
          continue;
        }
        if (e.type === "other") continue;
        let real = child;
        if (e.type === "symlink") {
          // A symlink may point out of the workspace: only follow it when its target is inside.
          const target = await t.ops.realpath(child).catch(() => undefined);
          if (!target || t.ws.toAgentPath(target) === target) continue;
          real = target;
        }
        if (++seen > this.maxWalkFiles) return true;
        if ((await visit(child, childRel, real)) === true) return true;
      }
    }
    return false;
  }

  private shownPath(ws: Workspace, system: string): string {
    const rel = ws.toAgentPath(system);
    if (rel === system) return ws.rewrite(system);
    return rel === "." ? "/" : `/${rel.replace(/\\/g, "/")}`;
  }
}

/** Matches a grep returns before saying it was truncated (deepagents prints every match). */
const MAX_GREP_MATCHES = 1_000;
const SEARCH_TIMEOUT_MS = LIMITS.searchTimeoutMs;
/** Files up to this size get a total line count with each read window. */
const COUNT_LINES_MAX_BYTES = 32 * 1024 * 1024;

/** A search engine's answer phrased for the model (invalid glob, regex timeout…): shown as is. */
class SearchEngineError extends Error {}

interface RawGrep {
  /** `path` is a system path; `text` is the raw line. */
  matches: GrepMatch[];
  truncated: boolean;
}

/** The real location a write would land on: the real path of the deepest existing ancestor plus the rest. */
async function realTarget(ops: FileOperations, system: string): Promise<string> {
  const rest: string[] = [];
  for (let probe = system; ; ) {
    try {
      return path.posix.join(await ops.realpath(probe), ...rest);
    } catch {
      const parent = path.posix.dirname(probe);
      if (parent === probe) return system;
      rest.unshift(path.posix.basename(probe));
      probe = parent;
    }
  }
}

function relativeTo(base: string, system: string): string {
  const rel = path.relative(base, system).split(path.sep).join("/");
  return rel === "" ? path.basename(system) : rel;
}

function joinSystem(dir: string, name: string): string {
  return dir.endsWith("/") ? `${dir}${name}` : `${dir}/${name}`;
}

function safeConfig(): unknown {
  try {
    return getConfig();
  } catch {
    // Outside a LangGraph run (a direct call): the default thread.
    return undefined;
  }
}

function describeFsError(err: unknown, agentPath: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ENOENT":
      return `'${agentPath}' not found. Use ls or glob to find the right path.`;
    case "EACCES":
    case "EPERM":
      return `Permission denied for '${agentPath}'.`;
    case "EISDIR":
      return `'${agentPath}' is a directory. Use ls to list it.`;
    case "ENOTDIR":
      return `A parent of '${agentPath}' is a file, not a directory.`;
    default:
      return `Could not access '${agentPath}': ${err instanceof Error ? err.message : String(err)}`;
  }
}
