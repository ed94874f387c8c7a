import { constants as osConstants } from "node:os";
import path from "node:path";
import { hasChannel } from "./execChannel.js";
import type { Environment, ExecResult } from "./environment.js";
import { AgentLostError, AgentUnavailableError, ShellAgents } from "./shellAgent.js";
import { withArgs } from "./shellQuote.js";
import { SHELL_TEMP_TEMPLATE } from "./tempFiles.js";
import type { DirEntry, EntryType, FileOperations, FileStat } from "./fileOperations.js";

/** Options of {@link ShellFileOperations}. */
export interface ShellFileOperationsOptions {
  /** Timeout for each command, in ms. Default 30,000. A timeout rejects with code `ETIMEDOUT`. */
  timeoutMs?: number;
}

/**
 * FileOperations implemented with POSIX `sh` and GNU coreutils/findutils commands (`stat -c`,
 * `find -printf`, `cut`, `sed`, `wc`, `mktemp`, `mv`), run through an {@link Environment}:
 * local bash, SSH or `docker exec`. One script per call; over an environment that offers
 * `openChannel` (DockerEnvironment) the scripts run in a long-lived agent (shellAgent.ts), so a
 * tool call's several steps cost one `docker exec`, not one each.
 *
 * - File content always travels through stdin/stdout, never through argv, so size is not
 *   limited by the command-line length, and every path is shell-quoted (`shellQuote.ts`).
 * - Failures carry Node-style `code`s (ENOENT, EACCES, ENOTDIR, EISDIR, EEXIST, ENOTEMPTY, …)
 *   so callers treat this backend exactly like LocalFileOperations.
 * - `kind` is `"shell:<environment kind>"`. There is no file-system watcher on the far side of
 *   a shell, so change tracking must poll these backends (see `isLocalFileOperations` in locality.ts).
 *
 * @example
 * const ops = new ShellFileOperations(
 *   new SshEnvironment({
 *     host: "build-box", username: "agent",
 *     privateKey: await readFile("/home/me/.ssh/id_ed25519"),
 *     hostKey: "ssh-ed25519 AAAAC3Nza…",   // the server's /etc/ssh/ssh_host_ed25519_key.pub
 *   }),
 * );
 * const { lines } = await ops.readLines("/srv/app/README.md", { offset: 1, limit: 50, maxLineChars: 2000 });
 * await ops.close();
 */
export class ShellFileOperations implements FileOperations {
  readonly kind: string;
  private readonly timeoutMs: number;
  private readonly agents: ShellAgents | undefined;

