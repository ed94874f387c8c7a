/**
 * The file-operations contract used by the file tools, the tree renderer and change tracking.
 * Every path is an absolute *system* path, already resolved and confined by a Workspace.
 * Implementations: LocalFileOperations (native fs), SftpFileOperations (SSH hosts, no process
 * per call) and ShellFileOperations (over an Environment: local bash, SSH, docker exec).
 */
import type { LineIndex, LineStart } from "./lineIndex.js";
import { WorkbenchError } from "../workbenchError.js";

export type EntryType = "file" | "directory" | "symlink" | "other";

export interface FileStat {
  type: EntryType;
  size: number;
  mtimeMs: number;
  /** Permission bits (e.g. 0o644). */
  mode: number;
}

export interface DirEntry {
  name: string;
  type: EntryType;
}

/** What an implementation learned from the descriptor it opened (see {@link OpenGuard}). */
export interface OpenedInfo {
  type: EntryType;
  /** Hard-link count (regular files with more than one name may be refused). */
  nlink: number;
  size: number;
}

/**
 * Optional last argument of the reading and writing methods: what was *actually opened* must be
 * inside `within` (a real path) and pass `check` (which gets the opened object's real path).
 * LocalFileOperations opens first and verifies the descriptor (`/proc/self/fd/N` on Linux), so
 * a symlink swapped between a check and the use cannot redirect it; writes land through a
 * verified directory descriptor. Remote implementations may ignore it (callers then keep their
 * resolve-then-use check and re-check after the call). A refusal rejects with {@link OpenRefusedError}.
 */
export interface OpenGuard {
  within?: string;
  check?: (realPath: string, opened: OpenedInfo) => string | undefined;
}

/**
 * A guarded open refused what it found. `reason` is guidance for the model (no host path),
 * phrased as a predicate: `"${shownPath}" ${reason}`.
 */
export class OpenRefusedError extends WorkbenchError {
  override readonly name = "OpenRefusedError";
  readonly code = "EREFUSED";
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface FileOperations {
  /** Short name for reports: "local", "shell:ssh", … */
  readonly kind: string;
  /** stat following symlinks; `null` when the path does not exist. */
  stat(path: string): Promise<FileStat | null>;
  /** lstat (does not follow the final symlink); `null` when missing. */
  lstat(path: string): Promise<FileStat | null>;
  /** Canonical path (symlinks resolved). Rejects when missing. */
  realpath(path: string): Promise<string>;
  /** Directory listing, unsorted, without `.` and `..`. */
  readdir(path: string): Promise<DirEntry[]>;
  /** Up to `length` bytes from `start`, byte-exact (binary sniffing; whole images and PDFs under their caps). */
  readBytes(path: string, start: number, length: number, guard?: OpenGuard): Promise<Buffer>;
  /**
   * Lines `offset .. offset+limit-1` (1-based) without loading the whole file: stops reading
   * once the window is filled. Lines longer than `maxLineChars` are cut (flagged in `cutLines`).
   * `totalLines` is set only when the read reached the end of the file.
   */
  readLines(
    path: string,
    window: { offset: number; limit: number; maxLineChars: number; start?: LineStart },
    guard?: OpenGuard,
  ): Promise<{ lines: string[]; cutLines: number[]; hasMore: boolean; totalLines?: number }>;
  /** Counts lines by streaming the file (for the "of T lines" hint; callers cache by size+mtime). */
  countLines(path: string, guard?: OpenGuard): Promise<number>;
  /**
   * Optional: counts lines and records the offset of every `every`-th line in the same pass.
   * Backends that have it honour `window.start` in {@link readLines} (a hint: a start that no
   * longer fits the file is ignored and the file read from byte 0); others ignore the hint.
   */
  indexLines?(path: string, every: number, guard?: OpenGuard): Promise<LineIndex>;
  /** The whole file as UTF-8. Callers check the size first. */
  readText(path: string, guard?: OpenGuard): Promise<string>;
  /** Atomic write: temp file in the same directory, fsync, rename; keeps mode; creates parents. */
  writeAtomic(path: string, data: string | Buffer, guard?: OpenGuard): Promise<{ bytesWritten: number; dirsCreated: string[] }>;
  /** Deletes a file (not a directory). */
  remove(path: string, guard?: OpenGuard): Promise<void>;
  /** Removes an empty directory (never a symlink, never a non-empty directory). */
  removeEmptyDir(path: string): Promise<void>;
  /** Renames/moves, creating the destination's parent directories. */
  rename(from: string, to: string, guard?: OpenGuard): Promise<void>;
  /** mkdir -p; returns the directories it created. */
  mkdirp(path: string): Promise<string[]>;
}
