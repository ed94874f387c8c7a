/**
 * FileOperations over SFTP (ssh2's SFTP client) on an SSH connection: no process is started per
 * call, unlike ShellFileOperations over `exec`. One SFTP session per connection serves every
 * call; requests are pipelined on it, so parallel calls do not queue behind each other's round
 * trips.
 *
 * Same answers as LocalFileOperations, with what SFTP (protocol version 3, as OpenSSH speaks it)
 * allows:
 * - Errors: the server reports only "no such file", "permission denied" or "failure", so on a
 *   failure a few extra lstat/stat/readlink requests tell ENOENT from ENOTDIR, ELOOP, EISDIR,
 *   EEXIST, ENOTEMPTY (only on the error path).
 * - FIFOs and sockets are never opened (the server would block on a FIFO, stalling the whole
 *   session): every read stats first and answers as LocalFileOperations' non-blocking open does.
 * - `mtimeMs` has whole-second precision (SFTP v3 carries seconds); change tracking polls with a
 *   racy window longer than that.
 * - writeAtomic: temp file in the same directory, written, `fsync@openssh.com` when the server
 *   offers it, mode of the old file set exactly, then `posix-rename@openssh.com` (atomic
 *   overwrite). A server without posix-rename gets unlink + rename (not atomic; OpenSSH has it).
 *   The directory itself is not fsynced (SFTP has no request for it).
 */
import path from "node:path";
import type { Attributes, FileEntryWithStats, OpenMode, SFTPWrapper } from "ssh2";
import { LineCounter, LineWindowCollector } from "./lineWindow.js";
import { fsError } from "./shellFileOperations.js";
import { atomicTempName } from "./tempFiles.js";
import type { DirEntry, EntryType, FileOperations, FileStat } from "./fileOperations.js";
import { WorkbenchError } from "../workbenchError.js";

/** Where the SFTP session comes from (an SshEnvironment). */
export interface SftpSource {
  readonly kind: string;
  /** The current session; given a `stale` one (its transport failed) it returns a fresh one. */
  sftp(stale?: SFTPWrapper): Promise<SFTPWrapper>;
  close?(): Promise<void>;
  /** Runs one file call as a use of the connection, so an idle one can be ended meanwhile never. */
  use?<T>(op: () => Promise<T>): Promise<T>;
}

/** Options of {@link SftpFileOperations}. */
export interface SftpFileOperationsOptions {
  /** A request with no answer after this many ms rejects with ETIMEDOUT. Default 30,000. */
  timeoutMs?: number;
}

/** Bytes per read or write request: small files take one request; big reads pipeline several. */
const CHUNK_BYTES = 64 * 1024;
/** Requests kept in flight when a whole file is streamed (countLines, readText, writes). */
const PIPELINE = 8;
/** A symlink chain longer than this is a loop (Linux gives up after 40). */
const MAX_LINK_HOPS = 40;

// SFTP v3 status codes (draft-ietf-secsh-filexfer-02).
const FX_NO_SUCH_FILE = 2;
const FX_PERMISSION_DENIED = 3;
const FX_BAD_MESSAGE = 5;
const FX_OP_UNSUPPORTED = 8;

const S_IFMT = 0o170000;
const TYPES: Record<number, EntryType> = { 0o100000: "file", 0o040000: "directory", 0o120000: "symlink" };
const S_IFIFO = 0o010000;
const S_IFSOCK = 0o140000;

/** A failure of the connection or session, not an answer of the server. */
class TransportError extends WorkbenchError {
  readonly code = "SFTP_TRANSPORT";
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
  }
}

/** An SFTP status answer (ssh2 gives it a numeric `code`). */
function statusOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "number" ? code : undefined;
}

function typeOf(mode: number): EntryType {
  return TYPES[mode & S_IFMT] ?? "other";
}

function toFileStat(attrs: Attributes): FileStat {
  return { type: typeOf(attrs.mode), size: attrs.size, mtimeMs: attrs.mtime * 1000, mode: attrs.mode & 0o7777 };
}

