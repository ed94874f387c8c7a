/**
 * The snapshot store's on-disk format (one directory per thread, outside every workspace), and
 * the pure functions that write and read it. Everything is content-addressed and written once
 * (temp file + rename, or an append to a pack only its writer appends to), so a crash leaves at
 * most an unreferenced object or a torn pack tail that readers ignore.
 *
 * ```
 * <store>/
 *   packs/<pid>-<8 hex>-<seq>.pack  small blobs (stored form ≤ 64 KiB, objects.ts PACK_MAX), one entry after another (below)
 *   blobs/<2 hex>/<62 hex>     larger raw file content (and symlink targets), named by sha256 of the content
 *                              (in stores written before packs: every raw blob, small ones too)
 *   zblobs/<2 hex>/<62 hex>    the same, brotli-compressed (blobs of 256 bytes and more), named by the raw content's sha256
 *   trees/<64 hex>             one directory: JSON [[name, blob, size, mode, mtimeMs, isLink], …] sorted by name,
 *                              named by the sha256 of the same list without mtimes ({@link treeText})
 *   trees/c<40 hex>            a chunk of a record's directory map ({@link DirChunk}, {@link chunkDirMap})
 *   snaps/<24 hex>.json        one record per snapshot: v3 {@link StoredRecordV3} (root chunk), or v1
 *                              with the whole map inline; the id is the sha256 of the whole map (24 hex)
 *   HEAD.json                  where the workspace stands ({@link SnapshotHead}): id, assigned, baseline, pinned
 *   working.json               cache of the working set's per-directory stat signatures (rebuilt if missing)
 *   pending/<p-…>              a pending id handed out during a background baseline → the id it became
 *   restore.json               the journal of a restore under way (finished on the next use)
 * ```
 * A remote thread's store also holds `mirror/`, the host-side copy of the recorded files
 * (remoteStore.ts).
 *
 * Packs (blob format 2; format 1, loose files only, is still read: a blob is looked up loose,
 * then packed, and loose blobs are never moved). A pack is a sequence of entries, each a
 * {@link PACK_HEADER_BYTES}-byte header and its body:
 * ```
 * 0   4  magic "WBP1"
 * 4   1  kind: 0 raw, 1 brotli
 * 5   3  zero
 * 8   4  body length (big-endian)
 * 12 32  sha256 of the raw content (the blob's name)
 * 44  4  crc32 of header bytes 4..44 then the body (big-endian)
 * 48  …  body
 * ```
 * Each writing process appends only to packs it created (`O_EXCL | O_APPEND`, named by its pid and
 * random bytes; a new one past 64 MiB), and answers with a blob's hash only after its entry is
 * written — the same durability as a loose blob (written, not fsynced) — so no tree or record names
 * a blob before its bytes are in the pack. Readers index every pack by scanning it; an entry whose
 * header, length or crc does not check out ends that pack's scan (a torn tail after a crash, or an
 * entry another process is still writing: scanned again on the next look), and a blob read is
 * checked against its sha256. A miss looks at the packs again before it fails. GC (retention.ts →
 * objects.ts) rewrites a pack no live process writes once half its bytes are dead: live entries
 * copied to a new pack (fsynced, renamed in), then the old one deleted.
 */
import { createHash } from "node:crypto";

/** One file in a directory tree: content hash, size, mode bits, mtime (ms), symlink flag. */
export interface SnapshotFile {
  h: string;
  s: number;
  m: number;
  t: number;
  l?: 1;
}

/**
 * Whether an mtime listed on disk is the recorded one `t`. A restore sets mtimes through libuv,
 * which truncates them to whole microseconds (and the seconds-as-double it takes can lose one
 * more): an exact comparison would see every restored file as changed and read it again at the
 * next look. Within 2 µs is the same (file times come from the kernel's coarse clock: two
 * writes of the same size that far apart are not told apart by any stat cache).
 */
export function sameMtime(t: number, listed: number): boolean {
  return Math.abs(t - listed) < 0.002;
}

/** An entry a snapshot saw but did not record (it stays as it is on restore). */
export interface SkippedEntry {
  /** Relative path; bytes that are not UTF-8 shown as `\xNN`. */
  path: string;
  reason: "too-large" | "sparse" | "snapshot-budget" | "not-utf8-name" | "not-regular" | "changed-while-read" | "unreadable" | "too-deep";
  /** Size in bytes (files). */
  size?: number;
}

