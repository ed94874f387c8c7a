import { createHash } from "node:crypto";
import { mkdir, realpath } from "node:fs/promises";
import path from "node:path";
import type { FileOperations } from "./fileops/types.js";

/**
 * What {@link Workspace.ensure} and {@link Workspace.resolve} need from the host holding the
 * files: any {@link FileOperations} (e.g. `ShellFileOperations` over SSH) fits.
 */
type WorkspaceHost = Pick<FileOperations, "mkdirp" | "realpath">;

/** This machine's disk (the default host). */
const LOCAL_HOST: WorkspaceHost = {
  mkdirp: async (dir) => {
    await mkdir(dir, { recursive: true });
    return [];
  },
  realpath: (p) => realpath(p),
};

/** Thread id used when a run carries no `configurable.thread_id`. */
export const DEFAULT_THREAD_ID = "default";

/** Default workspace root, relative to the process working directory. */
export const DEFAULT_ROOT_DIR = "./agent_files";

/**
 * The workspace root: the explicit option, else `WORKBENCH_ROOT`, else `./agent_files`,
 * resolved against the current working directory. Callers resolve it once, when they are built,
 * so a later `process.chdir` does not move existing workspaces.
 */
export function resolveRootDir(rootDir?: string): string {
  const raw = rootDir ?? process.env.WORKBENCH_ROOT ?? DEFAULT_ROOT_DIR;
  if (typeof raw !== "string" || raw.trim() === "") {
    throw new TypeError("rootDir must be a non-empty string (or unset to use WORKBENCH_ROOT or ./agent_files)");
  }
  return isWindowsPath(raw) ? path.win32.resolve(raw) : path.resolve(raw);
}

/** Raised when an agent path would leave the workspace. The message names only the agent path. */
export class WorkspacePathError extends Error {
  override readonly name = "WorkspacePathError";
  constructor(
    readonly agentPath: string,
    reason: string,
  ) {
    super(`Path "${agentPath}" is not allowed: ${reason}. Use a path relative to the workspace root, e.g. "notes/todo.md".`);
  }
}

const SAFE_THREAD_ID = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const MAX_THREAD_ID = 128;

/**
 * Maps a thread id to a directory name that can never leave the root.
 *
 * Ids made only of `[A-Za-z0-9._-]` (not starting with a dot, at most 128 chars) are used as
 * they are. Any other id (slashes, backslashes, NUL, control characters, `..`, over-long) is
 * *encoded*, not rejected: a readable, sanitised prefix plus `~` and a SHA-256 digest of the id.
 * `~` never occurs in a plain id, so encoded names cannot collide with plain ones, and the
 * digest keeps distinct ids apart. Rejecting would end a user's run over an id they do not
 * control (LangGraph clients pick them).
 */
export function threadDirName(threadId?: unknown): string {
  if (threadId === undefined || threadId === null || threadId === "") return DEFAULT_THREAD_ID;
  const id = typeof threadId === "string" ? threadId : String(threadId);
  if (id.length <= MAX_THREAD_ID && SAFE_THREAD_ID.test(id)) return id;
  const digest = createHash("sha256").update(id).digest("hex").slice(0, 24);
  const readable = id
    .normalize("NFKC")
    .replace(/[^A-Za-z0-9_-]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 40);
  return `${readable || "thread"}~${digest}`;
}