/** One operation's requests on one session; records whether the server has answered any. */
class Session {
  answered = false;

  constructor(
    readonly sftp: SFTPWrapper,
    private readonly timeoutMs: number,
    private readonly onStuck: (sftp: SFTPWrapper) => void,
  ) {}

  /** Sends one request; `send` gets a Node-style callback. Status answers reject as they come. */
  request<T>(send: (sftp: SFTPWrapper, done: (error: Error | null | undefined, value?: T) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        this.onStuck(this.sftp);
        reject(Object.assign(new TransportError(`no SFTP answer within ${this.timeoutMs} ms`), { code: "ETIMEDOUT" }));
      }, this.timeoutMs);
      const done = (error: Error | null | undefined, value?: T) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!error) {
          this.answered = true;
          resolve(value as T);
        } else if (statusOf(error) !== undefined) {
          this.answered = true;
          reject(error);
        } else {
          reject(new TransportError(`SFTP session failed: ${error.message}`, error));
        }
      };
      if (!sftpChannelOpen(this.sftp)) {
        // ssh2 would drop the request silently: the session ended under this operation.
        done(new Error("the SFTP channel is closed"));
        return;
      }
      try {
        send(this.sftp, done);
      } catch (error) {
        // ssh2 throws synchronously for local problems (e.g. an unsupported extension).
        settled = true;
        clearTimeout(timer);
        reject(error);
      }
    });
  }

  stat(p: string): Promise<Attributes> {
    return this.request((s, cb) => s.stat(p, cb));
  }

  lstat(p: string): Promise<Attributes> {
    return this.request((s, cb) => s.lstat(p, cb));
  }

  /** stat/lstat, `null` for "no such file". */
  async statOrNull(p: string, follow: boolean): Promise<Attributes | null> {
    try {
      return await (follow ? this.stat(p) : this.lstat(p));
    } catch (error) {
      if (statusOf(error) === FX_NO_SUCH_FILE) return null;
      throw error;
    }
  }

  open(p: string, flags: OpenMode, mode?: number): Promise<Buffer> {
    return this.request<Buffer>((s, cb) => (mode === undefined ? s.open(p, flags, cb) : s.open(p, flags, { mode }, cb)));
  }

  close(handle: Buffer): Promise<void> {
    return this.request<void>((s, cb) => s.close(handle, cb));
  }

  /** Up to `length` bytes at `position`; fewer only at the end of the file. */
  read(handle: Buffer, position: number, length: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(length);
    return this.request<Buffer>((s, cb) =>
      s.read(handle, buffer, 0, length, position, (error, bytesRead) => cb(error, buffer.subarray(0, error ? 0 : bytesRead))),
    );
  }

  write(handle: Buffer, data: Buffer, position: number): Promise<void> {
    return this.request<void>((s, cb) => s.write(handle, data, 0, data.length, position, (error) => cb(error)));
  }
}

/**
 * Reads a file's chunks in order. The first request is one chunk (most files fit in it); after
 * that `ahead` requests stay in flight. A short read at or past the size seen before opening
 * is the end of the file, which saves the extra request that would answer "EOF" (the small-read
 * hot path is then stat, open, one read, and a close nobody waits for).
 */
class ChunkReader {
  private readonly queue: Array<{ position: number; data: Promise<Buffer> }> = [];
  private next = 0;
  private ended = false;
  private inFlight = 1;

  constructor(
    private readonly session: Session,
    private readonly handle: Buffer,
    private readonly sizeHint: number,
    private readonly ahead: number,
  ) {}