  constructor(
    readonly env: Environment,
    options: ShellFileOperationsOptions = {},
  ) {
    if (!env || typeof env.exec !== "function") {
      throw new TypeError("ShellFileOperations needs an Environment with an exec(command, options) method");
    }
    if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new TypeError("ShellFileOperations: timeoutMs must be a positive number of milliseconds");
    }
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.kind = `shell:${env.kind}`;
    this.agents = hasChannel(env) ? new ShellAgents(env) : undefined;
  }

  async stat(p: string): Promise<FileStat | null> {
    return this.statWith(p, "stat", "-L");
  }

  async lstat(p: string): Promise<FileStat | null> {
    return this.statWith(p, "lstat", "");
  }

  async realpath(p: string): Promise<string> {
    const out = await this.run("realpath", p, `wb_probe "$1" -L\nrealpath -e -- "$1"`, [p]);
    return stripFinalNewline(out.toString("utf8"));
  }

  async readdir(p: string): Promise<DirEntry[]> {
    const script = `wb_probe "$1" -L
[ -d "$1" ] || wb_fail ENOTDIR
find -H "$1" -mindepth 1 -maxdepth 1 -printf '%y/%P\\0'`;
    const out = await this.run("scandir", p, script, [p]);
    const entries: DirEntry[] = [];
    for (const record of out.toString("utf8").split("\0")) {
      if (record === "") continue;
      entries.push({ name: record.slice(2), type: FIND_TYPES[record[0] ?? ""] ?? "other" });
    }
    return entries;
  }

  async readBytes(p: string, start: number, length: number): Promise<Buffer> {
    checkCount("start", start);
    checkCount("length", length);
    // `tail -c +N` seeks on a regular file, so a late start does not read what comes before it.
    const reader = start === 0 ? `head -c "$2" -- "$1"` : `tail -c "+$3" -- "$1" | head -c "$2"`;
    return this.run("read", p, `${READABLE_AT_OFFSET}\n${reader}`, [p, String(length), String(start + 1)]);
  }

  async readLines(
    p: string,
    window: { offset: number; limit: number; maxLineChars: number },
  ): Promise<{ lines: string[]; cutLines: number[]; hasMore: boolean; totalLines?: number }> {
    // Same clamping as LocalFileOperations, so both backends answer odd windows alike.
    const offset = Math.max(1, Math.floor(window.offset));
    const limit = Math.max(0, Math.floor(window.limit));
    const maxLineChars = Math.max(1, Math.floor(window.maxLineChars));
    if (![offset, limit, maxLineChars].every(Number.isSafeInteger)) {
      throw new RangeError("readLines window values must be finite numbers");
    }
    const last = offset + limit; // one line past the window tells whether there is more
    // `cut` first, so a gigantic single line is never held in memory by `sed`; the byte budget
    // keeps more than maxLineChars UTF-16 units (a unit takes at most 3 UTF-8 bytes), so the
    // cut to characters below is exact. `sed` quits at the first line past the window.
    const maxBytes = maxLineChars * 3 + 4;
    const script = `${READABLE_FILE}\ncut -b "1-$2" -- "$1" | sed -n "$3,$4p;$4q"`;
    const out = await this.run("read", p, script, [p, String(maxBytes), String(offset), String(last)]);
    const raw = splitLines(out.toString("utf8"));
    const hasMore = raw.length > limit;
    const lines: string[] = [];
    const cutLines: number[] = [];
    raw.slice(0, limit).forEach((rawLine, i) => {
      const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
      if (line.length > maxLineChars) {
        cutLines.push(offset + i);
        lines.push(line.slice(0, maxLineChars));
      } else {
        lines.push(line);
      }
    });
    if (hasMore) return { lines, cutLines, hasMore };
    // The read reached the end: the total is known, except when the window started past it.
    const totalLines = raw.length > 0 ? offset - 1 + raw.length : await this.countLines(p);
    return { lines, cutLines, hasMore, totalLines };
  }

  async countLines(p: string): Promise<number> {
    // `wc -l` counts newlines; a last line without one is still a line.
    const script = `${READABLE_FILE}
n=$(wc -l < "$1")
if [ -s "$1" ] && [ "$(tail -c 1 -- "$1" | wc -l)" -eq 0 ]; then n=$((n + 1)); fi
echo "$n"`;
    const out = await this.run("read", p, script, [p]);
    return parseCount(out, "countLines");
  }

  async readText(p: string): Promise<string> {
    const out = await this.run("read", p, `${READABLE_FILE}\ncat -- "$1"`, [p]);
    return out.toString("utf8");
  }

  async writeAtomic(p: string, data: string | Buffer): Promise<{ bytesWritten: number; dirsCreated: string[] }> {
    if (typeof data !== "string" && !Buffer.isBuffer(data)) throw new TypeError("writeAtomic data must be a string or a Buffer");
    checkPath(p);
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    const dir = path.posix.dirname(p);
    const ancestors = ancestorsOf(dir);
    // Temp file in the target directory so `mv` is a rename on one file system; mode of the
    // existing file kept (new files get 0644 & ~umask, as LocalFileOperations does); fsync before the
    // rename; the byte count is checked so a cut-off stdin never replaces the old content.
    const script = `p=$1 d=$2 n=$3
shift 3
${COUNT_MISSING}
if [ -d "$p" ]; then wb_fail EISDIR; fi
mkdir -p -- "$d" || exit 87
tmp=$(mktemp "$d/${SHELL_TEMP_TEMPLATE}") || exit 87
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp" || exit 87
if [ -e "$p" ]; then chmod --reference="$p" -- "$tmp" || exit 87
else chmod "$(printf '%o' $((0644 & ~0$(umask))))" -- "$tmp" || exit 87; fi
sync -- "$tmp" 2>/dev/null || sync
w=$(wc -c < "$tmp")
if [ "$w" -ne "$n" ]; then echo "short write: $w of $n bytes arrived" >&2; exit 87; fi
mv -f -- "$tmp" "$p" || exit 87
trap - EXIT
echo "$c"`;
    const out = await this.run("open", p, script, [p, dir, String(bytes.length), ...ancestors], bytes);
    const created = parseCount(out, "writeAtomic");
    return { bytesWritten: bytes.length, dirsCreated: ancestors.slice(0, created).reverse() };
  }

  async remove(p: string): Promise<void> {
    const script = `wb_probe "$1" ""
if [ -d "$1" ] && [ ! -L "$1" ]; then wb_fail EISDIR; fi
rm -f -- "$1"`;
    await this.run("unlink", p, script, [p]);
  }

  async rename(from: string, to: string): Promise<void> {
    checkPath(to);
    // `-T`: never move *into* an existing directory named like the destination.
    const script = `wb_probe "$1" ""
mkdir -p -- "$3" || exit 87
mv -f -T -- "$1" "$2"`;
    await this.run("rename", from, script, [from, to, path.posix.dirname(to)]);
  }

  async removeEmptyDir(p: string): Promise<void> {
    const script = `wb_probe "$1" ""
if [ -L "$1" ] || [ ! -d "$1" ]; then wb_fail ENOTDIR; fi
rmdir -- "$1"`;
    await this.run("rmdir", p, script, [p]);
  }

  async mkdirp(p: string): Promise<string[]> {
    const ancestors = ancestorsOf(p);
    const script = `d=$1
shift
${COUNT_MISSING}
mkdir -p -- "$d" || exit 87
echo "$c"`;
    const out = await this.run("mkdir", p, script, [p, ...ancestors]);
    return ancestors.slice(0, parseCount(out, "mkdirp")).reverse();
  }

  /** Closes the environment (ends an SSH connection); the operations cannot be used afterwards. */
  async close(): Promise<void> {
    this.agents?.close();
    await this.env.close?.();
  }

  private async statWith(p: string, syscall: string, follow: string): Promise<FileStat | null> {
    const script = `wb_probe "$1" "$2"\nstat $2 -c '%f %s %.9Y' -- "$1"`;
    let out: Buffer;
    try {
      out = await this.run(syscall, p, script, [p, follow]);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw error;
    }
    return parseStat(out.toString("utf8"), p);
  }

  /** The script through an agent when there is one (one exec when none can start), else one exec. */
  private async exec(script: string, stdin: Buffer | undefined): Promise<ExecResult> {
    if (this.agents) {
      try {
        return await this.agents.run(script, stdin, this.timeoutMs);
      } catch (error) {
        if (!(error instanceof AgentUnavailableError)) throw error;
      }
    }
    return this.env.exec(script, { timeoutMs: this.timeoutMs, stdin });
  }

  /** Runs `script` (with the helper prelude) and returns stdout, or throws a Node-style error. */
  private async run(syscall: string, p: string, script: string, args: string[], stdin?: Buffer): Promise<Buffer> {
    checkPath(p);
    let result: ExecResult;
    try {
      result = await this.exec(withArgs(`${PRELUDE}\n${script}`, args), stdin);
    } catch (error) {
      if (error instanceof AgentLostError) throw fsError("ECONNRESET", syscall, p, error.message);
      throw Object.assign(new Error(`${this.kind}: could not run the ${syscall} command for '${p}': ${(error as Error).message}`), {
        code: (error as NodeJS.ErrnoException).code ?? "EIO",
        syscall,
        path: p,
        cause: error,
      });
    }
    if (result.timedOut) throw fsError("ETIMEDOUT", syscall, p, `no answer within ${this.timeoutMs} ms`);
    if (result.exitCode === 0) return result.stdout;
    const marked = /@@WBERR:([A-Z]+)/.exec(result.stderr);
    const code = marked?.[1] ?? codeFromMessage(result.stderr);
    throw fsError(code ?? "EIO", syscall, p, code ? undefined : result.stderr.trim() || `exit status ${result.exitCode}`);
  }
}