/** What a snapshot record says about itself (listing). */
export interface SnapshotInfo {
  id: string;
  /** The snapshot the workspace was at before this one (undefined for the first). */
  parent?: string;
  createdAt: number;
  files: number;
  /** Sum of the file sizes in this snapshot (not what it adds to the store). */
  bytes: number;
  /** Why it was taken: `"tool"`, `"scan"`, `"before-restore"`, `"baseline"`. */
  reason?: string;
  /** Entries seen but not recorded (the first {@link MAX_LISTED_SKIPS}; `skippedCount` has them all). */
  skipped?: SkippedEntry[];
  skippedCount?: number;
  /**
   * Paths a command running beside this snapshot (the first one of a workspace, taken in the
   * background) had changed before they were read: they may hold what the command made of them,
   * not what was there before it (directories, where an entry came or went, end in "/"; the root
   * is "./"). The first {@link MAX_LISTED_SKIPS}; `changedWhileTakenCount` counts them all.
   */
  changedWhileTaken?: string[];
  changedWhileTakenCount?: number;
}

export interface SnapshotRecord extends SnapshotInfo {
  v: 1 | 3;
  /** relDir ("" = root) → tree object hash (in memory always; on disk only in v1 records). */
  dirs: Record<string, string>;
  /** The chunk objects the directory map was read from (v3): kept live by retention. */
  chunks?: string[];
}

/**
 * A record as stored from v3 on: the directory map lives in chunk objects (in `trees/`, named by
 * content like trees), so a snapshot that changed one directory writes the chunks on that
 * directory's path and a small record — not the whole map again (100 edits of one file wrote
 * 8 MB of records at 1,000 directories before).
 */
export interface StoredRecordV3 extends SnapshotInfo {
  v: 3;
  /** The root chunk of the directory map. */
  root: string;
}

/**
 * One chunk of a directory map: `d` the directories it holds directly, `c` the sub-chunks by the
 * next path component. A map of at most {@link CHUNK_MAX_DIRS} directories is one leaf chunk; a
 * larger one keeps the directories whose path ends at its depth and splits the rest by their
 * next component (so a change under `pkg07/` rewrites the chunks on that path only).
 */
export interface DirChunk {
  d: Record<string, string>;
  c?: Record<string, string>;
}

export const CHUNK_MAX_DIRS = 64;
/** Deepest chunk level: a map still larger there stays one chunk. */
const CHUNK_MAX_DEPTH = 16;

/** Splits sorted directory-map entries into chunks (pure): returns the root chunk's text and every chunk by hash. */
export function chunkDirMap(entries: readonly (readonly [string, string])[], depth = 0, out = new Map<string, string>()): { root: string; chunks: Map<string, string> } {
  const chunk: DirChunk = { d: {} };
  if (entries.length <= CHUNK_MAX_DIRS || depth >= CHUNK_MAX_DEPTH) {
    for (const [rel, h] of entries) chunk.d[rel] = h;
  } else {
    const groups = new Map<string, [string, string][]>();
    for (const [rel, h] of entries) {
      const parts = rel === "" ? [] : rel.split("/");
      if (parts.length <= depth) chunk.d[rel] = h;
      else {
        const key = parts[depth]!;
        let g = groups.get(key);
        if (!g) groups.set(key, (g = []));
        g.push([rel, h]);
      }
    }
    chunk.c = {};
    for (const [key, g] of groups) chunk.c[key] = chunkDirMap(g, depth + 1, out).root;
  }
  const text = JSON.stringify(chunk);
  const hash = `c${sha256(text).slice(0, 40)}`;
  out.set(hash, text);
  return { root: hash, chunks: out };
}

/** Bytes of a pack entry's header (layout above). */
export const PACK_HEADER_BYTES = 48;

export const EMPTY_TREE = "[]";

export const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

export function childOf(rel: string, name: string): string {
  return rel === "" ? name : `${rel}/${name}`;
}

export function parentOf(rel: string): string {
  const i = rel.lastIndexOf("/");
  return i === -1 ? "" : rel.slice(0, i);
}

export function isUnder(rel: string, dir: string): boolean {
  return dir === "" || rel === dir || rel.startsWith(`${dir}/`);
}

/** A raw name as listings show it: bytes that are not printable ASCII (and `\\`) as `\\xNN`. */
export function printableBytes(raw: Uint8Array): string {
  let out = "";
  for (const b of raw) out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, "0")}`;
  return out;
}

/** A directory's tree object: with mtimes (`text`, what is stored) and without (what names it). */
export function treeText(files: Map<string, SnapshotFile>): { text: string; named: string } {
  if (files.size === 0) return { text: EMPTY_TREE, named: EMPTY_TREE };
  const entries = [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    text: JSON.stringify(entries.map(([n, f]) => [n, f.h, f.s, f.m, f.t, f.l ?? 0])),
    named: JSON.stringify(entries.map(([n, f]) => [n, f.h, f.s, f.m, f.l ?? 0])),
  };
}

export function parseTree(text: string): Map<string, SnapshotFile> {
  const files = new Map<string, SnapshotFile>();
  for (const [n, h, s, m, t, l] of JSON.parse(text) as [string, string, number, number, number, number][]) {
    files.set(n, { h, s, m, t, ...(l ? { l: 1 as const } : {}) });
  }
  return files;
}

