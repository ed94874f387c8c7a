/**
 * Artifacts: the files of a thread's workspace created or changed since a time (usually the
 * start of the run, the FileManager's `startWorkTime`), with sizes, and a zip or tar stream of
 * them for a download button. Credential files are never listed or packed; symlinks are not
 * followed; directories like `.git`/`node_modules` are skipped; FIFOs, sockets and devices are
 * never listed or opened.
 *
 * On this machine the packed bytes come from the very file that was listed: its directory is
 * opened `O_NOFOLLOW` and verified, the file `O_NOFOLLOW | O_NONBLOCK` and checked against the
 * listing's device and inode (`readWorkspaceFile`); a file swapped since (for a symlink, a FIFO,
 * another file) is left out. Entry names: see archiveEntryName.ts (a name an extractor could
 * misread, such as `\app\settings.py`, is listed but left out of archives, in `notArchived`).
 */
import { lstat } from "node:fs/promises";
import path from "node:path";
import { setImmediate as nextTick } from "node:timers/promises";
import { Zip, ZipDeflate } from "fflate";
import pLimit from "p-limit";
import { contentAccessReason, readAccessReason } from "../guards/access.js";
import { readWorkspaceFile } from "../environment/dirHandle.js";
import { isLocalFileOperations } from "../environment/locality.js";
import type { FileOperations, FileStat } from "../environment/fileOperations.js";
import { archiveEntryProblem, archivePathProblem } from "./archiveEntryName.js";
import type { Workspace } from "../workspace.js";
import { DEFAULT_MAX_TRANSFER_BYTES, getFile, isTransferRefusal, workspacePolicy, type TransferSettings } from "./transfer.js";

/** One file in an artifact listing. */
export interface Artifact {
  /** Workspace-relative path (`reports/summary.md`): the file's own name components joined with `/`. */
  path: string;
  /** Size in bytes. */
  size: number;
  /** Last modification. */
  modifiedAt: Date;
}

/** Options of {@link listArtifacts}. */
export interface ArtifactListOptions extends TransferSettings {
  /** Files modified at or after this time are listed. */
  since: Date | number;
  /** Directory names never entered (default `.git`, `node_modules`). */
  skipDirs?: readonly string[];
  /** Most files visited before the listing stops and says it is truncated (default 20,000). */
  maxFiles?: number;
}

/** What {@link listArtifacts} returns. */
export interface ArtifactList {
  /** The cut-off used. */
  since: Date;
  /** Files changed since then, sorted by path. */
  files: Artifact[];
  /** The walk stopped at `maxFiles`: more files may have changed. */
  truncated: boolean;
  /**
   * Listed files that archives leave out because their name cannot be an entry name (a
   * backslash, a control character, bytes that are not UTF-8), with the reason.
   */
  notArchived: { path: string; reason: string }[];
  /**
   * The listed files as an archive stream (zip: deflated; tar: ustar with PAX long names).
   * Files that vanished or became unreadable since the listing are left out.
   */
  archive(format?: "zip" | "tar"): ReadableStream<Uint8Array>;
}

const DEFAULT_SKIP = [".git", "node_modules"];

