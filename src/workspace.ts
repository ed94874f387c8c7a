import { createHash } from "node:crypto";
import { mkdir, realpath } from "node:fs/promises";
import path from "node:path";
import type { FileOperations } from "./environment/fileOperations.js";
import { PathRewriter } from "./rewrite/paths.js";
import { WorkbenchError } from "./workbenchError.js";

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
export class WorkspacePathError extends WorkbenchError {
  readonly code = "PATH_REFUSED";
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
  /** `null`: no spelling of the directory can be anchored (a root of `/`); text stays as is. */
  private rewriter: PathRewriter | null | undefined;

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
   * Rewrites system paths in `text`: the thread directory (and its real path) becomes the
   * relative form (`.` for the directory itself), the root and other threads' directories
   * become `<workspace-root>` / `<other-workspace>`. Boundary-safe (`t1` never matches inside
   * `t10`), both separators, Windows drive letters in any case, JSON-escaped and URL-encoded
   * separators, `file://` URLs. Linear in the text.
   */
  rewrite(text: string): string {
    if (typeof text !== "string" || text.length === 0) return text;
    if (this.rewriter === undefined) {
      this.rewriter = PathRewriter.build({
        own: [this.dir, this.realDir],
        roots: [this.rootDir, this.realDir ? this.p.dirname(this.realDir) : undefined],
        ownName: threadDirName(this.threadId),
      });
    }
    return this.rewriter ? this.rewriter.rewrite(text) : text;
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

const SYSTEM_TOP_DIRS = new Set([
  "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "media", "mnt", "opt", "proc", "root",
  "run", "sbin", "srv", "sys", "tmp", "usr", "var", "private", "Users", "System", "Library", "Volumes",
]);

function escapes(normalPosix: string): boolean {
  return normalPosix === ".." || normalPosix.startsWith("../");
}
