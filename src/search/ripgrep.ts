/**
 * The ripgrep engine: `rg` spawned with an argument array (never a shell), `--` before the
 * pattern, its output parsed as a stream, bounded by a timeout, an output cap, a record cap and
 * a line-width cap (`--max-columns`).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { Environment } from "../environment/environment.js";
import { shellQuoteAll } from "../environment/shellQuote.js";
import { LocalFileOperations } from "../environment/localFileOperations.js";
import type { FileOperations } from "../environment/fileOperations.js";
import { LIMITS } from "../guards/limits.js";
import { isAtomicTempPath } from "../environment/tempFiles.js";
import { runJsSearch } from "./fallback.js";
import { watchFifoWaits } from "./fifoWait.js";
import { GlobLimitError } from "./globMatch.js";
import { globMatcher, relativePath } from "./globs.js";
import { emptyOutcome, type LineRecord, type SearchOutcome, type SearchRequest } from "./types.js";

/** Flags that make ripgrep see the same files as the JS fallback, whatever the user's setup. */
const COMMON_FLAGS = [
  "--no-config", // a user's RIPGREP_CONFIG_PATH must not change flags or output
  "--hidden", // dotfiles are searched (credential files are filtered by name afterwards)
  "--glob=!.git",
  "--no-require-git", // .gitignore applies in a plain directory too
  "--no-ignore-parent", // ignore files above the workspace are not the agent's
  "--no-ignore-global",
  "--no-ignore-exclude",
  "--no-ignore-dot", // only .gitignore, like the fallback
];

/** After a kill, answer at the latest this long later even if the output pipe stays open. */
const KILL_GRACE_MS = 500;

let detected: Promise<string | undefined> | undefined;

/** The ripgrep binary to use: `rg` when it runs (checked once per process), else `undefined`. */
export function detectRipgrep(): Promise<string | undefined> {
  detected ??= new Promise((resolve) => {
    const child = spawn("rg", ["--version"], { stdio: "ignore" });
    child.on("error", () => resolve(undefined));
    child.on("close", (code) => resolve(code === 0 ? "rg" : undefined));
  });
  return detected;
}

/**
 * Builds the argv for a request (exported for tests: the pattern always follows `--`).
 * `workspaceIgnore`: the workspace's own .gitignore, passed explicitly so it also applies when a
 * subdirectory is searched (`--no-ignore-parent` would drop it); its rules anchor at `cwd`.
 */
export function ripgrepArgs(req: SearchRequest, workspaceIgnore?: string): string[] {
  const target = relativeTarget(req);
  const flags = [...COMMON_FLAGS, ...(workspaceIgnore ? [`--ignore-file=${workspaceIgnore}`] : [])];
  // Globs are applied by the caller (see runRipgrep): ripgrep's --glob would override .gitignore.
  if (req.target === "files") return ["--files", "--null", ...flags, "--", target];
  if (req.mode === "files_only") return ["--files-with-matches", "--null", ...flags, "--", req.pattern, target];
  if (req.mode === "count") return ["--count", "--with-filename", "--null", ...flags, "--", req.pattern, target];
  const context = req.context > 0 ? [`--context=${req.context}`, "--no-context-separator"] : [];
  // Not --json: its printer ignores --max-columns and builds every submatch of a line in memory
  // (one search over a 64 MB single-line file peaked at 6.9 GB). The standard printer with a
  // column cap keeps ripgrep's memory near the size of the longest line.
  const lines = ["--no-heading", "--with-filename", "--line-number", "--null", "--color=never", `--max-columns=${LIMITS.searchLineMaxBytes}`, "--max-columns-preview"];
  return [...lines, ...flags, ...context, "--", req.pattern, target];
}

/** Where ripgrep runs when not as a local process: inside an Environment (SSH host, container). */
export interface RipgrepVia {
  environment: Environment;
  /** The environment's file access (to look for the workspace's .gitignore). */
  fileOps: Pick<FileOperations, "lstat" | "realpath">;
}

/** A started ripgrep: its output arrives through the handlers given to {@link launch}. */
interface Launched {
  kill(): void;
  /** The local process (absent when ripgrep runs inside an Environment). */
  pid?: number;
}

interface LaunchHandlers {
  stdout(chunk: Buffer): void;
  stderr(chunk: string): void;
  error(err: Error): void;
  close(code: number | null): void;
}