  async read(): Promise<Buffer | undefined> {
    if (this.ended) return undefined;
    while (this.queue.length < this.inFlight) {
      const data = this.session.read(this.handle, this.next, CHUNK_BYTES);
      data.catch(() => undefined); // requests dropped after a short read are never awaited
      this.queue.push({ position: this.next, data });
      this.next += CHUNK_BYTES;
    }
    this.inFlight = this.ahead;
    const { position, data } = this.queue.shift()!;
    const chunk = await data;
    if (chunk.length === CHUNK_BYTES) return chunk;
    // Short: the end, or (rarely) a server that returned less; requests past it are void.
    this.queue.length = 0;
    const end = position + chunk.length;
    // Files that report size 0 but have content (/proc) are read until a read returns nothing.
    if (chunk.length === 0 || (this.sizeHint > 0 && end >= this.sizeHint)) this.ended = true;
    this.next = end;
    this.inFlight = 1;
    return chunk.length === 0 ? undefined : chunk;
  }
}

/**
 * FileOperations over SFTP. Usually reached as `sshEnvironment.fileOps`; construct it directly
 * only with your own {@link SftpSource}.
 *
 * @example
 * const env = new SshEnvironment({ host, username, privateKey, hostKey });
 * const { lines } = await env.fileOps.readLines("/srv/app/README.md", { offset: 1, limit: 50, maxLineChars: 2000 });
 * await env.close();
 */
export class SftpFileOperations implements FileOperations {
  readonly kind = "sftp";
  private readonly timeoutMs: number;
  /** A session whose request timed out: replaced on the next call. */
  private stuck: SFTPWrapper | undefined;

  constructor(
    readonly env: SftpSource,
    options: SftpFileOperationsOptions = {},
  ) {
    if (!env || typeof env.sftp !== "function") throw new TypeError("SftpFileOperations needs a source with an sftp() method, e.g. an SshEnvironment");
    if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new TypeError("SftpFileOperations: timeoutMs must be a positive number of milliseconds");
    }
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  async stat(p: string): Promise<FileStat | null> {
    return this.withSession("stat", p, true, async (s) => {
      try {
        return toFileStat(await s.stat(p));
      } catch (error) {
        if (statusOf(error) !== FX_NO_SUCH_FILE) throw error;
        // Missing, under a file, dangling: null. A symlink loop is an error, as for fs.stat.
        if ((await missingCode(s, p, true)) === "ELOOP") throw fsError("ELOOP", "stat", p);
        return null;
      }
    });
  }

  async lstat(p: string): Promise<FileStat | null> {
    return this.withSession("lstat", p, true, async (s) => {
      const attrs = await s.statOrNull(p, false);
      return attrs ? toFileStat(attrs) : null;
    });
  }

  async realpath(p: string): Promise<string> {
    return this.withSession("realpath", p, true, async (s) => {
      // OpenSSH resolves a missing last component without complaint: the stat (sent in the same
      // round trip) makes a missing path reject, as realpath(3) does.
      const [resolved, exists] = await Promise.allSettled([
        s.request<string>((sftp, cb) => sftp.realpath(p, cb)),
        s.stat(p),
      ]);
      if (exists.status === "rejected") throw await this.refine(s, exists.reason, "realpath", p, true);
      if (resolved.status === "rejected") throw resolved.reason;
      return resolved.value;
    });
  }

  async readdir(p: string): Promise<DirEntry[]> {
    return this.withSession("scandir", p, true, async (s) => {
      let list: FileEntryWithStats[];
      try {
        list = await s.request<FileEntryWithStats[]>((sftp, cb) => sftp.readdir(p, cb));
      } catch (error) {
        if (statusOf(error) !== FX_NO_SUCH_FILE) throw error;
        const target = await s.statOrNull(p, true);
        if (target && typeOf(target.mode) !== "directory") throw fsError("ENOTDIR", "scandir", p);
        throw fsError(await missingCode(s, p, true), "scandir", p);
      }
      // OpenSSH lstats each entry, so a symlink is reported as one.
      return list.map((e) => ({ name: e.filename, type: typeOf(e.attrs.mode) }));
    });
  }