function isWindowsPath(p: string): boolean {
  return /^[A-Za-z]:[\\/]/.test(p) || p.startsWith("\\\\");
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/**
 * One conversation thread's directory, and the translation between the paths an agent uses
 * (relative to the thread directory; a leading `/` means the workspace root) and system paths.
 */
export class Workspace {
  /** Absolute system path of the thread directory. */
  readonly dir: string;
  /** Absolute system path of the root holding every thread directory. */
  readonly rootDir: string;
  /** The thread id this workspace belongs to (`"default"` when none was given). */
  readonly threadId: string;

  private readonly p: typeof path.posix;
  private realDir: string | undefined;
  private ready: Promise<string> | undefined;
  /** The host `ready` was learned on: another host learns its own real path. */
  private readyOn: WorkspaceHost | undefined;
  private rewriter: RegExp | undefined;
  /** `null`: the directory's spellings do not suit the scanner; use the regex. */
  private scanner: LiteralPathScanner | null | undefined;

  private constructor(rootDir: string, threadId: string) {
    this.p = isWindowsPath(rootDir) ? path.win32 : path.posix;
    this.rootDir = rootDir;
    this.threadId = threadId;
    this.dir = this.p.join(rootDir, threadDirName(threadId));
  }

  /**
   * The workspace of `threadId` under `rootDir` (see {@link resolveRootDir} for the default
   * root). Does no I/O: the directory is created by {@link Workspace.ensure} on first use.
   */
  static forThread(rootDir: string, threadId?: string): Workspace {
    const root = resolveRootDir(rootDir);
    const id = threadId === undefined || threadId === null || threadId === "" ? DEFAULT_THREAD_ID : String(threadId);
    return new Workspace(root, id);
  }

  /**
   * Creates the thread directory if needed and learns its real path, on `host` (default: this
   * machine; pass the tools' FileOperations when the files live elsewhere). Memoised per host.
   */
  ensure(host: WorkspaceHost = LOCAL_HOST): Promise<string> {
    if (this.ready && this.readyOn === host) return this.ready;
    this.readyOn = host;
    const ready = (this.ready = (async () => {
      await host.mkdirp(this.dir);
      const real = await host.realpath(this.dir);
      const realDir = real !== this.dir ? real : undefined;
      if (realDir !== this.realDir) {
        this.realDir = realDir;
        this.rewriter = undefined;
        this.scanner = undefined;
      }
      return this.dir;
    })());
    // A failed attempt (host unreachable) is not remembered: the next call tries again.
    ready.catch(() => {
      if (this.ready === ready) this.ready = undefined;
    });
    return ready;
  }

  /**
   * The thread directory's real path (symlinks resolved) as learned by {@link ensure}; the plain
   * path before that. What opened files are verified against.
   */
  realDirectory(): string {
    return this.realDir ?? this.dir;
  }

  /**
   * Maps an agent path to a system path inside the thread directory.
   *
   * Accepted: relative paths, `/`-rooted paths (the workspace root), `\` separators, and system
   * paths that already point inside the directory. Refused with a {@link WorkspacePathError}:
   * NUL bytes, `~` home paths, paths that climb out with `..`, absolute system paths elsewhere,
   * and paths whose existing part is a symlink leading out of the directory. Symlinks are
   * checked on `host` (default: this machine), the one that holds the files.
   */
  async resolve(agentPath: string, host: WorkspaceHost = LOCAL_HOST): Promise<string> {
    const systemPath = this.resolveLexically(agentPath);
    await this.ensure(host);
    await this.assertRealPathInside(agentPath, systemPath, host);
    return systemPath;
  }

  /** The lexical half of {@link resolve}: no I/O, no symlink check. */
  resolveLexically(agentPath: string): string {
    if (typeof agentPath !== "string") throw new WorkspacePathError(String(agentPath), "a path must be a string");
    if (agentPath.includes("\0")) throw new WorkspacePathError(agentPath.replace(/\0/g, "\\0"), "it contains a NUL byte");
    const trimmed = agentPath.trim();
    if (trimmed === "~" || trimmed.startsWith("~/") || trimmed.startsWith("~\\")) {
      throw new WorkspacePathError(agentPath, "home-directory paths are outside the workspace");
    }
    const inside = this.relativeIfInside(trimmed);
    let rel: string;
    if (inside !== undefined) {
      rel = inside;
    } else if (isWindowsPath(trimmed) || (this.p === path.win32 && /^[\\/]{2}/.test(trimmed))) {
      throw new WorkspacePathError(agentPath, "it is a system path outside the workspace");
    } else {
      const slashed = trimmed.replace(/\\/g, "/");
      if (slashed.startsWith("/") && this.looksLikeSystemPath(slashed)) {
        throw new WorkspacePathError(agentPath, "it is a system path outside the workspace");
      }
      rel = slashed.replace(/^\/+/, "");
    }
    const normal = path.posix.normalize(rel === "" ? "." : rel);
    const folded = path.posix.normalize(normal.normalize("NFKC"));
    if (escapes(normal) || escapes(folded)) {
      throw new WorkspacePathError(agentPath, "it climbs out of the workspace with '..'");
    }
    return normal === "." ? this.dir : this.p.join(this.dir, ...normal.split("/"));
  }

  /** Relative agent form of a system path (`.` for the directory itself); other paths unchanged. */
  toAgentPath(systemPath: string): string {
    const rel = this.relativeIfInside(systemPath);
    if (rel === undefined) return systemPath;
    return rel === "" ? "." : rel;
  }

  /**
   * Replaces every occurrence of the thread directory (and its real path) in `text` with the
   * relative form. Boundary-safe (`t1` never matches inside `t10`), both separators, Windows
   * drive letters in any case, JSON-escaped backslashes. One regex pass: linear in the text.
   */
  rewrite(text: string): string {
    if (typeof text !== "string" || text.length === 0) return text;
    if (this.scanner === undefined) this.scanner = LiteralPathScanner.build(this.rewriteBases());
    return this.scanner ? this.scanner.rewrite(text) : this.rewriteByRegex(text);
  }

  /** The reference implementation of {@link rewrite}; used when the fast scanner cannot be. */
  private rewriteByRegex(text: string): string {
    const re = (this.rewriter ??= this.buildRewriter());
    re.lastIndex = 0;
    return text.replace(re, (m: string, sep: string | undefined, offset: number) => {
      if (sep !== undefined) return "";
      // "…/t1." at the end of a sentence must not read as "..", the parent directory.
      return text.charCodeAt(offset + m.length) === 46 ? "./" : ".";
    });
  }

  /** Every spelling of the directory in text: both separators, JSON-escaped; longest first. */
  private rewriteBases(): string[] {
    const bases = new Set<string>();
    for (const d of [this.dir, this.realDir]) {
      if (!d) continue;
      const fwd = d.replace(/\\/g, "/");
      bases.add(fwd);
      bases.add(fwd.replace(/\//g, "\\"));
      bases.add(fwd.replace(/\//g, "\\\\"));
      bases.add(fwd.replace(/\//g, "\\/"));
    }
    return [...bases].sort((a, b) => b.length - a.length);
  }

  private buildRewriter(): RegExp {
    const alts = this.rewriteBases()
      .map((b) => {
        const drive = /^([A-Za-z]):/.exec(b);
        const body = escapeRegExp(drive ? b.slice(1) : b);
        return drive ? `[${drive[1]!.toUpperCase()}${drive[1]!.toLowerCase()}]${body}` : body;
      });
    // Before: not in the middle of a path segment. After: a separator (consumed, so the rest
    // stays relative) or a character that cannot continue the directory's last segment.
    return new RegExp(
      `(?<![\\w.\\-])(?:${alts.join("|")})(?:(${SEP})(?=[^\\s"'\`<>()\\[\\]{},;|])|(?:${SEP})?(?=${END}))`,
      "g",
    );
  }

  /**
   * A `/`-rooted path is virtual (the workspace root) unless it names another thread under the
   * root or starts with a well-known system directory: those are refused rather than silently
   * re-rooted, so the model learns it cannot reach `/etc/passwd` instead of reading a stray copy.
   */
  private looksLikeSystemPath(slashed: string): boolean {
    const root = this.rootDir.replace(/\\/g, "/");
    if (slashed === root || slashed.startsWith(`${root}/`)) return true;
    const first = slashed.split("/").find((s) => s !== "");
    return first !== undefined && SYSTEM_TOP_DIRS.has(first);
  }

  private relativeIfInside(candidate: string): string | undefined {
    for (const base of [this.dir, this.realDir]) {
      if (!base) continue;
      const rel = this.p.relative(base, candidate);
      if (candidate === base || rel === "") return "";
      if (this.p.isAbsolute(candidate) && rel && !rel.startsWith("..") && !this.p.isAbsolute(rel)) {
        return rel;
      }
    }
    return undefined;
  }

  private async assertRealPathInside(agentPath: string, systemPath: string, host: WorkspaceHost): Promise<void> {
    const realRoot = this.realDir ?? this.dir;
    // Walk up to the deepest existing ancestor: its real path decides where the target lands.
    let probe = systemPath;
    for (;;) {
      try {
        const real = await host.realpath(probe);
        const rel = this.p.relative(realRoot, real);
        if (rel.startsWith("..") || this.p.isAbsolute(rel)) {
          throw new WorkspacePathError(agentPath, "it is a symlink that leads outside the workspace");
        }
        return;
      } catch (err) {
        if (err instanceof WorkspacePathError) throw err;
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") return; // EACCES etc.: let the caller's fs call report it
        const parent = this.p.dirname(probe);
        if (parent === probe || probe === this.dir) return;
        probe = parent;
      }
    }
  }
}

/** A separator as it may appear in text: `\\` (JSON-escaped), `\/` (JSON-escaped slash), `\`, `/`. */
const SEP = String.raw`\\\\|\\/|[\\/]`;
/** What may follow the directory name when it is not followed by a path inside it. */
const END = String.raw`$|[\s"'\`<>()\[\]{},;:|!?*]|\.(?![\w-])`;

const SYSTEM_TOP_DIRS = new Set([
  "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "media", "mnt", "opt", "proc", "root",
  "run", "sbin", "srv", "sys", "tmp", "usr", "var", "private", "Users", "System", "Library", "Volumes",
]);

function escapes(normalPosix: string): boolean {
  return normalPosix === ".." || normalPosix.startsWith("../");
}

const SEPARATORS = ["\\\\", "\\/", "\\", "/"];

interface Spelling {
  text: string;
  /** What `indexOf` looks for: `text`, or `text` without its drive letter. */
  search: string;
  /** Set for `C:`-style paths, whose drive letter matches in either case (upper, lower). */
  drive: [string, string] | undefined;
}

/**
 * The regex of {@link Workspace.rewrite}, as a hand-written scan: `indexOf` finds each spelling
 * of the directory (natively, much faster than the regex's per-position lookbehind), the
 * earliest occurrence of any spelling is tried first (longest spelling first at equal starts,
 * the regex's alternation order), with the regex's boundary rules, separator order and
 * replacements, and the scan resumes after each match as the regex does. No per-match callback.
 */
class LiteralPathScanner {
  private constructor(private readonly spellings: readonly Spelling[]) {}

  /** `bases` in the regex's alternation order (longest first). */
  static build(bases: readonly string[]): LiteralPathScanner | null {
    if (bases.length === 0 || bases.some((b) => b.length < 2)) return null;
    return new LiteralPathScanner(
      bases.map((text): Spelling => {
        const drive = /^[A-Za-z]:/.test(text) ? text[0]! : undefined;
        return {
          text,
          search: drive ? text.slice(1) : text,
          drive: drive ? [drive.toUpperCase(), drive.toLowerCase()] : undefined,
        };
      }),
    );
  }

  rewrite(text: string): string {
    const spellings = this.spellings;
    const n = spellings.length;
    // Next occurrence (start) of each spelling at or after the scan position; -1: none left.
    const next = new Int32Array(n);
    for (let s = 0; s < n; s++) next[s] = findSpelling(text, spellings[s]!, 0);
    // The matches, flat: start, spelling index, tail code.
    let found = new Int32Array(3 * 64);
    let count = 0;
    // Spelling/separator pairs seen at a place that was turned down (boundary or tail failed).
    const refused = new Set<number>();
    for (;;) {
      let best = -1;
      for (let s = 0; s < n; s++) if (next[s] !== -1 && (best === -1 || next[s]! < next[best]!)) best = s;
      if (best === -1) break;
      const sp = spellings[best]!;
      const start = next[best]!;
      const end = start + sp.text.length;
      const tail = start > 0 && isPathWordChar(text.charCodeAt(start - 1)) ? -1 : matchTail(text, end);
      if (tail < 0) {
        for (let k = 0; k < SEPARATORS.length; k++) if (text.startsWith(SEPARATORS[k]!, end)) refused.add(best * 8 + k);
        next[best] = findSpelling(text, sp, start + 1);
        continue;
      }
      if (count + 3 > found.length) {
        const grown = new Int32Array(found.length * 2);
        grown.set(found);
        found = grown;
      }
      found[count++] = start;
      found[count++] = best;
      found[count++] = tail;
      const resume = end + tailConsumed(tail);
      for (let s = 0; s < n; s++) if (next[s] !== -1 && next[s]! < resume) next[s] = findSpelling(text, spellings[s]!, resume);
    }
    if (count === 0) return text;
    found = found.subarray(0, count);
    const literal = this.uniformLiteral(found, refused);
    if (literal !== undefined) return text.replaceAll(literal, "");
    let out = "";
    let from = 0;
    for (let k = 0; k < found.length; k += 3) {
      const start = found[k]!;
      const tail = found[k + 2]!;
      out += text.slice(from, start);
      const kind = tail & 3;
      if (kind !== 0) out += kind === 1 ? "." : "./";
      from = start + spellings[found[k + 1]!]!.text.length + tailConsumed(tail);
    }
    return out + text.slice(from);
  }

  /**
   * When every match is the same spelling plus the same separator, dropped, and that literal
   * was never turned down anywhere, the matches are exactly the literal's leftmost
   * non-overlapping occurrences, so one `replaceAll` (built natively, much faster than slices
   * appended in JS) gives the same text. That is the usual shape of grep-like tool output.
   */
  private uniformLiteral(found: Int32Array, refused: ReadonlySet<number>): string | undefined {
    const s = found[1]!;
    const tail = found[2]!;
    const sp = this.spellings[s]!;
    if ((tail & 3) !== 0 || sp.drive) return undefined;
    for (let k = 3; k < found.length; k += 3) if (found[k + 1] !== s || found[k + 2] !== tail) return undefined;
    const sepIndex = tail >> 4;
    if (refused.has(s * 8 + sepIndex)) return undefined;
    return sp.text + SEPARATORS[sepIndex]!;
  }
}

/** Start of the first occurrence of `sp` at or after `from`, or -1. */
function findSpelling(text: string, sp: Spelling, from: number): number {
  if (!sp.drive) return text.indexOf(sp.text, from);
  let q = text.indexOf(sp.search, from + 1);
  while (q !== -1) {
    const c = text[q - 1];
    if (c === sp.drive[0] || c === sp.drive[1]) return q - 1;
    q = text.indexOf(sp.search, q + 1);
  }
  return -1;
}

/**
 * What follows the directory at `end`: a separator and a path (dropped), or an end (becomes
 * `.`, or `./` before a full stop). Encoded so the hot loop allocates nothing:
 * `separator index << 4 | consumed << 2 | kind` (kind 0: "", 1: ".", 2: "./"; separator index
 * 4: none), or -1 when neither applies.
 */
function matchTail(text: string, end: number): number {
  // SEPARATORS in order, by character code: "\\\\" (92 92), "\\/" (92 47), "\\" (92), "/" (47).
  const c0 = text.charCodeAt(end);
  const c1 = text.charCodeAt(end + 1);
  const len = text.length;
  if (c0 === 92 && c1 === 92 && end + 2 < len && !isTailStop(text.charCodeAt(end + 2))) return (0 << 4) | (2 << 2);
  if (c0 === 92 && c1 === 47 && end + 2 < len && !isTailStop(text.charCodeAt(end + 2))) return (1 << 4) | (2 << 2);
  if ((c0 === 92 || c0 === 47) && end + 1 < len && !isTailStop(c1)) return ((c0 === 92 ? 2 : 3) << 4) | (1 << 2);
  if (c0 === 92 && c1 === 92 && isEndAt(text, end + 2)) return (0 << 4) | (2 << 2) | endKind(text, end + 2);
  if (c0 === 92 && c1 === 47 && isEndAt(text, end + 2)) return (1 << 4) | (2 << 2) | endKind(text, end + 2);
  if ((c0 === 92 || c0 === 47) && isEndAt(text, end + 1)) return ((c0 === 92 ? 2 : 3) << 4) | (1 << 2) | endKind(text, end + 1);
  if (isEndAt(text, end)) return (4 << 4) | endKind(text, end);
  return -1;
}

function endKind(text: string, p: number): number {
  return text.charCodeAt(p) === 46 ? 2 : 1;
}

function tailConsumed(tail: number): number {
  return (tail >> 2) & 3;
}

/** `[\w.\-]`: a character that continues a path segment. */
function isPathWordChar(c: number): boolean {
  return isWordChar(c) || c === 46 || c === 45;
}

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

/** JavaScript's `\s`. */
function isSpace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) || c === 32 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/** ASCII lookup table: 1 for each character of `chars`. */
function asciiSet(chars: string): Uint8Array {
  const table = new Uint8Array(128);
  for (const c of chars) table[c.charCodeAt(0)] = 1;
  return table;
}

const TAIL_STOP = asciiSet('"\'`<>()[]{},;|');
const END_CHARS = asciiSet('"\'`<>()[]{},;:|!?*');

/** `[\s"'\`<>()\[\]{},;|]`: characters that cannot start the path after a separator. */
function isTailStop(c: number): boolean {
  return (c < 128 && TAIL_STOP[c] === 1) || isSpace(c);
}

/** {@link END} at position `p`. */
function isEndAt(text: string, p: number): boolean {
  if (p >= text.length) return true;
  const c = text.charCodeAt(p);
  if ((c < 128 && END_CHARS[c] === 1) || isSpace(c)) return true;
  if (c !== 46) return false;
  const after = text.charCodeAt(p + 1);
  return !(isWordChar(after) || after === 45);
}
