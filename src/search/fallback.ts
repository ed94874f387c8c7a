/**
 * The JS engine, used when ripgrep is not installed: an async walk that honours .gitignore (the
 * linear-time matcher of gitignoreMatch.ts), skips `.git`, symlinks and binary files (NUL byte), and tests each line
 * with a JavaScript RegExp.
 *
 * Regex dialect: patterns are JavaScript regular expressions, ripgrep's are Rust regex. Plain
 * text, classes, anchors, alternation and quantifiers behave the same; a leading `(?i)` is
 * translated to the `i` flag. Differences: `\w`, `\d`, `\b` are ASCII-only here (Unicode in
 * ripgrep); lookaround and backreferences work here but are errors in ripgrep; Rust-only syntax
 * (`(?x)`, `\pL`, `[[:alpha:]]`) is an error or literal here. Files over 64 MiB are skipped.
 *
 * Matching runs in a worker thread terminated at the deadline (src/search/regexWorker.ts): a
 * backtracking pattern ends the search with an error asking for a simpler pattern. RE2
 * (re2-wasm) was measured and rejected: its fixed 16 MiB heap aborts on a 12 MB file.
 */
import { constants, type Dirent } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import pLimit from "p-limit";
import { readWorkspaceFile, type VerifiedRoot } from "../environment/dirHandle.js";
import { openChecked } from "../environment/localFileOperations.js";
import { LIMITS, regexTimeoutMessage } from "../guards/limits.js";
import { GlobLimitError } from "./globMatch.js";
import { IgnoreWalk, workspaceIgnoreRules } from "./gitignoreMatch.js";
import { globMatcher, relativePath } from "./globs.js";
import { isAtomicTempName } from "../environment/tempFiles.js";
import { RegexRunner, RegexTimeoutError } from "./regexWorker.js";
import { emptyOutcome, type SearchOutcome, type SearchRequest } from "./types.js";

/** Files larger than this are not read by the fallback (ripgrep streams them instead). */
export const FALLBACK_MAX_FILE_BYTES = LIMITS.searchJsMaxFileBytes;
const IO_CONCURRENCY = 64;

/** Compiles a pattern as the fallback will use it, or returns a message for the model. */
export function compileSearchPattern(pattern: string): RegExp | string {
  let source = pattern;
  let flags = "";
  if (source.startsWith("(?i)")) {
    source = source.slice(4);
    flags = "i";
  }
  try {
    return new RegExp(source, flags);
  } catch (err) {
    return `${(err as Error).message}. Escape special characters such as ( ) [ ] { } . * + ? | with a backslash, or search a plain word.`;
  }
}

/**
 * The file access the walk uses: this machine's fs by default, or an environment's
 * FileOperations (see src/search/engine.ts) when the files live elsewhere.
 */
export interface WalkFiles {
  stat(p: string): Promise<{ size: number; isFile(): boolean; isDirectory(): boolean }>;
  realpath(p: string): Promise<string>;
  readdir(p: string): Promise<Array<Pick<Dirent, "name" | "isFile" | "isDirectory" | "isSymbolicLink">>>;
  /**
   * A `.gitignore`'s text; `undefined` when missing, not a regular file (a link may point
   * outside, a FIFO would block) or over `LIMITS.ignoreFileMaxBytes`. `root`: the searched tree.
   */
  readIgnoreFile(p: string, root: VerifiedRoot): Promise<string | undefined>;
  /**
   * The bytes of a file to search, or `undefined` to skip it (not a regular file, over
   * {@link FALLBACK_MAX_FILE_BYTES}). What is read must be inside `within` (verified after the open
   * where the backend can); `explicit` is the searched path itself, which may be a link.
   */
  readContent(p: string, where: { explicit: boolean; within: string }): Promise<Buffer | undefined>;
}