  async readBytes(p: string, start: number, length: number): Promise<Buffer> {
    checkCount("start", start);
    checkCount("length", length);
    return this.withSession("read", p, true, async (s) => {
      const attrs = await this.readable(s, p, "read");
      if (attrs === "fifo") throw fsError("ESPIPE", "read", p);
      if (length === 0) return Buffer.alloc(0);
      return this.withHandle(s, p, async (handle) => {
        const parts: Buffer[] = [];
        let filled = 0;
        while (filled < length) {
          const chunk = await s.read(handle, start + filled, length - filled);
          if (chunk.length === 0) break;
          parts.push(chunk);
          filled += chunk.length;
        }
        return Buffer.concat(parts, filled);
      });
    });
  }

  async readLines(
    p: string,
    window: { offset: number; limit: number; maxLineChars: number },
  ): Promise<{ lines: string[]; cutLines: number[]; hasMore: boolean; totalLines?: number }> {
    return this.withSession("read", p, true, async (s) => {
      const collector = new LineWindowCollector(window);
      const attrs = await this.readable(s, p, "read");
      if (attrs === "fifo") return collector.end();
      return this.withHandle(s, p, async (handle) => {
        // One request in flight at a time: a window near the start costs one 64 KiB read even
        // in a 50 MB file.
        const reader = new ChunkReader(s, handle, attrs.size, 1);
        for (let chunk = await reader.read(); chunk; chunk = await reader.read()) {
          const done = collector.push(chunk);
          if (done) return done;
        }
        return collector.end();
      });
    });
  }

  async countLines(p: string): Promise<number> {
    return this.withSession("read", p, true, async (s) => {
      const counter = new LineCounter();
      const attrs = await this.readable(s, p, "read");
      if (attrs === "fifo") return 0;
      return this.withHandle(s, p, async (handle) => {
        const reader = new ChunkReader(s, handle, attrs.size, PIPELINE);
        for (let chunk = await reader.read(); chunk; chunk = await reader.read()) counter.push(chunk);
        return counter.total;
      });
    });
  }

  async readText(p: string): Promise<string> {
    return this.withSession("read", p, true, async (s) => {
      const attrs = await this.readable(s, p, "read");
      if (attrs === "fifo") return "";
      return this.withHandle(s, p, async (handle) => {
        const parts: Buffer[] = [];
        const reader = new ChunkReader(s, handle, attrs.size, PIPELINE);
        for (let chunk = await reader.read(); chunk; chunk = await reader.read()) parts.push(chunk);
        return Buffer.concat(parts).toString("utf8");
      });
    });
  }

  async writeAtomic(p: string, data: string | Buffer): Promise<{ bytesWritten: number; dirsCreated: string[] }> {
    if (typeof data !== "string" && !Buffer.isBuffer(data)) throw new TypeError("writeAtomic data must be a string or a Buffer");
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    // Not repeated after a lost connection once the server has answered: the first request is a
    // stat, so a retry happens only when nothing was done yet.
    return this.withSession("open", p, false, async (s) => {
      const dir = path.posix.dirname(p);
      const dirsCreated = await mkdirpOn(s, dir);
      const existing = await s.statOrNull(p, true);
      if (existing && typeOf(existing.mode) === "directory") throw fsError("EISDIR", "open", p);
      const keepMode = existing && typeOf(existing.mode) === "file" ? existing.mode & 0o7777 : undefined;
      const temp = path.posix.join(dir, atomicTempName());
      // New files get 0644 minus the server's umask, as a local open(…, 0o644) would.
      const handle = await s.open(temp, "wx", keepMode ?? 0o644).catch(async (error: unknown) => {
        throw await this.refine(s, error, "open", temp, true);
      });
      try {
        try {
          await writeAll(s, handle, bytes);
          await fsyncIfOffered(s, handle);
          // open() applied the umask; the old file's mode is restored exactly.
          if (keepMode !== undefined) await s.request<void>((sftp, cb) => sftp.fchmod(handle, keepMode, cb));
        } finally {
          await s.close(handle);
        }
        await renameOver(s, temp, p);
      } catch (error) {
        await s.request<void>((sftp, cb) => sftp.unlink(temp, cb)).catch(() => undefined);
        throw error;
      }
      return { bytesWritten: bytes.length, dirsCreated };
    });
  }