/** Lists the workspace's regular files modified at or after `since` (credential files excluded). */
export async function listArtifacts(ws: Workspace, ops: FileOperations, options: ArtifactListOptions): Promise<ArtifactList> {
  const since = options.since instanceof Date ? options.since : new Date(options.since);
  if (Number.isNaN(since.getTime())) throw new TypeError("artifacts: since must be a Date or a millisecond timestamp");
  const skip = new Set(options.skipDirs ?? DEFAULT_SKIP);
  const maxFiles = options.maxFiles ?? 20_000;
  await ws.ensure(ops);
  const policy = { ...workspacePolicy(ws, options), workspaceDir: ws.dir };
  const io = pLimit(16);
  const local = isLocalFileOperations(ops);
  const files: Artifact[] = [];
  /** Device and inode of each listed file (this machine only): what the archive must pack. */
  const identity = new WeakMap<Artifact, { ino: number; dev: number }>();
  const notArchived: { path: string; reason: string }[] = [];
  let visited = 0;
  let truncated = false;
  // Paths are kept as their name components, never re-split: a `\` inside a name stays in it.
  const queue: { dir: string; parts: string[] }[] = [{ dir: ws.dir, parts: [] }];
  while (queue.length > 0 && !truncated) {
    const { dir, parts } = queue.shift()!;
    const entries = await ops.readdir(dir).catch(() => []);
    const candidates: { system: string; parts: string[] }[] = [];
    for (const e of entries) {
      const child = dir.endsWith("/") ? `${dir}${e.name}` : `${dir}/${e.name}`;
      if (e.type === "directory") {
        if (!skip.has(e.name)) queue.push({ dir: child, parts: [...parts, e.name] });
      } else if (e.type === "file") {
        if (++visited > maxFiles) {
          truncated = true;
          break;
        }
        if (!contentAccessReason(child, policy)) candidates.push({ system: child, parts: [...parts, e.name] });
      }
    }
    const stats = await Promise.all(candidates.map((c) => io(async (): Promise<ListedStat | null> => (local ? lstat(c.system).then(fromNode, () => null) : ops.lstat(c.system).catch(() => null)))));
    candidates.forEach((c, i) => {
      const s = stats[i];
      if (s?.type !== "file" || s.mtimeMs < since.getTime()) return;
      const artifact: Artifact = { path: c.parts.join("/"), size: s.size, modifiedAt: new Date(s.mtimeMs) };
      files.push(artifact);
      if (s.ino !== undefined && s.dev !== undefined) identity.set(artifact, { ino: s.ino, dev: s.dev });
      const problem = archiveEntryProblem(c.parts);
      if (problem) notArchived.push({ path: artifact.path, reason: problem });
    });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  notArchived.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const settings: TransferSettings = { ...options, maxBytes: options.maxBytes ?? DEFAULT_MAX_TRANSFER_BYTES };
  const root = { dir: ws.dir, real: ws.realDirectory() };
  const readPolicy = workspacePolicy(ws, options);
  const load: Loader = async (f) => {
    const listed = identity.get(f);
    if (!listed) {
      const got = await getFile(ws, ops, f.path, settings);
      return isTransferRefusal(got) ? undefined : got.content;
    }
    const read = await readWorkspaceFile(root, f.path, settings.maxBytes!, listed).catch(() => undefined);
    if (read?.kind !== "file") return undefined;
    const real = path.join(root.real, ...f.path.split("/"));
    if (readAccessReason(real, readPolicy, { type: "file", nlink: read.stats.nlink, size: read.stats.size })) return undefined;
    return new Uint8Array(read.data.buffer, read.data.byteOffset, read.data.byteLength);
  };
  return {
    since,
    files,
    truncated,
    notArchived,
    archive: (format = "zip") => archiveStream(files, format, load),
  };
}

type ListedStat = Pick<FileStat, "type" | "size" | "mtimeMs"> & { ino?: number; dev?: number };

/** The fields the listing needs from a native `lstat` (device and inode: what an archive must pack). */
function fromNode(s: import("node:fs").Stats): ListedStat {
  return { type: s.isFile() ? "file" : "other", size: s.size, mtimeMs: s.mtimeMs, ino: s.ino, dev: s.dev };
}

type Loader = (file: Artifact) => Promise<Uint8Array | undefined>;

/**
 * Packs `files` (read one at a time through `load`) into a zip or tar byte stream. Files whose
 * path cannot be an entry name (see archiveEntryName.ts) are left out, never renamed.
 */
export function archiveStream(files: readonly Artifact[], format: "zip" | "tar", load: Loader): ReadableStream<Uint8Array> {
  if (format !== "zip" && format !== "tar") throw new TypeError('archive format must be "zip" or "tar"');
  const packable = files.filter((f) => archivePathProblem(f.path) === undefined);
  return format === "zip" ? zipStream(packable, load) : tarStream(packable, load);
}

/** Deflate input is pushed in slices so one large file does not hold the event loop. */
const ZIP_SLICE = 256 * 1024;

function zipStream(files: readonly Artifact[], load: Loader): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      let failed = false;
      const zip = new Zip((err, chunk, final) => {
        if (failed) return;
        if (err) {
          failed = true;
          controller.error(err);
          return;
        }
        controller.enqueue(chunk);
        if (final) controller.close();
      });
      try {
        for (const f of files) {
          const data = await load(f);
          if (!data) continue;
          const entry = new ZipDeflate(f.path, { level: 6 });
          entry.mtime = f.modifiedAt;
          zip.add(entry);
          if (data.byteLength === 0) entry.push(new Uint8Array(0), true);
          for (let at = 0; at < data.byteLength; at += ZIP_SLICE) {
            entry.push(data.subarray(at, at + ZIP_SLICE), at + ZIP_SLICE >= data.byteLength);
            await nextTick();
          }
        }
        zip.end();
      } catch (err) {
        failed = true;
        controller.error(err);
      }
    },
  });
}

