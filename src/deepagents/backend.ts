/**
 * WorkbenchBackend: deepagents' `BackendProtocolV2` over this package's per-thread Workspace and
 * guarded file operations, so deepagents' own `ls`/`read_file`/`write_file`/`edit_file`/`glob`/
 * `grep`/`delete` tools inherit confinement, device-path and binary refusal, credential-file
 * protection and secret redaction — and never show a host path.
 *
 * An adapter: the decisions are the cores the package's own tools use — the access policy and
 * its refusals (src/guards/access.ts), write-content refusals (src/guards/writeContent.ts),
 * media decisions (src/media), the read window (src/environment/readWindow.ts: offsets, cut lines,
 * the character cap, past-the-end), the guarded search engine (src/search/guardedSearch.ts), the one
 * command runner (src/environment/runShellCommand.ts) and the staleness rule (src/guards/staleness.ts).
 * What stays here is deepagents' protocol: its result shapes, 0-based windows and its rules
 * (empty `old_string`, `/` clears the workspace, base64 for binary types).
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
  FileDownloadResponse,
  FileUploadResponse,
  WriteResult,
} from "deepagents";
import { isAtomicTempName } from "../environment/tempFiles.js";
import { hasBinaryExtension, SNIFF_BYTES, sniffBinary } from "../guards/binary.js";
import { binaryTooLargeMessage, mediaReadDecision, type BinaryLoads } from "../guards/media.js";
import { PdfReadError } from "../media/pdf.js";
import { openForRead, pdfLines, type OpenedRead } from "../media/read.js";
import { accessOpenGuard, contentAccessReason, writeAccessReason, type AccessPolicy } from "../guards/access.js";
import { devicePathReason, nonRegularFileReason } from "../guards/devices.js";
import { editInputProblem, editResultProblem, LIMITS, readPastEndMessage } from "../guards/limits.js";
import { readLinesOf, readRequest, readWindow, type ReadRequest } from "../environment/readWindow.js";
import type { LinesResult } from "../environment/lineWindow.js";
import { containsRedactionMarker, redactSecrets, secretEditReason, SECRET_EDIT_REFUSAL } from "../guards/redact.js";
import { writeContentReason } from "../guards/writeContent.js";
import { escapeRegExp } from "../guards/regexp.js";
import { isLocalFileOperations, ThreadEnvironments } from "../environment/threadEnvironment.js";
import { runGuardedSearch, searchPlaceFor } from "../search/guardedSearch.js";
import type { SearchOutcome, SearchRequest } from "../search/types.js";
import { withPathLock } from "../environment/pathLock.js";
import { OpenRefusedError, type FileOperations, type OpenGuard } from "../environment/fileOperations.js";
import { resolveRootDir, Workspace, WorkspacePathError } from "../workspace.js";
import { threadIdFromConfig } from "../context/thread.js";
import { parseOptions } from "../options.js";
import { WorkbenchError } from "../workbenchError.js";
import { GlobLimitError, globMatcher } from "./glob.js";
import { decodeBase64, isBase64Path, mimeTypeForPath } from "./mime.js";
import { commandExecutor } from "./execute.js";
import { workbenchBackendOptionsSchema, type WorkbenchBackendOptions } from "./options.js";
import { SeenMtimes, BACKEND_WARNING_KEY } from "../guards/staleness.js";
import { DEFAULT_MAX_TRANSFER_BYTES, getFile, isTransferRefusal, putFile, realTarget, writeDestination, type TransferSettings } from "../artifacts/transfer.js";

export type { WorkbenchBackendOptions, WorkbenchExecuteOptions } from "./options.js";

const EMPTY_FILE_NOTE = "System reminder: File exists but has empty contents";

interface Target {
  ws: Workspace;
  /** The thread's file access. */
  ops: FileOperations;
  /** The agent path as deepagents shows it: `/`-rooted at the workspace. */
  shown: string;
  system: string;
}

/** {@link WorkbenchBackendOptions} resolved: defaults applied (values were checked by the schema). */
interface Settings {
  rootDir: string;
  environments: ThreadEnvironments;
  credentialPatterns: AccessPolicy["credentialPatterns"];
  allowHardLinks: boolean;
  redact: boolean;
  maxReadChars: number;
  maxLineChars: number;
  /** 0 when images are off (`readImages: false`). */
  maxImageBytes: number;
  readAudioVideo: boolean;
  pdfAs: "text" | "file";
  maxWalkFiles: number;
  skipDirs: ReadonlySet<string>;
  maxTransferBytes: number;
  /**
   * Last mtime seen of each file read or written through this backend (system path → mtime):
   * the staleness warning on writes, for use without the FileManager's checkpointed read times.
   */
  seen: SeenMtimes;
}