  async remove(p: string): Promise<void> {
    return this.withSession("unlink", p, false, async (s) => {
      const attrs = await s.statOrNull(p, false);
      if (!attrs) throw fsError(await missingCode(s, p, false), "unlink", p);
      if (typeOf(attrs.mode) === "directory") throw fsError("EISDIR", "unlink", p);
      await s.request<void>((sftp, cb) => sftp.unlink(p, cb));
    });
  }

  async rename(from: string, to: string): Promise<void> {
    checkPath(to);
    return this.withSession("rename", from, false, async (s) => {
      const source = await s.statOrNull(from, false);
      if (!source) throw fsError(await missingCode(s, from, false), "rename", from);
      await mkdirpOn(s, path.posix.dirname(to));
      try {
        await renameOver(s, from, to);
      } catch (error) {
        if (statusOf(error) === undefined) throw error;
        // rename(2) says why; SFTP only says "failure": look at what is in the way.
        const target = await s.statOrNull(to, false);
        const fromDir = typeOf(source.mode) === "directory";
        if (target && typeOf(target.mode) === "directory" && !fromDir) throw fsError("EISDIR", "rename", from);
        if (target && typeOf(target.mode) === "directory" && fromDir) throw fsError("ENOTEMPTY", "rename", from);
        if (target && fromDir) throw fsError("ENOTDIR", "rename", from);
        throw error;
      }
    });
  }

  async removeEmptyDir(p: string): Promise<void> {
    return this.withSession("rmdir", p, false, async (s) => {
      const attrs = await s.statOrNull(p, false);
      if (!attrs) throw fsError(await missingCode(s, p, false), "rmdir", p);
      if (typeOf(attrs.mode) !== "directory") throw fsError("ENOTDIR", "rmdir", p);
      await s.request<void>((sftp, cb) => sftp.rmdir(p, cb));
    });
  }

  async mkdirp(p: string): Promise<string[]> {
    return this.withSession("mkdir", p, false, (s) => mkdirpOn(s, p));
  }

  /** Closes the environment (ends the SSH connection and its SFTP session), like ShellFileOperations. */
  async close(): Promise<void> {
    await this.env.close?.();
  }

  /**
   * Runs one operation on the current session. If the session's transport fails (the
   * connection was dropped under it), the operation runs once more on a fresh session when that
   * is safe: read-only operations always, others only if the server had not answered anything.
   */
  private async withSession<T>(syscall: string, p: string, readOnly: boolean, run: (s: Session) => Promise<T>): Promise<T> {
    checkPath(p);
    return this.env.use ? this.env.use(() => this.onSession(syscall, p, readOnly, run)) : this.onSession(syscall, p, readOnly, run);
  }

  private async onSession<T>(syscall: string, p: string, readOnly: boolean, run: (s: Session) => Promise<T>): Promise<T> {
    let sftp: SFTPWrapper;
    const stuck = this.stuck;
    this.stuck = undefined;
    try {
      sftp = await this.env.sftp(stuck);
    } catch (error) {
      throw this.unreachable(error, syscall, p);
    }
    const first = new Session(sftp, this.timeoutMs, (s) => (this.stuck = s));
    try {
      return await run(first);
    } catch (error) {
      if (!(error instanceof TransportError) || (first.answered && !readOnly) || (error as { code?: string }).code === "ETIMEDOUT") {
        throw this.toFsError(error, syscall, p);
      }
    }
    try {
      sftp = await this.env.sftp(sftp);
    } catch (error) {
      throw this.unreachable(error, syscall, p);
    }
    try {
      return await run(new Session(sftp, this.timeoutMs, (s) => (this.stuck = s)));
    } catch (error) {
      throw this.toFsError(error, syscall, p);
    }
  }

  /** Why a status answer failed, refined by looking at the path (only on the error path). */
  private async refine(s: Session, error: unknown, syscall: string, p: string, follow: boolean): Promise<unknown> {
    if (statusOf(error) !== FX_NO_SUCH_FILE) return error;
    return fsError(await missingCode(s, p, follow), syscall, p);
  }

