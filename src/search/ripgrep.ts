/**
 * The ripgrep engine: `rg` spawned with an argument array (never a shell), `--` before the
 * pattern, `--json` parsed as a stream, bounded by a timeout, an output cap and a record cap.
 */
import { spawn } from "node:child_process";
import { lstat, realpath } from "node:fs/promises";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { Environment } from "../fileops/environment.js";
import { shellQuoteAll } from "../fileops/quote.js";
import type { FileOperations } from "../fileops/types.js";
import { globMatcher, relativePath } from "./globs.js";
import { emptyOutcome, type SearchOutcome, type SearchRequest } from "./types.js";

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
  const context = req.context > 0 ? [`--context=${req.context}`] : [];
  return ["--json", ...flags, ...context, "--", req.pattern, target];
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
}

interface LaunchHandlers {
  stdout(chunk: string): void;
  stderr(chunk: string): void;
  error(err: Error): void;
  close(code: number | null): void;
}

/** Starts `binary args…` in `cwd`: a local child process, or `exec` inside `via.environment`. */
function launch(binary: string, args: string[], cwd: string, timeoutMs: number, via: RipgrepVia | undefined, on: LaunchHandlers): Launched {
  if (!via) {
    const child = spawn(binary, args, { cwd, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", on.stdout);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", on.stderr);
    child.on("error", on.error);
    child.on("close", on.close);
    return { kill: () => child.kill("SIGKILL") };
  }
  const abort = new AbortController();
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
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
          on[stream](decoders[stream].write(chunk));
        },
      }),
    )
    .then(
      (result) => {
        if (!streamed) {
          // An environment that ignores onOutput answers with buffered output.
          on.stdout(result.stdout.toString("utf8"));
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
  const ignoreFile = path.join(req.cwd, ".gitignore");
  const ignore = await workspaceIgnoreState(req.cwd, ignoreFile, via?.fileOps ?? LOCAL_IGNORE_FS);
  const args = ripgrepArgs(req, ignore === "file" && req.searchPath !== req.cwd ? ignoreFile : undefined);
  // A planted `.gitignore -> /outside/file` is never read as rules: .gitignore handling is off for this search.
  if (ignore === "foreign") args.splice(args.indexOf("--"), 0, "--no-ignore-vcs");
  const out = emptyOutcome("ripgrep");
  return new Promise((resolveOnce) => {
    let settled = false;
    const resolve = (o: SearchOutcome) => {
      if (settled) return;
      settled = true;
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
    // --json and --count print one record per line; file lists are NUL-separated (names may hold newlines).
    const separator = req.target === "content" && req.mode !== "files_only" ? "\n" : "\0";
    let matches = 0;
    const globbed = pathFilter(req);
    const exclude = req.target === "content" ? req.exclude : undefined;
    const wanted = exclude ? (file: string) => globbed(file) && !exclude(file) : globbed;
    const take = (record: string) => {
      if (stopped || record === "") return;
      if (req.target === "files" || req.mode === "files_only") {
        const file = absolute(req.cwd, record);
        if (!wanted(file)) return;
        out.files.push(file);
        if (out.files.length >= req.maxRecords) stop("limit");
      } else if (req.mode === "count") {
        const nul = record.lastIndexOf("\0");
        const file = absolute(req.cwd, record.slice(0, nul));
        if (!wanted(file)) return;
        out.counts.push({ path: file, count: Number(record.slice(nul + 1)) });
        if (out.counts.length >= req.maxRecords) stop("limit");
      } else if (parseJsonLine(record, req.cwd, out, wanted) && ++matches >= req.maxRecords) {
        stop("limit");
      }
    };
    const onStdout = (chunk: string) => {
      if (stopped) return;
      bytes += Buffer.byteLength(chunk);
      if (bytes > req.maxOutputBytes) return stop("output");
      if (!chunk.includes(separator)) {
        pending += chunk; // a long record arriving in pieces: no re-splitting per piece
        return;
      }
      const parts = (pending + chunk).split(separator);
      pending = parts.pop()!;
      for (const p of parts) take(p);
    };
    const onClose = (code: number | null) => {
      clearTimeout(timer);
      if (!stopped) take(pending);
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
  });
}

/** Parses one `--json` line into `out`; true when it added a match. */
function parseJsonLine(line: string, cwd: string, out: SearchOutcome, wanted: (file: string) => boolean): boolean {
  let msg: { type?: string; data?: { path?: RgData; lines?: RgData; line_number?: number } };
  try {
    msg = JSON.parse(line);
  } catch {
    return false;
  }
  if ((msg.type !== "match" && msg.type !== "context") || !msg.data?.path || !msg.data.lines) return false;
  const file = absolute(cwd, dataText(msg.data.path));
  if (!wanted(file)) return false;
  const text = dataText(msg.data.lines).replace(/\r?\n$/, "");
  out.lines.push({ path: file, line: msg.data.line_number ?? 0, text, match: msg.type === "match" });
  return msg.type === "match";
}

interface RgData {
  text?: string;
  bytes?: string;
}

/** ripgrep sends non-UTF-8 paths and lines base64-encoded. */
function dataText(d: RgData): string {
  return d.text ?? Buffer.from(d.bytes ?? "", "base64").toString("utf8");
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
const LOCAL_IGNORE_FS: Pick<FileOperations, "lstat" | "realpath"> = {
  lstat: async (p) => {
    const s = await lstat(p).catch(() => undefined);
    if (!s) return null;
    return { type: s.isFile() ? "file" : s.isSymbolicLink() ? "symlink" : s.isDirectory() ? "directory" : "other", size: s.size, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 };
  },
  realpath: (p) => realpath(p),
};

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