const LOCAL_FILES: WalkFiles = {
  stat: (p) => stat(p),
  realpath: (p) => realpath(p),
  readdir: (p) => readdir(p, { withFileTypes: true }),
  async readIgnoreFile(p, root) {
    const rel = relativePath(root.dir, p);
    const got = await readWorkspaceFile(root, rel, LIMITS.ignoreFileMaxBytes).catch(() => undefined);
    return got?.kind === "file" ? got.data.toString("utf8") : undefined;
  },
  async readContent(file, { explicit, within }) {
    // Open, then verify what was opened: a file swapped for a link after the directory was
    // read is not followed (O_NOFOLLOW), and a swapped parent directory is caught by the
    // descriptor check. The explicit search path may itself be a link inside the workspace.
    const flags = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (explicit ? 0 : (constants.O_NOFOLLOW ?? 0));
    const fh = await openChecked(file, flags, { within });
    try {
      const s = await fh.stat();
      return !s.isFile() || s.size > FALLBACK_MAX_FILE_BYTES ? undefined : await fh.readFile();
    } finally {
      await fh.close();
    }
  },
};

/** Runs the search in-process. Never rejects: failures come back in `error`. */
export async function runJsSearch(req: SearchRequest, files: WalkFiles = LOCAL_FILES): Promise<SearchOutcome> {
  const out = emptyOutcome("js");
  const regex = req.target === "content" ? compileSearchPattern(req.pattern) : undefined;
  if (typeof regex === "string") return { ...out, error: regex };
  const deadline = Date.now() + req.timeoutMs;
  // Files read must stay under the searched tree's real root: the workspace, or (open mode) the searched path.
  const relSearch = relativePath(req.cwd, req.searchPath);
  const rootOf = relSearch.startsWith("../") || relSearch === ".." || path.isAbsolute(relSearch) ? req.searchPath : req.cwd;
  const realRoot = await files.realpath(rootOf).catch(() => rootOf);
  let state: Walk;
  try {
    state = new Walk(req, out, deadline, files, { dir: rootOf, real: realRoot });
  } catch (err) {
    if (err instanceof GlobLimitError) return { ...out, error: err.message };
    throw err;
  }
  // A file whose matching alone took a third of the time limit is the pattern's fault.
  const matcher = regex ? new RegexRunner(regex.source, regex.flags, deadline, Math.min(1_000, req.timeoutMs / 3)) : undefined;
  try {
    const s = await files.stat(req.searchPath);
    if (s.isFile()) await state.visitFile(req.searchPath, true, matcher);
    else if (s.isDirectory()) await state.walk(req.searchPath, await state.initialLayers(), matcher);
  } catch (err) {
    out.error = `Cannot search "${req.searchPath}": ${(err as Error).message}`;
  } finally {
    matcher?.close();
  }
  return out;
}

class Walk {
  private readonly fileGlob?: (rel: string) => boolean;
  private readonly nameGlob?: (rel: string) => boolean;
  private matches = 0;
  /** Bounds open file handles: only leaf fs calls take a slot, never a recursion (no deadlock). */
  private readonly io = pLimit(IO_CONCURRENCY);
  private outputChars = 0;

  constructor(
    private readonly req: SearchRequest,
    private readonly out: SearchOutcome,
    private readonly deadline: number,
    private readonly files: WalkFiles,
    /** The searched root (the workspace) and its real path: every file read is verified to be inside it once opened. */
    private readonly root: VerifiedRoot,
  ) {
    if (req.fileGlob) this.fileGlob = globMatcher(req.fileGlob);
    if (req.target === "files") this.nameGlob = globMatcher(req.pattern);
  }

  /**
   * The .gitignore files between the workspace and the search root, positioned at the root (its
   * own is read by walk). As in ripgrep, a root inside an ignored directory is still searched.
   */
  async initialLayers(): Promise<IgnoreWalk> {
    const rel = this.rel(this.req.searchPath);
    if (rel.startsWith("../") || path.isAbsolute(rel)) return IgnoreWalk.EMPTY;
    let walk = IgnoreWalk.EMPTY;
    const parts = rel === "" ? [] : rel.split("/");
    for (let i = 0; i < parts.length; i++) {
      const base = parts.slice(0, i).join("/");
      // A symlinked .gitignore is never read (its target may be outside), as in walk().
      const text = await this.files.readIgnoreFile(path.join(this.req.cwd, base, ".gitignore"), this.root);
      if (text !== undefined) walk = walk.with(workspaceIgnoreRules(text));
      walk = walk.enter(parts[i]!);
    }
    return walk;
  }