  /**
   * Checks that `p` can be opened for reading without blocking: a regular file (or a device),
   * not a directory (EISDIR) or a socket (ENXIO). A FIFO is reported, never opened.
   */
  private async readable(s: Session, p: string, syscall: string): Promise<Attributes | "fifo"> {
    let attrs: Attributes;
    try {
      attrs = await s.stat(p);
    } catch (error) {
      throw await this.refine(s, error, syscall, p, true);
    }
    const format = attrs.mode & S_IFMT;
    if (format === 0o040000) throw fsError("EISDIR", syscall, p);
    if (format === S_IFSOCK) throw fsError("ENXIO", syscall, p);
    if (format === S_IFIFO) return "fifo";
    return attrs;
  }

  private async withHandle<T>(s: Session, p: string, use: (handle: Buffer) => Promise<T>): Promise<T> {
    let handle: Buffer;
    try {
      handle = await s.open(p, "r");
    } catch (error) {
      throw await this.refine(s, error, "open", p, true);
    }
    try {
      return await use(handle);
    } finally {
      // Requests on one session are answered in order, so the close need not hold up the caller.
      s.close(handle).catch(() => undefined);
    }
  }

  private unreachable(error: unknown, syscall: string, p: string): Error {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ERR_SSH_CLOSED" || code === "ERR_SSH_NO_SFTP") return error as Error;
    return Object.assign(new Error(`${this.kind}: could not reach the server for ${syscall} '${p}': ${(error as Error).message}`), {
      code: code ?? "EIO",
      syscall,
      path: p,
      cause: error,
    });
  }

  /** A Node-style error (`code`, `syscall`, `path`) for any failure. */
  private toFsError(error: unknown, syscall: string, p: string): unknown {
    if (error instanceof TransportError) {
      const code = (error as { code?: string }).code ?? "ECONNRESET";
      return Object.assign(fsError(code, syscall, p, error.message), { cause: error });
    }
    const status = statusOf(error);
    if (status === undefined) return error; // already Node-style, or a programming error
    const code =
      status === FX_NO_SUCH_FILE ? "ENOENT"
      : status === FX_PERMISSION_DENIED ? "EACCES"
      : status === FX_BAD_MESSAGE ? "EINVAL"
      : status === FX_OP_UNSUPPORTED ? "ENOSYS"
      : "EIO";
    return Object.assign(fsError(code, syscall, p, code === "EIO" ? (error as Error).message : undefined), { cause: error });
  }
}

/**
 * The errno a "no such file" answer stands for: ENOENT, ENOTDIR (a parent is not a directory)
 * or ELOOP (the final symlink chain loops; only when following).
 */
async function missingCode(s: Session, p: string, follow: boolean): Promise<"ENOENT" | "ENOTDIR" | "ELOOP"> {
  const own = await s.statOrNull(p, false);
  if (own) return follow && typeOf(own.mode) === "symlink" && (await linkLoops(s, p)) ? "ELOOP" : "ENOENT";
  for (let dir = path.posix.dirname(p); ; dir = path.posix.dirname(dir)) {
    const parent = await s.statOrNull(dir, true);
    if (parent) return typeOf(parent.mode) === "directory" ? "ENOENT" : "ENOTDIR";
    if (dir === "/" || dir === ".") return "ENOENT";
  }
}

/** True when following the symlink at `p` never reaches a non-link (a loop, not a dangling link). */
async function linkLoops(s: Session, p: string): Promise<boolean> {
  let current = p;
  for (let hop = 0; hop < MAX_LINK_HOPS; hop++) {
    const target = await s.request<string>((sftp, cb) => sftp.readlink(current, cb)).catch(() => undefined);
    if (target === undefined) return false;
    current = path.posix.resolve(path.posix.dirname(current), target);
    const next = await s.statOrNull(current, false);
    if (!next || typeOf(next.mode) !== "symlink") return false;
  }
  return true;
}