const BLOCK = 512;
const encoder = new TextEncoder();

function tarStream(files: readonly Artifact[], load: Loader): ReadableStream<Uint8Array> {
  let index = 0;
  let ended = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (index < files.length) {
        const f = files[index++]!;
        const data = await load(f);
        if (!data) continue;
        for (const part of tarEntry(f, data)) controller.enqueue(part);
        return;
      }
      if (!ended) {
        ended = true;
        controller.enqueue(new Uint8Array(BLOCK * 2));
      }
      controller.close();
    },
  });
}

/** Header (PAX header first for names over 100 bytes), data and padding of one tar entry. */
function tarEntry(f: Artifact, data: Uint8Array): Uint8Array[] {
  const parts: Uint8Array[] = [];
  const name = encoder.encode(f.path);
  const mtime = Math.floor(f.modifiedAt.getTime() / 1000);
  if (name.byteLength > 100) {
    const record = paxRecord("path", f.path);
    parts.push(tarHeader("PaxHeader", record.byteLength, mtime, "x"), record, padding(record.byteLength));
  }
  parts.push(tarHeader(name.byteLength > 100 ? ustarFallbackName(f.path) : f.path, data.byteLength, mtime, "0"), data, padding(data.byteLength));
  return parts;
}

/**
 * The ustar name a reader without PAX support sees for a long path: its last whole components
 * that fit in 100 bytes (never a cut that starts with `/`, never a cut character), else the
 * base name's last bytes.
 */
function ustarFallbackName(entryPath: string): string {
  const parts = entryPath.split("/");
  let name = parts.pop()!;
  while (parts.length > 0 && encoder.encode(`${parts[parts.length - 1]}/${name}`).byteLength <= 100) name = `${parts.pop()}/${name}`;
  while (encoder.encode(name).byteLength > 100) name = Array.from(name).slice(1).join("");
  return name;
}

function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = encoder.encode(body).byteLength;
  // The record's length prefix counts its own digits.
  let length = bodyBytes + 1;
  while (String(length).length + bodyBytes !== length) length = String(length).length + bodyBytes;
  return encoder.encode(`${length}${body}`);
}

function padding(size: number): Uint8Array {
  const rest = size % BLOCK;
  return new Uint8Array(rest === 0 ? 0 : BLOCK - rest);
}

function tarHeader(name: string, size: number, mtime: number, type: "0" | "x"): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const put = (text: string, at: number, width: number) => h.set(encoder.encode(text).subarray(0, width), at);
  const octal = (n: number, width: number) => n.toString(8).padStart(width - 1, "0");
  put(name, 0, 100);
  put(octal(0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(mtime, 12), 136, 12);
  h.fill(0x20, 148, 156);
  put(type, 156, 1);
  put("ustar\u000000", 257, 8);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, 8);
  return h;
}