function resolveSettings(options: WorkbenchBackendOptions): Settings {
  return {
    rootDir: resolveRootDir(options.rootDir),
    environments: new ThreadEnvironments({ environment: options.environment, fileOps: options.fileOps }),
    credentialPatterns: options.credentialPatterns ?? [],
    allowHardLinks: options.allowHardLinks === true,
    redact: options.redact ?? true,
    maxReadChars: options.maxReadChars ?? LIMITS.readMaxChars,
    maxLineChars: options.maxLineChars ?? LIMITS.readLineMaxChars,
    maxImageBytes: options.readImages === false ? 0 : (options.maxImageBytes ?? LIMITS.imageMaxBytes),
    readAudioVideo: options.readAudioVideo ?? true,
    pdfAs: options.pdfAs ?? "text",
    maxWalkFiles: options.maxWalkFiles ?? 20_000,
    skipDirs: new Set(options.skipDirs ?? [".git", "node_modules"]),
    maxTransferBytes: options.maxTransferBytes ?? DEFAULT_MAX_TRANSFER_BYTES,
    seen: new SeenMtimes(),
  };
}

/** Implements deepagents' `BackendProtocolV2` on a per-thread {@link Workspace}. */
export class WorkbenchBackend implements BackendProtocolV2 {
  private readonly s: Settings;
  private readonly threadId: string | undefined;
  /** Bounds concurrent stat calls (glob metadata, ls). */
  private readonly io = pLimit(32);

  constructor(options: WorkbenchBackendOptions = {}) {
    const parsed = parseOptions(workbenchBackendOptionsSchema, options, "Invalid WorkbenchBackend options");
    this.s = resolveSettings(parsed);
    this.threadId = parsed.threadId;
    if (parsed.execute) {
      const run = commandExecutor(parsed.execute === true ? {} : parsed.execute, this.s.environments.environment !== undefined, this.s.rootDir);
      // eslint-disable-next-line @typescript-eslint/no-this-alias -- fallback for a detached call
      const owner = this;
      // A function, not an arrow: `this` is the backend it is called on (a forThread() pin).
      const execute = function (this: WorkbenchBackend | undefined, command: string): Promise<ExecuteResponse> {
        const self = this instanceof WorkbenchBackend ? this : owner;
        return run({ environments: self.s.environments, redact: self.s.redact, workspace: () => self.workspace() }, command);
      };
      Object.defineProperty(this, "execute", { value: execute, enumerable: true });
      Object.defineProperty(this, "id", { value: "workbench", enumerable: true });
    }
  }