// `wb_probe PATH [-L]` checks that the path exists and turns a failure into a marked errno code
// on stderr. The test builtins answer the common case without a process; only a failure runs
// `stat`, whose message tells ENOENT from ENOTDIR, EACCES, ELOOP.
// LC_ALL=C makes every tool's messages (and `sed`/`cut`) byte-based and in English.
const PRELUDE = `export LC_ALL=C
wb_fail() { printf '@@WBERR:%s\\n' "$1" >&2; exit 86; }
wb_probe() {
  if [ "$2" = -L ]; then [ -e "$1" ] && return 0; elif [ -e "$1" ] || [ -L "$1" ]; then return 0; fi
  wb_m=$(stat $2 -c %f -- "$1" 2>&1) && return 0
  case $wb_m in
    *"No such file"*) wb_fail ENOENT ;;
    *"Not a directory"*) wb_fail ENOTDIR ;;
    *"Permission denied"*) wb_fail EACCES ;;
    *"Too many levels"*) wb_fail ELOOP ;;
    *"name too long"*) wb_fail ENAMETOOLONG ;;
    *) printf '%s\\n' "$wb_m" >&2; exit 87 ;;
  esac
}`;

/**
 * A file that can be read: exists (following symlinks) and is not a directory. FIFOs and sockets
 * are never opened (a FIFO would block the command until a writer appears); they answer the
 * way LocalFileOperations' non-blocking open does: a FIFO without a writer reads as empty,
 * a positional read of it fails with ESPIPE, a socket fails with ENXIO.
 */
const READABLE_FILE = `wb_probe "$1" -L
if [ -d "$1" ]; then wb_fail EISDIR; fi
if [ -S "$1" ]; then wb_fail ENXIO; fi
if [ -p "$1" ]; then exit 0; fi`;
const READABLE_AT_OFFSET = READABLE_FILE.replace(`if [ -p "$1" ]; then exit 0; fi`, `if [ -p "$1" ]; then wb_fail ESPIPE; fi`);

