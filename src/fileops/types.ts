/**
 * The file-operations contract used by the file tools, the tree renderer and change tracking.
 * Every path is an absolute *system* path, already resolved and confined by a Workspace.
 * Implementations: LocalFileOperations (native fs), SftpFileOperations (SSH hosts, no process
 * per call) and ShellFileOperations (over an Environment: local bash, SSH, docker exec).
 */
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
  /** Up to `length` bytes from `start` (for binary sniffing). */
  readBytes(path: string, start: number, length: number): Promise<Buffer>;
  /**
   * Lines `offset .. offset+limit-1` (1-based) without loading the whole file: stops reading
   * once the window is filled. Lines longer than `maxLineChars` are cut (flagged in `cutLines`).
   * `totalLines` is set only when the read reached the end of the file.
   */
  readLines(
    path: string,
    window: { offset: number; limit: number; maxLineChars: number },
  ): Promise<{ lines: string[]; cutLines: number[]; hasMore: boolean; totalLines?: number }>;
  /** Counts lines by streaming the file (for the "of T lines" hint; callers cache by size+mtime). */
  countLines(path: string): Promise<number>;
  /** The whole file as UTF-8. Callers check the size first. */
  readText(path: string): Promise<string>;
  /** Atomic write: temp file in the same directory, fsync, rename; keeps mode; creates parents. */
  writeAtomic(path: string, data: string | Buffer): Promise<{ bytesWritten: number; dirsCreated: string[] }>;
  /** Deletes a file (not a directory). */
  remove(path: string): Promise<void>;
  /** Renames/moves, creating the destination's parent directories. */
  rename(from: string, to: string): Promise<void>;
  /** mkdir -p; returns the directories it created. */
  mkdirp(path: string): Promise<string[]>;
}