/** Starts `binary args…` in `cwd`: a local child process, or `exec` inside `via.environment`. */
function launch(binary: string, args: string[], cwd: string, timeoutMs: number, via: RipgrepVia | undefined, on: LaunchHandlers): Launched {
  if (!via) {
    const child = spawn(binary, args, { cwd, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    child.stdout.on("data", on.stdout);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", on.stderr);
    child.on("error", on.error);
    child.on("close", on.close);
    return { kill: () => child.kill("SIGKILL"), ...(child.pid !== undefined ? { pid: child.pid } : {}) };
  }
  const abort = new AbortController();
  const stderrDecoder = new StringDecoder("utf8");
  let streamed = false;
  // Started on a later tick: handlers never run before the caller has the Launched handle.
  Promise.resolve()
    .then(() =>
      via.environment.exec(shellQuoteAll([binary, ...args]), {
        cwd,
        // A little past the engine's own timer, which stops the search first and answers.
        timeoutMs: timeoutMs + KILL_GRACE_MS,
        signal: abort.signal,
        onOutput: (chunk, stream) => {
          streamed = true;
          if (stream === "stdout") on.stdout(chunk);
          else on.stderr(stderrDecoder.write(chunk));
        },
      }),
    )
    .then(
      (result) => {
        if (!streamed) {
          // An environment that ignores onOutput answers with buffered output.
          on.stdout(result.stdout);
          on.stderr(result.stderr);
        }
        on.close(result.exitCode >= 0 ? result.exitCode : null);
      },
      (err: Error) => on.error(err),
    );
  return { kill: () => abort.abort() };
}

/**
 * Runs ripgrep for `req`, as a local process or inside `via.environment` (paths are the same
 * strings there). Never rejects: failures come back in `error`.
 */
export async function runRipgrep(req: SearchRequest, binary = "rg", via?: RipgrepVia): Promise<SearchOutcome> {
  const out = emptyOutcome("ripgrep");
  let globbed: (file: string) => boolean;
  try {
    globbed = pathFilter(req);
  } catch (err) {
    if (err instanceof GlobLimitError) return { ...out, error: err.message };
    throw err;
  }
  const ignoreFile = path.join(req.cwd, ".gitignore");
  const ignore = await workspaceIgnoreState(req.cwd, ignoreFile, via?.fileOps ?? LOCAL_IGNORE_FS);
  const args = ripgrepArgs(req, ignore === "file" && req.searchPath !== req.cwd ? ignoreFile : undefined);
  // A planted `.gitignore -> /outside/file` is never read as rules: .gitignore handling is off for this search.
  if (ignore === "foreign") args.splice(args.indexOf("--"), 0, "--no-ignore-vcs");
  const exclude = req.target === "content" ? req.exclude : undefined;
  // Another writer's half-written temp file is never a result.
  const wanted = (file: string) => !isAtomicTempPath(file) && globbed(file) && !exclude?.(file);
  const started = Date.now();
  let stuck = false;
  const outcome = await new Promise<SearchOutcome>((resolveOnce) => {
    let settled = false;
    let unwatch = () => undefined as void;
    const resolve = (o: SearchOutcome) => {
      if (settled) return;
      settled = true;
      unwatch();
      resolveOnce(o);
    };
    let bytes = 0;
    let pending = "";
    let stderr = "";
    let stopped = false;
    const stop = (reason: SearchOutcome["stopReason"]) => {
      if (stopped) return;
      stopped = true;
      out.complete = false;
      out.stopReason = reason;
      child.kill();
      // A grandchild holding the pipe (a wrapper script) must not delay the answer.
      setTimeout(() => resolve(out), KILL_GRACE_MS).unref();
    };
    const timer = setTimeout(() => stop("timeout"), req.timeoutMs);
    // --count prints one record per line; file lists are NUL-separated (names may hold newlines).
    const separator = req.target === "content" && req.mode === "count" ? "\n" : "\0";
    const decoder = new StringDecoder("utf8");
    let matches = 0;
    const take = (record: string) => {
      if (stopped || record === "") return;
      if (req.target === "files" || req.mode === "files_only") {
        const file = absolute(req.cwd, record);
        if (!wanted(file)) return;
        req.onResultFile?.(file);
        out.files.push(file);
        if (out.files.length >= req.maxRecords) stop("limit");
      } else if (req.mode === "count") {
        const nul = record.lastIndexOf("\0");
        const file = absolute(req.cwd, record.slice(0, nul));
        if (!wanted(file)) return;
        req.onResultFile?.(file);
        out.counts.push({ path: file, count: Number(record.slice(nul + 1)) });
        if (out.counts.length >= req.maxRecords) stop("limit");
      }
    };
    const lineParser = req.target === "content" && req.mode === "content" ? new LineRecordParser() : undefined;
    let lastFile: string | undefined;
    const takeLine = (rec: LineRecord) => {
      if (stopped || !wanted(rec.path)) return;
      if (rec.path !== lastFile) req.onResultFile?.((lastFile = rec.path));
      out.lines.push(rec);
      if (rec.match && ++matches >= req.maxRecords) stop("limit");
    };
    const onStdout = (chunk: Buffer) => {
      if (stopped) return;
      bytes += chunk.length;
      if (bytes > req.maxOutputBytes) return stop("output");
      if (lineParser) {
        lineParser.push(chunk, req.cwd, takeLine);
        return;
      }
      const text = decoder.write(chunk);
      if (!text.includes(separator)) {
        pending += text; // a long record arriving in pieces: no re-splitting per piece
        return;
      }
      const parts = (pending + text).split(separator);
      pending = parts.pop()!;
      for (const p of parts) take(p);
    };
    const onClose = (code: number | null) => {
      clearTimeout(timer);
      if (!stopped) take(pending + decoder.end());
      // 0: matches, 1: none; 2: an error — with results it is a per-file problem (permission…).
      const problems = fatalStderr(stderr);
      if (code === 2 && !stopped && out.lines.length + out.files.length + out.counts.length === 0 && problems !== "") {
        out.error = describeRipgrepError(problems);
      }
      resolve(out);
    };
    const child = launch(binary, args, req.cwd, req.timeoutMs, via, {
      stdout: onStdout,
      stderr: (chunk) => {
        if (stderr.length < 8192) stderr += chunk;
      },
      error: (err) => {
        clearTimeout(timer);
        resolve({ ...out, error: `ripgrep could not be started: ${err.message}` });
      },
      close: (code) => onClose(code),
    });
    // A planted FIFO (`.gitignore`) holds ripgrep for good: stop it and let the JS engine answer.
    if (child.pid !== undefined) {
      unwatch = watchFifoWaits(child.pid, () => {
        if (stopped) return;
        stopped = stuck = true;
        clearTimeout(timer);
        child.kill();
        resolve(out);
      });
    }
  });
  if (!stuck) {
    // Every pushed record went through `wanted` (exclude included) and `onResultFile`.
    outcome.announced = true;
    if (exclude) outcome.screenedByName = true;
    return outcome;
  }
  return runJsSearch({ ...req, timeoutMs: Math.max(1, req.timeoutMs - (Date.now() - started)) });
}

/**
 * Parses the standard printer's `PATH\0LINE:TEXT\n` (match) and `PATH\0LINE-TEXT\n` (context)
 * records from byte chunks. Paths may hold newlines (hence `--null`); text never does. Bytes are
 * decoded per field, so a character split across chunks survives.
 */
class LineRecordParser {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer, cwd: string, take: (rec: LineRecord) => void): void {
    let buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let pos = 0;
    for (;;) {
      const nul = buf.indexOf(0, pos);
      const eol = buf.indexOf(0x0a, pos);
      if (eol !== -1 && (nul === -1 || eol < nul)) {
        // A line without a path separator: ripgrep's "binary file matches" notice for an explicit file.
        pos = eol + 1;
        continue;
      }
      if (nul === -1) break;
      const end = buf.indexOf(0x0a, nul + 1);
      if (end === -1) break;
      const rec = parseRecord(buf, pos, nul, end, cwd);
      if (rec) take(rec);
      pos = end + 1;
    }
    buf = buf.subarray(pos);
    this.pending = buf.length === 0 ? Buffer.alloc(0) : Buffer.from(buf);
  }
}

/** `--max-columns-preview` ends a cut line with this; the cut is marked again downstream. */
const PREVIEW_SUFFIX = " [... omitted end of long line]";

function parseRecord(buf: Buffer, start: number, nul: number, end: number, cwd: string): LineRecord | undefined {
  let i = nul + 1;
  let line = 0;
  while (i < end && buf[i]! >= 0x30 && buf[i]! <= 0x39) line = line * 10 + (buf[i++]! - 0x30);
  const sep = buf[i];
  if (i === nul + 1 || (sep !== 0x3a && sep !== 0x2d)) return undefined;
  let text = buf.toString("utf8", i + 1, end);
  if (text.endsWith("\r")) text = text.slice(0, -1);
  if (text.endsWith(PREVIEW_SUFFIX)) text = text.slice(0, -PREVIEW_SUFFIX.length);
  return { path: absolute(cwd, buf.toString("utf8", start, nul)), line, text, match: sep === 0x3a };
}

/** The glob filters of the request (file_glob, and the name glob of target="files"), on absolute paths. */
function pathFilter(req: SearchRequest): (file: string) => boolean {
  const globs = [req.fileGlob, req.target === "files" ? req.pattern : undefined].filter((g): g is string => !!g).map(globMatcher);
  if (globs.length === 0) return () => true;
  const explicitFile = (file: string) => file === req.searchPath;
  return (file) => explicitFile(file) || globs.every((g) => g(relativePath(req.cwd, file)));
}

function absolute(cwd: string, p: string): string {
  // Fast path for ripgrep's usual output (normalised, relative to cwd): 100k results add up.
  if (path.sep === "/" && !p.startsWith("/") && !p.startsWith("../") && !p.includes("/../") && !p.includes("/./")) {
    const rel = p.startsWith("./") ? p.slice(2) : p;
    return rel === "" || rel === "." ? cwd : `${cwd}/${rel}`;
  }
  return path.resolve(cwd, p);
}

function relativeTarget(req: SearchRequest): string {
  const rel = path.relative(req.cwd, req.searchPath);
  if (rel === "") return ".";
  return rel.startsWith("..") || path.isAbsolute(rel) ? req.searchPath : rel;
}

/**
 * `file`: the workspace's .gitignore is a regular file (or a link to one inside the workspace);
 * `foreign`: a symlink leading out of it (its content must never be read); `none`.
 */
async function workspaceIgnoreState(cwd: string, ignoreFile: string, fs: Pick<FileOperations, "lstat" | "realpath">): Promise<"file" | "foreign" | "none"> {
  const s = await fs.lstat(ignoreFile).catch(() => null);
  if (!s) return "none";
  if (s.type === "file") return "file";
  if (s.type !== "symlink") return "none";
  const [real, realCwd] = await Promise.all([fs.realpath(ignoreFile).catch(() => undefined), fs.realpath(cwd).catch(() => cwd)]);
  const rel = real === undefined ? ".." : path.relative(realCwd, real);
  return rel.startsWith("..") || path.isAbsolute(rel) ? "foreign" : "file";
}

/** This machine's disk, for {@link workspaceIgnoreState}. */
const LOCAL_IGNORE_FS: Pick<FileOperations, "lstat" | "realpath"> = new LocalFileOperations();

/**
 * The part of ripgrep's stderr that explains a failed request. Per-file warnings (unreadable
 * files, ignore-file parse errors — which quote the ignore file's lines, possibly a planted
 * link's target) are dropped: they are never fatal and never shown.
 */
function fatalStderr(stderr: string): string {
  return stderr
    .split("\n")
    .filter((line) => line.trim() !== "" && !/error parsing glob|\.(git)?ignore|\.rgignore|: (Permission denied|No such file|Too many levels)|\(os error \d+\)/i.test(line))
    .join("\n");
}

/**
 * What the model is told: only a regex parse error is quoted (it quotes the model's own
 * pattern); anything else is described without echoing ripgrep's text, which can hold file content.
 */
function describeRipgrepError(stderr: string): string {
  const text = stderr.trim();
  if (/regex parse error|error parsing regex/i.test(text)) {
    return `Invalid regular expression: ${text.replace(/\s+/g, " ").slice(0, 300)}. Escape special characters such as ( ) [ ] { } . * + ? | with a backslash, or search a plain word.`;
  }
  return "ripgrep could not run this search (an invalid pattern or an unreadable path). Check the pattern, or search a plain word in a narrower path.";
}