/** mkdir -p on a session; returns the directories it created, top-down. */
async function mkdirpOn(s: Session, p: string): Promise<string[]> {
  const missing: string[] = [];
  for (let dir = path.posix.normalize(p); ; dir = path.posix.dirname(dir)) {
    const attrs = await s.statOrNull(dir, true);
    if (attrs) {
      if (typeOf(attrs.mode) !== "directory") throw fsError(dir === path.posix.normalize(p) ? "EEXIST" : "ENOTDIR", "mkdir", p);
      break;
    }
    missing.unshift(dir);
    if (dir === "/" || dir === ".") break;
  }
  const created: string[] = [];
  for (const dir of missing) {
    try {
      await s.request<void>((sftp, cb) => sftp.mkdir(dir, cb));
      created.push(dir);
    } catch (error) {
      if (statusOf(error) === undefined) throw error;
      // Someone else created it meanwhile: fine, but it is not ours to report.
      const now = await s.statOrNull(dir, true);
      if (now && typeOf(now.mode) === "directory") continue;
      throw fsError(now ? "EEXIST" : statusOf(error) === FX_PERMISSION_DENIED ? "EACCES" : "ENOENT", "mkdir", dir);
    }
  }
  return created;
}

/** Writes all of `bytes`, keeping up to PIPELINE requests in flight. */
async function writeAll(s: Session, handle: Buffer, bytes: Buffer): Promise<void> {
  const pending = new Set<Promise<void>>();
  let failure: unknown;
  for (let position = 0; position < bytes.length && failure === undefined; position += CHUNK_BYTES) {
    const request = s.write(handle, bytes.subarray(position, position + CHUNK_BYTES), position).then(
      () => void pending.delete(request),
      (error: unknown) => {
        pending.delete(request);
        failure ??= error;
      },
    );
    pending.add(request);
    if (pending.size >= PIPELINE) await Promise.race(pending);
  }
  await Promise.all(pending);
  if (failure !== undefined) throw failure;
}

async function fsyncIfOffered(s: Session, handle: Buffer): Promise<void> {
  if (!offers(s.sftp, "fsync@openssh.com")) return;
  await s.request<void>((sftp, cb) => sftp.ext_openssh_fsync(handle, (error) => cb(error)));
}

/** Atomic replace with posix-rename; plain SFTP rename refuses an existing target. */
async function renameOver(s: Session, from: string, to: string): Promise<void> {
  if (offers(s.sftp, "posix-rename@openssh.com")) {
    await s.request<void>((sftp, cb) => sftp.ext_openssh_rename(from, to, cb));
    return;
  }
  const target = await s.statOrNull(to, false);
  if (target && typeOf(target.mode) !== "directory") await s.request<void>((sftp, cb) => sftp.unlink(to, cb));
  await s.request<void>((sftp, cb) => sftp.rename(from, to, cb));
}

/**
 * ssh2 silently drops requests written to a closed SFTP channel (their callbacks never run), so
 * a session is used only while its channel is open.
 */
export function sftpChannelOpen(sftp: SFTPWrapper): boolean {
  const state = (sftp as unknown as { outgoing?: { state?: string } }).outgoing?.state;
  return state === undefined || state === "open";
}

/** Whether the server announced an extension (ssh2 keeps the list from the version packet). */
function offers(sftp: SFTPWrapper, extension: string): boolean {
  const extensions = (sftp as unknown as { _extensions?: Record<string, string> })._extensions;
  return extensions?.[extension] !== undefined;
}

function checkPath(p: string): void {
  if (typeof p !== "string" || !p.startsWith("/") || p.includes("\0")) {
    throw Object.assign(new TypeError(`Path must be an absolute POSIX path without NUL bytes, got ${JSON.stringify(p)}`), {
      code: "ERR_INVALID_ARG_VALUE",
    });
  }
}

function checkCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be an integer ≥ 0, got ${value}`);
}