  async walk(dir: string, parentLayers: IgnoreWalk, matcher: RegexRunner | undefined): Promise<void> {
    if (this.stopped()) return;
    let entries: Awaited<ReturnType<WalkFiles["readdir"]>>;
    try {
      entries = await this.io(() => this.files.readdir(dir));
    } catch {
      return; // unreadable directory: skipped, like ripgrep (which only warns)
    }
    let layers = parentLayers;
    if (entries.some((e) => e.name === ".gitignore" && e.isFile())) {
      const text = (await this.io(() => this.files.readIgnoreFile(path.join(dir, ".gitignore"), this.root)).catch(() => undefined)) ?? "";
      layers = parentLayers.with(workspaceIgnoreRules(text));
    }
    const work: Promise<void>[] = [];
    for (const e of entries) {
      if (e.name === ".git" || e.isSymbolicLink() || isAtomicTempName(e.name)) continue;
      const full = path.join(dir, e.name);
      // Only the entry itself is tested: the walk never enters an ignored directory.
      if (e.isDirectory()) {
        if (!layers.ignores(e.name, true)) work.push(this.walk(full, layers.enter(e.name), matcher));
      } else if (e.isFile() && !layers.ignores(e.name, false)) {
        work.push(this.visitFile(full, false, matcher));
      }
    }
    await Promise.all(work);
  }

  async visitFile(file: string, explicit: boolean, matcher: RegexRunner | undefined): Promise<void> {
    if (this.stopped()) return;
    const rel = this.rel(file);
    if (!explicit && this.fileGlob && !this.fileGlob(rel)) return;
    if (this.req.target === "content" && this.req.exclude?.(file)) return;
    if (this.nameGlob) {
      if (explicit || this.nameGlob(rel)) this.addFile(file);
      return;
    }
    let buf: Buffer;
    try {
      const read = await this.io(async () => {
        return this.files.readContent(file, { explicit, within: this.root.real });
      });
      if (read === undefined) return;
      buf = read;
    } catch {
      return;
    }
    if (buf.includes(0)) return; // binary, as ripgrep decides
    let text = buf.toString("utf8");
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let matchLines: number[];
    try {
      matchLines = await matcher!.match(text, rel);
    } catch (err) {
      if (err instanceof RegexTimeoutError && this.out.error === undefined) {
        this.out.error = regexTimeoutMessage(this.req.timeoutMs / 1000, err.file);
      }
      this.stop("timeout");
      return;
    }
    if (matchLines.length === 0 || this.stopped()) return;
    const lines = text.split("\n");
    if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    this.record(file, lines, matchLines);
  }

  private record(file: string, lines: string[], matchLines: number[]): void {
    if (this.req.mode === "files_only") return this.addFile(file);
    if (this.req.mode === "count") {
      this.out.counts.push({ path: file, count: matchLines.length });
      if (this.out.counts.length >= this.req.maxRecords) this.stop("limit");
      return;
    }
    const isMatch = new Set(matchLines);
    const shown = new Set<number>();
    const ctx = this.req.context;
    for (const m of matchLines) for (let i = Math.max(0, m - ctx); i <= Math.min(lines.length - 1, m + ctx); i++) shown.add(i);
    for (const i of [...shown].sort((a, b) => a - b)) {
      if (this.stopped()) return;
      // As wide as ripgrep's --max-columns preview (the cut is marked downstream).
      const text = lines[i]!.replace(/\r$/, "").slice(0, LIMITS.searchLineMaxBytes);
      this.out.lines.push({ path: file, line: i + 1, text, match: isMatch.has(i) });
      this.outputChars += text.length;
      if (isMatch.has(i) && ++this.matches >= this.req.maxRecords) this.stop("limit");
      else if (this.outputChars > this.req.maxOutputBytes) this.stop("output");
    }
  }

  private addFile(file: string): void {
    this.out.files.push(file);
    if (this.out.files.length >= this.req.maxRecords) this.stop("limit");
  }

  private stopped(): boolean {
    if (!this.out.complete) return true;
    if (Date.now() > this.deadline) {
      this.stop("timeout");
      return true;
    }
    return false;
  }

  private stop(reason: SearchOutcome["stopReason"]): void {
    if (!this.out.complete) return;
    this.out.complete = false;
    this.out.stopReason = reason;
  }

  /** `/`-separated path relative to the workspace (`../…` or absolute outside it). */
  private rel(p: string): string {
    return relativePath(this.req.cwd, p);
  }
}
