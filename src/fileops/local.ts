/**
 * FileOperations over the native Node fs (fs/promises and file handles): no process is spawned
 * per call, unlike a shell backend. Reads stream in fixed-size chunks and stop once the
 * requested window is filled, so the first lines of a 1 GB file cost a few chunks.
 */
import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import { constants } from "node:fs";
import { chmod, lstat, mkdir, open, readdir, readFile, realpath, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { LineCounter, LineWindowCollector } from "./lines.js";
import type { DirEntry, EntryType, FileOperations, FileStat } from "./types.js";

/** Chunk size for streaming reads: large enough for few syscalls, small enough to stay light. */
const CHUNK_BYTES = 256 * 1024;

function entryType(s: Stats): EntryType {
  if (s.isFile()) return "file";
  if (s.isDirectory()) return "directory";
  if (s.isSymbolicLink()) return "symlink";
  return "other";
}

function toFileStat(s: Stats): FileStat {
  return { type: entryType(s), size: s.size, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 };
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** Open flags for reads: never block on a FIFO that has no writer, never follow into a tty. */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

export class LocalFileOperations implements FileOperations {
  readonly kind = "local";

  async stat(p: string): Promise<FileStat | null> {
    try {
      return toFileStat(await stat(p));
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async lstat(p: string): Promise<FileStat | null> {
    try {
      return toFileStat(await lstat(p));
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  realpath(p: string): Promise<string> {
    return realpath(p);
  }

  async readdir(p: string): Promise<DirEntry[]> {
    const entries = await readdir(p, { withFileTypes: true });
    return entries.map((e) => ({
      name: e.name,
      type: e.isFile() ? "file" : e.isDirectory() ? "directory" : e.isSymbolicLink() ? "symlink" : "other",
    }));
  }

  async readBytes(p: string, start: number, length: number): Promise<Buffer> {
    const fh = await open(p, READ_FLAGS);
    try {
      const buf = Buffer.alloc(Math.max(0, length));
      let filled = 0;
      while (filled < buf.length) {
        const { bytesRead } = await fh.read(buf, filled, buf.length - filled, start + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return buf.subarray(0, filled);
    } finally {
      await fh.close();
    }
  }

  async readLines(
    p: string,
    window: { offset: number; limit: number; maxLineChars: number },
  ): Promise<{ lines: string[]; cutLines: number[]; hasMore: boolean; totalLines?: number }> {
    const collector = new LineWindowCollector(window);
    const fh = await open(p, READ_FLAGS);
    try {
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      for (;;) {
        const { bytesRead } = await fh.read(chunk, 0, CHUNK_BYTES, null);
        if (bytesRead === 0) break;
        // A view of the bytes just read: stale bytes of an earlier, longer read are never seen.
        const done = collector.push(bytesRead === CHUNK_BYTES ? chunk : chunk.subarray(0, bytesRead));
        if (done) return done;
      }
    } finally {
      await fh.close();
    }
    return collector.end();
  }

  async countLines(p: string): Promise<number> {
    const fh = await open(p, READ_FLAGS);
    try {
      const chunk = Buffer.allocUnsafe(1024 * 1024);
      const counter = new LineCounter();
      for (;;) {
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
        if (bytesRead === 0) break;
        counter.push(chunk.subarray(0, bytesRead));
      }
      return counter.total;
    } finally {
      await fh.close();
    }
  }

  readText(p: string): Promise<string> {
    return readFile(p, "utf8");
  }

  async writeAtomic(p: string, data: string | Buffer): Promise<{ bytesWritten: number; dirsCreated: string[] }> {
    const dir = path.dirname(p);
    const dirsCreated = await this.mkdirp(dir);
    const existing = await this.stat(p);
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    const temp = path.join(dir, `.${path.basename(p)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
    const mode = existing?.type === "file" ? existing.mode : 0o644;
    const fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
    try {
      try {
        await fh.writeFile(bytes);
        await fh.sync();
      } finally {
        await fh.close();
      }
      // open() applies the umask; chmod makes the mode exactly the old file's.
      if (existing?.type === "file") await chmod(temp, existing.mode);
      await rename(temp, p);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
    await this.syncDir(dir);
    return { bytesWritten: bytes.length, dirsCreated };
  }

  async remove(p: string): Promise<void> {
    const s = await lstat(p);
    if (s.isDirectory()) throw Object.assign(new Error(`${p} is a directory`), { code: "EISDIR" });
    await unlink(p);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.mkdirp(path.dirname(to));
    await rename(from, to);
  }

  async mkdirp(p: string): Promise<string[]> {
    const first = await mkdir(p, { recursive: true });
    if (first === undefined) return [];
    // mkdir returns the first directory it created; the rest are its descendants down to `p`.
    const created: string[] = [];
    for (let d = p; ; d = path.dirname(d)) {
      created.unshift(d);
      if (d === first || path.dirname(d) === d) break;
    }
    return created;
  }

  /** Makes the rename durable; some filesystems refuse to fsync a directory, which is fine. */
  private async syncDir(dir: string): Promise<void> {
    try {
      const fh = await open(dir, constants.O_RDONLY);
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch {
      /* best effort */
    }
  }
}