  /**
   * deepagents' sandbox protocol, present only with the `execute` option (deepagents detects a
   * sandbox by these two members): runs `command` in the calling thread's environment with cwd =
   * its workspace, exactly as `run_command` does.
   */
  declare readonly execute?: (command: string) => Promise<ExecuteResponse>;
  /** Sandbox id for deepagents (`"workbench"`), present only with the `execute` option. */
  declare readonly id?: string;

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
    return Workspace.forThread(this.s.rootDir, this.threadId ?? threadIdFromConfig(safeConfig()));
  }

  /** Lists a directory (not recursive): `/`-rooted paths, directories with a trailing `/`, sizes and mtimes. */
  async ls(dirPath: string): Promise<LsResult> {
    return this.guarded(dirPath || "/", async (t) => {
      const s = await t.ops.stat(t.system);
      // deepagents' protocol: a missing directory lists as empty.
      if (!s) return { files: [] };
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
   * A window of a text file: `offset` is 0-based (deepagents' convention), at most
   * `LIMITS.readMaxLines` lines and `maxReadChars` characters, lines longer than `maxLineChars`
   * cut, secrets redacted. A PNG/JPEG/GIF/WebP image (by its bytes, up to
   * `maxImageBytes`) and audio or video (by its bytes, up to 10 MiB; option `readAudioVideo`)
   * come back whole as bytes with their MIME type — offset and limit do not apply — which
   * deepagents' read_file turns into image/audio/video blocks; a PDF as its extracted text,
   * windowed by lines (or, with `pdfAs: "file"`, its bytes for a file block). Refuses credential,
   * other binary, device and non-regular files.
   */
  async read(filePath: string, offset = 0, limit: number = LIMITS.readDefaultLines): Promise<ReadResult> {
    return this.guarded(filePath, async (t) => {
      const opened = await this.openRead(t, true, { audioVideo: this.s.readAudioVideo });
      if ("error" in opened) return { error: opened.error };
      const request = readRequest(offset, limit, 0);
      if (request.limit === 0 && opened.kind === "text") return { content: "", mimeType: "text/plain" };
      if (opened.kind !== "text") {
        const changed = await this.recheckAfterRead(t);
        if (changed) return { error: changed };
        // deepagents' read_file turns image bytes into an image block for the model.
        if (opened.kind === "image" || opened.kind === "audio" || opened.kind === "video") return { content: new Uint8Array(opened.bytes), mimeType: opened.mimeType };
        if (opened.kind === "pdf" && this.s.pdfAs === "file") {
          if (opened.bytes.length > LIMITS.binaryReadMaxBytes) return { error: binaryTooLargeMessage(t.shown, opened.bytes.length) };
          return { content: new Uint8Array(opened.bytes), mimeType: "application/pdf" };
        }
        if (opened.kind === "pdf") return this.readPdf(t, opened.bytes, request);
        return { error: `'${t.shown}' is a binary file; read shows text, images, audio, video and PDFs only.` };
      }
      const guard = this.openGuard("read", t);
      const read = await t.ops.readLines(t.system, { offset: request.firstLine, limit: request.limit, maxLineChars: this.s.maxLineChars }, guard);
      const changed = await this.recheckAfterRead(t);
      if (changed) return { error: changed };
      const st = await t.ops.stat(t.system);
      if (st) this.s.seen.remember(t.system, st.mtimeMs);
      // Counting streams the rest of the file: worth it for the "of T lines" hint on ordinary
      // files, not for a window at the top of a multi-GB log (totalLines is optional in deepagents).
      return this.windowResult(t, read, request, st?.size, () => t.ops.countLines(t.system, guard));
    });
  }

  /** deepagents' `ReadResult` of a window over `read` (src/environment/readWindow.ts decides it). */
  private async windowResult(t: Target, read: LinesResult, request: ReadRequest, fileSize: number | undefined, countLines: () => Promise<number>, unit?: string): Promise<ReadResult> {
    const win = readWindow(read, request, 0, { maxChars: this.s.maxReadChars, fileSize });
    if (win.kind === "empty") return { content: EMPTY_FILE_NOTE, mimeType: "text/plain" };
    const totalLines = read.totalLines ?? (win.countTotal ? await countLines() : undefined);
    if (win.kind === "past-end") return { error: readPastEndMessage({ offset: win.offset, base: 0, totalLines, file: t.shown, unit }) };
    const text = win.lines.join("\n");
    return {
      // Raw lines, before deepagents adds its gutters; a window after line 1 may start inside a key.
      content: this.s.redact ? redactSecrets(text, { startsMidFile: win.firstLine > 1 }) : text,
      mimeType: "text/plain",
      ...(totalLines === undefined ? {} : { totalLines }),
      startLine: win.firstLine,
      endLine: win.endLine,
      nextOffset: win.more || (totalLines !== undefined && win.endLine < totalLines) ? win.endLine : undefined,
    };
  }

  /**
   * The whole text file (redacted) as deepagents `FileData`, or any binary's bytes as a
   * `Uint8Array` (up to 10 MiB) with its MIME type (by its bytes, else deepagents' extension
   * table); refuses credential, device and non-regular files and text files over 4×
   * `maxReadChars` bytes.
   */
  async readRaw(filePath: string): Promise<ReadRawResult> {
    return this.guarded(filePath, async (t) => {
      const opened = await this.openRead(t, true, { anyBinary: true });
      if ("error" in opened) return { error: opened.error };
      const s = (await t.ops.stat(t.system))!;
      if (opened.kind !== "text") {
        const changed = await this.recheckAfterRead(t);
        if (changed) return { error: changed };
        const stamp = new Date(s.mtimeMs).toISOString();
        const mimeType = opened.kind === "pdf" ? "application/pdf" : (opened.mimeType ?? mimeTypeForPath(t.system));
        return { data: { content: new Uint8Array(opened.bytes), mimeType, created_at: stamp, modified_at: stamp } };
      }
      if (s.size > this.s.maxReadChars * 4) {
        return { error: `'${t.shown}' is ${s.size} bytes, too large to load whole. Use read_file with offset and limit.` };
      }
      const text = await t.ops.readText(t.system, this.openGuard("read", t));
      const changed = await this.recheckAfterRead(t);
      if (changed) return { error: changed };
      this.s.seen.remember(t.system, s.mtimeMs);
      const stamp = new Date(s.mtimeMs).toISOString();
      return {
        data: { content: this.s.redact ? redactSecrets(text) : text, mimeType: "text/plain", created_at: stamp, modified_at: stamp },
      };
    });
  }

  /**
   * Creates or overwrites a file atomically (parents created; an in-workspace symlink is written
   * through). Content of binary types (deepagents' rule: the extension's MIME type is not text)
   * arrives as base64 and is stored decoded. Overwriting a file that changed since this backend
   * last read or wrote it succeeds with a warning in `metadata`. Refuses credential files,
   * directories, and text holding redaction markers or read placeholders.
   */
  async write(filePath: string, content: string): Promise<WriteResult> {
    return this.guarded(filePath, async (t) => {
      if (typeof content !== "string") return { error: "content must be a string: pass the full text of the file." };
      let data: string | Buffer = content;
      if (isBase64Path(t.system)) {
        const bytes = decodeBase64(content);
        if (!bytes) return { error: `'${t.shown}' is a binary file type: content must be its bytes in base64.` };
        data = bytes;
      }
      const refused = await this.refuseWrite(t, typeof data === "string" ? content : "");
      if (refused) return { error: refused };
      const dest = await writeDestination(t.ops, t.system);
      return withPathLock(dest, async (): Promise<WriteResult> => {
        const existing = await t.ops.stat(dest);
        if (existing?.type === "directory") return { error: `'${t.shown}' is a directory. Write to a file path inside it.` };
        const nonRegular = existing ? nonRegularFileReason(t.shown, existing) : undefined;
        if (nonRegular) return { error: nonRegular };
        const warning = existing ? this.s.seen.warning(t.system, t.shown, existing.mtimeMs) : undefined;
        await t.ops.writeAtomic(dest, data, this.openGuard("write", t));
        await this.noteSeen(t.ops, t.system);
        return { path: t.shown, filesUpdate: null, ...(warning ? { metadata: { [BACKEND_WARNING_KEY]: warning } } : {}) };
      });
    });
  }

  /** Replaces `oldString` (unique unless `replaceAll`) under a per-path lock, atomically; same refusals as `read` and `write`. */
  async edit(filePath: string, oldString: string, newString: string, replaceAll = false): Promise<EditResult> {
    return this.guarded(filePath, async (t) => {
      if (typeof oldString !== "string" || typeof newString !== "string") {
        return { error: "old_string and new_string must both be strings." };
      }
      const refused = (await this.refuseRead(t)) ?? (await this.refuseWrite(t, newString, "new_string"));
      if (refused) return { error: refused };
      if (containsRedactionMarker(oldString)) {
        return { error: "old_string contains a redaction marker («redacted…»): the file holds the real secret there. Anchor the edit on nearby lines instead." };
      }
      // Edits go through an in-workspace symlink to its target: the link stays a link.
      const dest = await writeDestination(t.ops, t.system);
      return withPathLock(dest, async (): Promise<EditResult> => {
        const current = await t.ops.stat(dest);
        const tooLarge = editInputProblem(t.shown, current?.size ?? 0);
        if (tooLarge) return { error: tooLarge };
        const before = await t.ops.readText(dest, this.openGuard("read", t));
        const warning = current ? this.s.seen.warning(t.system, t.shown, current.mtimeMs) : undefined;
        const done = async (after: string, occurrences: number): Promise<EditResult> => {
          await t.ops.writeAtomic(dest, after, this.openGuard("write", t));
          await this.noteSeen(t.ops, t.system);
          return { path: t.shown, filesUpdate: null, occurrences, ...(warning ? { metadata: { [BACKEND_WARNING_KEY]: warning } } : {}) };
        };
        // deepagents' rule: an empty old_string fills an empty file (and nothing else).
        if (oldString === "") {
          return before === "" ? done(newString, 0) : { error: "old_string is empty but the file has content. Pass the exact text to replace (read the file first)." };
        }
        const notFound = { error: `String not found in '${t.shown}'. Read the file and copy the exact text, whitespace included.` };
        const ambiguous = (n: number) => ({ error: `String appears ${n} times in '${t.shown}'. Add surrounding lines to make it unique, or set replace_all.` });
        const occurrences = before.split(oldString).length - 1;
        // Refused before the new text is built: replace_all can multiply a file's size.
        const grown = occurrences > 0 ? editResultProblem(t.shown, before.length + (replaceAll ? occurrences : 1) * (newString.length - oldString.length)) : undefined;
        if (grown) return { error: grown };
        const after = replaceAll ? before.split(oldString).join(newString) : before.replace(oldString, () => newString);
        if (occurrences === 0 || (occurrences > 1 && !replaceAll) || (this.s.redact && secretEditReason(before, after))) {
          if (!this.s.redact) return occurrences === 0 ? notFound : ambiguous(occurrences);
          // Answer from the masked view (what read showed): no oracle on text inside a secret.
          const visible = redactSecrets(before).split(oldString).length - 1;
          if (visible === 0) return notFound;
          if (visible > 1 && !replaceAll) return ambiguous(visible);
          return { error: SECRET_EDIT_REFUSAL };
        }
        return done(after, replaceAll ? occurrences : 1);
      });
    });
  }

  /**
   * Deletes a file, a symlink (never its target) or a directory with everything under it. A
   * directory holding a protected credential file anywhere inside is refused as a whole. `/`
   * clears the workspace's contents (deepagents' rule); the workspace directory itself stays.
   */
  async delete(filePath: string): Promise<DeleteResult> {
    return this.guarded(filePath, async (t) => {
      const isRoot = t.ws.toAgentPath(t.system) === ".";
      const s = await t.ops.lstat(t.system);
      if (!s) return isRoot ? { path: t.shown, filesUpdate: null } : { error: `'${t.shown}' not found.` };
      if (isRoot && s.type !== "directory") return { error: "The workspace directory is not a directory here; delete the files inside it one by one." };
      const policy = { ...this.policy(t.ws), workspaceDir: t.ws.dir };
      const denied = writeAccessReason(t.system, policy);
      if (denied) return { error: `"${t.shown}" ${denied}` };
      if (s.type !== "directory") {
        await t.ops.remove(t.system, this.openGuard("write", t));
        return { path: t.shown, filesUpdate: null };
      }
      const tree = await this.collectTree(t.ops, t.system);
      if (tree === undefined) return { error: `'${t.shown}' holds more than ${this.s.maxWalkFiles} entries; delete its subdirectories one at a time.` };
      const protectedInside = tree.entries.filter((e) => writeAccessReason(e, policy) !== undefined);
      if (protectedInside.length > 0) {
        const names = protectedInside.slice(0, 3).map((e) => this.shownPath(t.ws, e));
        return {
          error: `'${t.shown}' was not deleted: it holds protected credential files (${names.join(", ")}${protectedInside.length > 3 ? ", …" : ""}) that the agent never deletes. Delete the other files one by one, or ask the user to remove the directory.`,
        };
      }
      const guard = this.openGuard("write", t);
      for (const e of tree.entries) await t.ops.remove(e, guard);
      // deepagents' rule for "/": its contents are cleared, the workspace directory itself stays.
      for (const d of tree.dirs.reverse()) if (!isRoot || d !== t.system) await t.ops.removeEmptyDir(d);
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
   * Literal-text search on the package's guarded search engine (as search_files: ripgrep where
   * the files are, else its JS walk; credential files never searched nor counted). Also skips
   * binary files (extension or content); redacts matched lines.
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
      const found = await this.grepLiteral(t, pattern, glob ?? undefined, cap);
      const matches = found.matches.slice(0, cap).map((m) => {
        const line = m.text.length > this.s.maxLineChars ? `${m.text.slice(0, this.s.maxLineChars)}... [truncated]` : m.text;
        return { path: this.shownPath(t.ws, m.path), line: m.line, text: this.s.redact ? redactSecrets(line, { startsMidFile: true }) : line };
      });
      // Credential files were never searched; nothing here (not even an error) depends on whether they would have matched.
      const result: GrepResult = { matches };
      if (found.truncated || found.matches.length > cap) result.truncated = true;
      return result;
    });
  }

  /**
   * Writes each `[path, bytes]` into the workspace atomically (parents created, existing files
   * replaced), as deepagents' protocol asks. Refused with `permission_denied`: credential files,
   * device paths and files over `maxTransferBytes`; `invalid_path`: paths out of the workspace;
   * `is_directory`: a directory. Never throws.
   */
  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    const out: FileUploadResponse[] = [];
    for (const item of Array.isArray(files) ? files : []) {
      const [filePath, bytes] = Array.isArray(item) ? item : [String(item), undefined];
      try {
        const ws = this.workspace();
        const ops = await this.s.environments.fileOpsFor(ws.threadId);
        const got = await putFile(ws, ops, filePath, bytes as Uint8Array, this.transferSettings());
        if (isTransferRefusal(got)) {
          out.push({ path: filePath, error: got.code });
          continue;
        }
        await this.noteSeen(ops, await ws.resolve(filePath, ops));
        out.push({ path: filePath, error: null });
      } catch {
        out.push({ path: filePath, error: "invalid_path" });
      }
    }
    return out;
  }

  /**
   * The raw bytes of each path (not redacted: this is the application's way out, and
   * deepagents' own memory, skills and history offloading read through it). Credential files,
   * device and non-regular files and files over `maxTransferBytes` are refused with
   * `permission_denied`; a missing file is `file_not_found`, a directory `is_directory`.
   */
  async downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    const out: FileDownloadResponse[] = [];
    for (const filePath of Array.isArray(paths) ? paths : []) {
      try {
        const ws = this.workspace();
        const ops = await this.s.environments.fileOpsFor(ws.threadId);
        const got = await getFile(ws, ops, filePath, this.transferSettings());
        out.push(isTransferRefusal(got) ? { path: filePath, content: null, error: got.code } : { path: filePath, content: got.content, error: null });
      } catch {
        out.push({ path: filePath, content: null, error: "invalid_path" });
      }
    }
    return out;
  }

  // ---- internals ----

  private transferSettings(): TransferSettings {
    return { credentialPatterns: this.s.credentialPatterns, maxBytes: this.s.maxTransferBytes, allowHardLinks: this.s.allowHardLinks };
  }

  /**
   * Everything under `dir` without following symlinks: non-directory entries, and directories
   * parents first (`dir` included). `undefined` past `maxWalkFiles` entries.
   */
  private async collectTree(ops: FileOperations, dir: string): Promise<{ entries: string[]; dirs: string[] } | undefined> {
    const entries: string[] = [];
    const dirs: string[] = [];
    const queue = [dir];
    while (queue.length > 0) {
      const current = queue.shift()!;
      dirs.push(current);
      for (const e of await ops.readdir(current)) {
        if (entries.length + dirs.length > this.s.maxWalkFiles) return undefined;
        const child = joinSystem(current, e.name);
        if (e.type === "directory") queue.push(child);
        else entries.push(child);
      }
    }
    return { entries, dirs };
  }

  /**
   * Symlinks under `dir` whose real target is a regular file inside the workspace (never
   * followed into directories). `truncated` when more than `cap` were found.
   */
  private async linksToFiles(t: Target, dir: string, cap: number): Promise<{ files: { system: string; rel: string }[]; truncated: boolean }> {
    const found: { system: string; rel: string }[] = [];
    let level = [dir];
    let dirsSeen = 0;
    while (level.length > 0) {
      dirsSeen += level.length;
      if (dirsSeen > this.s.maxWalkFiles) return { files: found, truncated: true };
      // One directory level at a time, its readdirs in parallel (bounded by `io`).
      const listed = await Promise.all(level.map((d) => this.io(() => t.ops.readdir(d).catch(() => []))));
      const next: string[] = [];
      const links: string[] = [];
      listed.forEach((entries, i) => {
        for (const e of entries) {
          const child = joinSystem(level[i]!, e.name);
          if (e.type === "directory" && !this.s.skipDirs.has(e.name)) next.push(child);
          else if (e.type === "symlink") links.push(child);
        }
      });
      const kept = await Promise.all(
        links.map((link) =>
          this.io(async () => {
            const real = await t.ops.realpath(link).catch(() => undefined);
            if (real === undefined || t.ws.toAgentPath(real) === real) return undefined;
            return (await t.ops.stat(real).catch(() => null))?.type === "file" ? link : undefined;
          }),
        ),
      );
      for (const link of kept) {
        if (link === undefined) continue;
        if (found.length >= cap) return { files: found, truncated: true };
        found.push({ system: link, rel: relativeTo(dir, link) });
      }
      level = next;
    }
    return { files: found, truncated: false };
  }

  /** Remembers the current mtime of the file behind `system` after a write. */
  private async noteSeen(ops: FileOperations, system: string): Promise<void> {
    const st = await ops.stat(system).catch(() => null);
    if (st?.type === "file") this.s.seen.remember(system, st.mtimeMs);
  }

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
      const ops = await this.s.environments.fileOpsFor(ws.threadId);
      const system = await ws.resolve(agentPath, ops);
      return await fn({ ws, ops, system, shown: this.shownPath(ws, system) });
    } catch (err) {
      const message =
        err instanceof WorkspacePathError || err instanceof GlobLimitError || err instanceof SearchEngineError
          ? err.message
          : err instanceof OpenRefusedError
            ? `"${agentPath}" ${err.reason}`
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
  private async openRead(t: Target, loadMedia: boolean, loads: BinaryLoads = {}): Promise<{ error: string } | Exclude<OpenedRead, { kind: "refused" }>> {
    const policy = this.policy(t.ws);
    const named = contentAccessReason(t.system, { ...policy, workspaceDir: t.ws.dir });
    if (named) return { error: `"${t.shown}" ${named}` };
    const s = await t.ops.stat(t.system);
    if (!s) return { error: await this.notFound(t) };
    const nonRegular = nonRegularFileReason(t.shown, s);
    if (nonRegular) return { error: nonRegular };
    // What the name leads to: `README.txt -> .env` is the credential file it points at.
    const real = await t.ops.realpath(t.system).catch(() => t.system);
    const denied = contentAccessReason(real, policy);
    if (denied) return { error: `"${t.shown}" ${denied}` };
    const target = { systemPath: t.system, shown: t.shown, names: [t.system, real] };
    const guard = this.openGuard("read", t);
    if (loadMedia) {
      const opened = await openForRead(t.ops, target, s.size, guard, this.s.maxImageBytes, loads);
      return opened.kind === "refused" ? { error: opened.reason } : opened;
    }
    const head = await t.ops.readBytes(t.system, 0, Math.min(SNIFF_BYTES, s.size), guard);
    const decision = mediaReadDecision(t.shown, target.names, head, s.size, this.s.maxImageBytes);
    if (decision.action === "refuse") return { error: decision.reason };
    if (decision.action === "load") return { error: `'${t.shown}' is ${decision.media.kind === "image" ? "an image" : "a PDF"}, not a text file: it can be read but not edited.` };
    return { kind: "text" };
  }

  /** A PDF's text as lines (page headers included), windowed like a text file. */
  private async readPdf(t: Target, bytes: Buffer, request: ReadRequest): Promise<ReadResult> {
    let lines: string[];
    try {
      lines = await pdfLines(bytes);
    } catch (err) {
      if (err instanceof PdfReadError) return { error: `"${t.shown}" ${err.message}` };
      throw err;
    }
    const read = readLinesOf(lines, request, this.s.maxLineChars);
    return this.windowResult(t, read, request, bytes.length, async () => lines.length, "lines of extracted PDF text");
  }

  /**
   * Remote FileOperations cannot verify the descriptor they read from: judge the real path again
   * after the read (local reads were verified on the descriptor and skip this).
   */
  private async recheckAfterRead(t: Target): Promise<string | undefined> {
    if (isLocalFileOperations(t.ops)) return undefined;
    const real = await t.ops.realpath(t.system).catch(() => undefined);
    const reason = real === undefined ? "was moved or removed while it was being read. Try again." : contentAccessReason(real, this.policy(t.ws));
    return reason ? `"${t.shown}" ${reason}` : undefined;
  }

  /** The access policy (src/guards/access.ts) of a workspace: confined, this backend's patterns. */
  private policy(ws: Workspace): AccessPolicy {
    return { workspaceDir: ws.realDirectory(), confine: true, credentialPatterns: this.s.credentialPatterns, allowHardLinks: this.s.allowHardLinks };
  }

  /** Checked by the FileOperations on the descriptor it actually opens (race-free locally). */
  private openGuard(kind: "read" | "write", t: Target): OpenGuard {
    return accessOpenGuard(kind, this.policy(t.ws));
  }

  private async refuseWrite(t: Target, content: string, what = "content"): Promise<string | undefined> {
    const rel = t.ws.toAgentPath(t.system);
    if (rel === ".") return "The path names the workspace directory itself; add a file name.";
    const policy = this.policy(t.ws);
    const real = await realTarget(t.ops, t.system);
    const denied = writeAccessReason(t.system, { ...policy, workspaceDir: t.ws.dir }) ?? writeAccessReason(real, policy);
    if (denied) return `"${t.shown}" ${denied}`;
    return writeContentReason(content, what);
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
    // The engine does not follow symlinks: links to files inside the workspace are found alongside (read follows them too).
    const linksFound = this.linksToFiles(t, t.system, this.s.maxWalkFiles);
    const outcome = await this.search(t, { target: "files", pattern: "*", mode: "files_only", maxRecords: this.s.maxWalkFiles, maxOutputBytes: 64 * 1024 * 1024 });
    const files = outcome.files.map((system) => ({ system, rel: relativeTo(t.system, system) }));
    const links = await linksFound;
    const room = Math.max(0, this.s.maxWalkFiles - files.length);
    files.push(...links.files.slice(0, room));
    return { files, truncated: !outcome.complete || links.truncated || links.files.length > room };
  }

  /** Lines holding `literal` (system paths, raw text); binary files by extension or content left out. */
  private async grepLiteral(t: Target, literal: string, glob: string | undefined, cap: number): Promise<{ matches: GrepMatch[]; truncated: boolean }> {
    const outcome = await this.search(
      t,
      { target: "content", pattern: escapeRegExp(literal), mode: "content", ...(glob ? { fileGlob: glob } : {}), maxRecords: cap + 1, maxOutputBytes: 16 * 1024 * 1024 },
      // Binary files by extension are skipped before anything is counted, like credential files.
      hasBinaryExtension,
    );
    // ripgrep skips files with NUL bytes only: a PNG header without one still "matches".
    // Only files whose matched lines look binary (invalid UTF-8, control bytes) are sniffed.
    const binary = await this.binaryByContent(t, [...new Set(outcome.lines.filter((l) => l.match && SUSPECT_LINE.test(l.text)).map((l) => l.path))]);
    const matches = outcome.lines.filter((l) => l.match && !binary.has(l.path)).map((l) => ({ path: l.path, line: l.line, text: l.text }));
    return { matches, truncated: !outcome.complete };
  }

  /** One request on the guarded search engine in the target's workspace; its error becomes the call's answer. */
  private async search(t: Target, req: Pick<SearchRequest, "target" | "pattern" | "mode" | "fileGlob" | "maxRecords" | "maxOutputBytes">, alsoExclude?: (p: string) => boolean): Promise<SearchOutcome> {
    const place = await searchPlaceFor(this.s.environments, t.ops, t.ws.threadId);
    const policy = this.policy(t.ws);
    const outcome = await runGuardedSearch(
      { ...req, cwd: t.ws.dir, searchPath: t.system, context: 0, timeoutMs: LIMITS.searchTimeoutMs },
      { ...place, policy, workspaceDir: t.ws.dir, verifyRoot: policy.workspaceDir, ...(alsoExclude ? { alsoExclude } : {}) },
    );
    if (outcome.error) throw new SearchEngineError(outcome.error);
    return outcome;
  }

  /** Which of `files` are binary by their first bytes (unreadable files count as binary: not shown). */
  private async binaryByContent(t: Target, files: string[]): Promise<Set<string>> {
    const guard = this.openGuard("read", t);
    const flags = await Promise.all(files.map((f) => this.io(() => t.ops.readBytes(f, 0, SNIFF_BYTES, guard).then(sniffBinary, () => true))));
    return new Set(files.filter((_, i) => flags[i]));
  }

  private shownPath(ws: Workspace, system: string): string {
    const rel = ws.toAgentPath(system);
    if (rel === system) return ws.rewrite(system);
    return rel === "." ? "/" : `/${rel.replace(/\\/g, "/")}`;
  }
}

/** A matched line holding a replacement character (invalid UTF-8) or a C0 control byte other than tab/CR. */
const SUSPECT_LINE = /[\uFFFD\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/;

/** Matches a grep returns before saying it was truncated (deepagents prints every match). */
const MAX_GREP_MATCHES = 1_000;
/** A search engine's answer phrased for the model (invalid glob, regex timeout…): shown as is. */
class SearchEngineError extends WorkbenchError {
  readonly code = "SEARCH_ENGINE";
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