/** Counts, in `c`, the leading positional parameters (deepest ancestor first) that do not exist. */
const COUNT_MISSING = `c=0
for a in "$@"; do
  if [ -e "$a" ] || [ -L "$a" ]; then break; fi
  c=$((c + 1))
done`;

const FIND_TYPES: Record<string, EntryType> = { f: "file", d: "directory", l: "symlink" };

const S_IFMT = 0o170000;
const MODE_TYPES: Record<number, EntryType> = { 0o100000: "file", 0o040000: "directory", 0o120000: "symlink" };

function parseStat(text: string, p: string): FileStat {
  const match = /^([0-9a-f]+) (\d+) (\d+)(?:\.(\d+))?\s*$/.exec(text);
  if (!match) throw fsError("EIO", "stat", p, `unexpected stat output ${JSON.stringify(text.slice(0, 80))}`);
  const rawMode = parseInt(match[1]!, 16);
  const fraction = match[4] ?? "0";
  return {
    type: MODE_TYPES[rawMode & S_IFMT] ?? "other",
    size: Number(match[2]),
    mtimeMs: Number(match[3]) * 1000 + Number(fraction.padEnd(9, "0").slice(0, 9)) / 1e6,
    mode: rawMode & 0o7777,
  };
}

function parseCount(out: Buffer, what: string): number {
  const n = Number(out.toString("utf8").trim());
  if (!Number.isInteger(n) || n < 0) throw fsError("EIO", what, "", `unexpected output ${JSON.stringify(out.toString("utf8").slice(0, 80))}`);
  return n;
}

/** `dir` and each parent up to (not including) `/`, deepest first. */
function ancestorsOf(dir: string): string[] {
  const out: string[] = [];
  for (let d = path.posix.normalize(dir); d !== "/" && d !== "."; d = path.posix.dirname(d)) out.push(d);
  return out;
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function stripFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}

function checkPath(p: string): void {
  if (typeof p !== "string" || !p.startsWith("/") || p.includes("\0")) {
    throw Object.assign(new TypeError(`Path must be an absolute POSIX path without NUL bytes, got ${JSON.stringify(p)}`), {
      code: "ERR_INVALID_ARG_VALUE",
    });
  }
}

function checkCount(name: string, value: number, min = 0): void {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be an integer ≥ ${min}, got ${value}`);
}

// Order matters: "cannot overwrite directory" must win over the generic messages.
const MESSAGE_CODES: Array<[RegExp, string]> = [
  [/cannot overwrite directory|Is a directory/i, "EISDIR"],
  [/No such file or directory/i, "ENOENT"],
  [/Not a directory|cannot overwrite non-directory/i, "ENOTDIR"],
  [/Permission denied/i, "EACCES"],
  [/Operation not permitted/i, "EPERM"],
  [/File exists/i, "EEXIST"],
  [/Directory not empty/i, "ENOTEMPTY"],
  [/Too many levels of symbolic links/i, "ELOOP"],
  [/File name too long/i, "ENAMETOOLONG"],
  [/No space left on device/i, "ENOSPC"],
  [/Read-only file system/i, "EROFS"],
  [/Invalid cross-device link/i, "EXDEV"],
];

function codeFromMessage(stderr: string): string | undefined {
  return MESSAGE_CODES.find(([pattern]) => pattern.test(stderr))?.[1];
}

const DESCRIPTIONS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "not a directory",
  EISDIR: "illegal operation on a directory",
  EEXIST: "file already exists",
  ENOTEMPTY: "directory not empty",
  ELOOP: "too many symbolic links encountered",
  ENAMETOOLONG: "name too long",
  ENOSPC: "no space left on device",
  EROFS: "read-only file system",
  EXDEV: "cross-device link not permitted",
  ETIMEDOUT: "operation timed out",
  ECONNRESET: "connection lost",
  ESPIPE: "invalid seek",
  ENXIO: "no such device or address",
  EIO: "i/o error",
};

/** An error shaped like the ones `fs/promises` throws (`code`, `errno`, `syscall`, `path`). */
export function fsError(code: string, syscall: string, p: string, detail?: string): NodeJS.ErrnoException {
  const description = DESCRIPTIONS[code] ?? code.toLowerCase();
  const error: NodeJS.ErrnoException = new Error(
    `${code}: ${description}, ${syscall}${p ? ` '${p}'` : ""}${detail ? ` (${detail})` : ""}`,
  );
  error.code = code;
  error.syscall = syscall;
  if (p) error.path = p;
  const errno = (osConstants.errno as Record<string, number | undefined>)[code];
  if (errno !== undefined) error.errno = -errno;
  return error;
}
