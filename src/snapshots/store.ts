/**
 * A thread workspace's snapshot store: content-addressed blobs (named by the sha256 of the raw
 * content, deduplicated, stored brotli-compressed where that pays, small ones appended to pack
 * files: {@link ObjectStore}), one small tree object per directory, and one record per snapshot
 * naming those trees. A snapshot after a change re-hashes
 * only the paths it is told about (or, after tools whose effect is unknown, re-hashes only files
 * whose size or mtime moved) and rewrites only the trees of the directories that changed.
 *
 * The workspace is hostile input (the agent's shell made it): the store reads it only through
 * directories held by descriptor ({@link DirHandle}) — never through a link, never a FIFO,
 * socket or device, only the regular file the listing named — and records no setuid, setgid or
 * sticky bits. Files over the per-file cap, sparse files and files past the per-snapshot byte
 * budget are not read but listed as skipped; names that are not UTF-8 are listed too. What a
 * snapshot does not record, a restore leaves as it is. Restores rewrite in place only what
 * differs ({@link applyInPlace}), journaled so an interrupted one is finished on the next use.
 */
import { randomBytes } from "node:crypto";
import { type Stats } from "node:fs";
import { chmod, link, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, utimes, writeFile, type FileHandle } from "node:fs/promises";
import path from "node:path";
import pLimit from "p-limit";
import { DirHandle, EntryChangedError } from "../environment/dirHandle.js";
import { isAtomicTempName } from "../environment/tempFiles.js";
import { listTree, type ListedDir, type ListedEntry } from "../environment/listWorker.js";
import { dirToRead, readFilesIntoStore, readResultAt, type BlobLayout } from "./blobWorker.js";
import { RestoreJournalFile, settleLegacySwap, type RestoreJournal } from "./restoreJournal.js";
import { ObjectStore } from "./objects.js";
import { applyInPlace, dirsToVisit, sameContent, type TreeMap } from "./applyInPlace.js";
import { WorkbenchError } from "../workbenchError.js";
import { childOf, chunkDirMap, isUnder, parentOf, parseTree, printableBytes, sha256, treeText, type DirChunk, type SkippedEntry, type SnapshotFile, type SnapshotInfo, type SnapshotRecord, type StoredRecordV3 } from "./format.js";
import { pruneStore, type RetentionPolicy } from "./retention.js";

export type { RetentionPolicy } from "./retention.js";
import { WorkingDir } from "./workingDir.js";
import { exists } from "./exists.js";

export { chunkDirMap, type SkippedEntry, type SnapshotFile, type SnapshotInfo } from "./format.js";

/** Which workspace entries a snapshot leaves out (kept as they are on restore). */
export interface SnapshotPolicy {
  /** Directory or file names skipped wherever they occur (e.g. `node_modules`, `.git`). */
  ignoreNames: readonly string[];
  /** Relative `/`-separated path → true to leave it out (credential files). */
  excludePath: (rel: string) => boolean;
  /** Files larger than this are not read (listed as skipped). Default {@link DEFAULT_MAX_FILE_BYTES}. */
  maxFileBytes?: number;
  /** Bytes one snapshot reads at most; files past it are skipped. Default {@link DEFAULT_MAX_SNAPSHOT_BYTES}. */
  maxSnapshotBytes?: number;
}

/** Per-file cap: larger files are listed as skipped, not read. */
export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024;
/** Per-snapshot cap on bytes read (new or changed files). */
export const DEFAULT_MAX_SNAPSHOT_BYTES = 1024 * 1024 * 1024;
/** How many skipped entries a record lists by name. */
export const MAX_LISTED_SKIPS = 200;

/** Where the workspace stands. */
export interface SnapshotHead {
  /** The snapshot the workspace was last recorded as or restored to. */
  id: string;
  /** The snapshot last handed to a checkpoint (a run's state); a checkpoint naming another one was rewound to. */
  assigned?: string;
  /** The thread's first snapshot: the workspace before any checkpoint named one. */
  baseline?: string;
  /** Set by an explicit restore: the next run adopts the workspace instead of restoring its checkpoint. */
  pinned?: boolean;
}
type Head = SnapshotHead;

type Journal = RestoreJournal;

/** What a restore did. */
export interface RestoreResult {
  restored: string;
  /** The snapshot of the files just before (recorded first, so nothing is lost). */
  previous: string;
  /** Paths the snapshot's entries could not take: an entry it does not record holds the name. */
  kept?: string[];
}

const STREAM_ABOVE = 4 * 1024 * 1024;
/** Workspaces with more recorded files than this are listed by two workers at once. */
const SPLIT_LISTING_ABOVE = 5_000;
/** A restore lists at most this many directories one by one before it takes one full look instead. */
const MAX_VERIFIED_DIRS = 200;
/** Files, and bytes past one file, a read request takes at most (three readers share them out: blobWorker.ts). */
const READ_BATCH = 1_000;
const READ_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * A snapshot id handed to a checkpoint before its snapshot is committed (during a baseline that
 * runs in the background); {@link SnapshotStore.resolve} turns it into the real id.
 */
export function pendingSnapshotId(): string {
  return `p-${randomBytes(12).toString("hex")}`;
}

export function isPendingSnapshotId(id: string): boolean {
  return /^p-[0-9a-f]{24}$/.test(id);
}

/** A workspace-relative path as the store names it (`a/b.txt`); refuses absolute paths and `..`. */
function relativePath(p: string): string {
  const parts = String(p).split(/[\\/]+/).filter((x) => x !== "" && x !== ".");
  if (typeof p !== "string" || path.isAbsolute(p) || parts.length === 0 || parts.includes("..")) {
    throw new TypeError(`restore paths are workspace-relative paths such as "src/app.ts" (got ${JSON.stringify(p)})`);
  }
  return parts.join("/");
}

/** Raised for a snapshot id the store does not hold (pruned, or never taken). */
export class SnapshotNotFoundError extends WorkbenchError {
  readonly code = "SNAPSHOT_NOT_FOUND";
  override readonly name = "SnapshotNotFoundError";
  constructor(readonly id: string) {
    super(`Snapshot ${id} is not in the store (pruned by retention, or taken elsewhere). List the thread's snapshots to pick one.`);
  }
}

/** What a snapshot needs to know of a file or link before reading it (from a listing or an `lstat`). */
type EntryStat = Omit<ListedEntry, "name" | "raw">;

function entryStat(st: Stats): EntryStat {
  const kind = st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : "other";
  return { kind, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode, ino: st.ino, dev: st.dev, blocks: st.blocks };
}

/** The stat cache: a recorded entry still describes the file when size, mtime, mode and kind agree. */
function statMatches(known: SnapshotFile, st: EntryStat): boolean {
  return known.s === st.size && known.t === st.mtimeMs && known.m === (st.mode & 0o777) && Boolean(known.l) === (st.kind === "symlink");
}

/** A file is sparse when far less is allocated than its size says (`truncate -s 1T`): never read. */
function isSparse(st: EntryStat): boolean {
  return st.size > 1024 * 1024 && typeof st.blocks === "number" && st.blocks * 512 < st.size / 8;
}



/**
 * The store of one workspace directory. Every operation runs through one queue per store, so
 * snapshots and restores of a thread never interleave.
 */
/** Options of {@link SnapshotStore.snapshot}. */
export interface SnapshotOptions {
  /** Re-read only these (absolute paths inside the workspace); else every file is stat'ed. */
  paths?: readonly string[];
  /** With `paths`: re-read only where size, mtime or mode moved (paths a watcher listed). */
  statCache?: boolean;
  /** Why it is taken (`"tool"`, `"scan"`, …), kept in the record. */
  reason?: string;
  /** The checkpoint now names this snapshot (the head's `assigned`). */
  assign?: boolean;
  /**
   * A full look the caller does not wait for: from this call until it commits, tools hand in
   * the pre-images of what they change ({@link SnapshotStore.protectBaseline}), so the look
   * records the files as they were when it was asked for.
   */
  background?: boolean;
}

export class SnapshotStore {
  /** Blobs, loose and packed (objects.ts). */
  private readonly objects: ObjectStore;
  private readonly trees: string;
  private readonly snaps: string;
  private working: Map<string, WorkingDir> | undefined;
  /** Entries the last looks saw but did not record (relative path → why). */
  private skipped = new Map<string, SkippedEntry>();
  /** Entries another source reported as not recordable ({@link noteSkipped}). */
  private readonly externalSkips = new Map<string, SkippedEntry>();
  /** Bytes the snapshot under way may still read. */
  private budget = 0;
  /**
   * Pre-images for the baseline while it is not committed yet (relative path → the entry before a
   * tool wrote it; null: nothing was there): the baseline's scan may reach a file after a tool of
   * the first run changed it, and must record what was there before.
   */
  private readonly baselineOverrides = new Map<string, SnapshotFile | null>();
  private baselineCommitted = false;
  /**
   * A full look queued in the background (`snapshot({ background: true })`) has not committed
   * yet: like the baseline, it takes the pre-images tools hand in ({@link protectBaseline}).
   */
  private lookOpen = false;
  /** Links and large files of a scan, read one by one. */
  private readonly oneByOne = pLimit(1);
  /** The working set was loaded from the head and not checked against the disk since. */
  private unverified = false;
  /** The working-set cache as last written. */
  private cacheText: string | undefined;
  private head: Head | undefined;
  private headLoaded = false;
  /**
   * HEAD.json's identity (inode, mtime, size) when this process last read or wrote it. Several
   * processes (workers on one root) serve a thread in turn: a head another one moved must be
   * read again, or its checkpoint's snapshot looks like a rewind and a restore undoes newer files.
   */
  private headStamp: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private recovered = false;
  private journalFile: RestoreJournalFile | undefined;
  private sinceGc = 0;
  private readonly ignore: Set<string>;
  private readonly maxFileBytes: number;
  private readonly maxSnapshotBytes: number;
  private readonly io = pLimit(16);
  /** Directories of the store known to exist (saves a syscall each). */
  private readonly madeDirs = new Set<string>();
  /** Directory-map chunks known to be stored, and parsed ones (bounded: consecutive records share most). */
  private readonly knownChunks = new Set<string>();
  private readonly chunkCache = new Map<string, DirChunk>();

  constructor(
    /** The workspace directory. */
    readonly dir: string,
    /** The store directory (outside the workspace). */
    readonly storeDir: string,
    private readonly policy: SnapshotPolicy,
    private readonly retention: RetentionPolicy,
  ) {
    this.objects = new ObjectStore(storeDir);
    this.trees = path.join(storeDir, "trees");
    this.snaps = path.join(storeDir, "snaps");
    this.ignore = new Set(policy.ignoreNames);
    this.maxFileBytes = policy.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.maxSnapshotBytes = policy.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES;
  }

  /** Runs `fn` after every earlier operation on this store. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(async () => {
      await this.recover();
      return fn();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The snapshot the workspace was last brought to or recorded as (undefined before the first). */
  headId(): Promise<string | undefined> {
    return this.serial(async () => (await this.loadHead())?.id);
  }

  /** The head as last read or written by this process, without waiting (undefined if unknown yet). */
  peekHead(): Readonly<SnapshotHead> | undefined {
    return this.recovered && this.headLoaded ? this.head : undefined;
  }

  /** Head with its pin flag. */
  headInfo(): Promise<Head | undefined> {
    return this.serial(async () => {
      const h = await this.loadHead();
      return h ? { ...h } : undefined;
    });
  }

  /** Records that a checkpoint now names `id` (and clears an explicit restore's pin). */
  assign(id: string): Promise<void> {
    return this.serial(async () => {
      const h = await this.loadHead();
      if (h && (h.assigned !== id || h.pinned)) await this.saveHead({ ...h, assigned: id, pinned: undefined });
    });
  }

  /**
   * Records the workspace. With `paths` (absolute, inside the workspace) only those are
   * re-read (`statCache`: only where size, mtime or mode moved — for paths a watcher listed, which
   * may be many); without, every file is stat'ed and only files whose size or mtime moved are read.
   * Returns the snapshot id (the same id when nothing changed).
   */
  snapshot(options: SnapshotOptions = {}): Promise<string> {
    // Opened now, not when the queue reaches it: tools that run meanwhile hand in their pre-images.
    if (options.background && !options.paths) this.lookOpen = true;
    return this.serial(async () => {
      const background = options.background === true && !options.paths;
      return this.snapshotNow(options.paths, options.reason ?? (options.paths ? "tool" : "scan"), options.assign, options.statCache, background).catch((error: unknown) => {
        if (background) this.openLook(false);
        throw error;
      });
    });
  }

  /**
   * Reads `paths` (absolute, inside the workspace: files or links) now, without waiting for the
   * queue, through directories held by descriptor: relative path → entry, or null where nothing
   * is (at the top-most missing component). Undefined when one of them is a directory, a large or
   * odd file, or unreadable: the caller then waits for the queue instead.
   */
  async capture(paths: readonly string[]): Promise<Map<string, SnapshotFile | null> | undefined> {
    const out = new Map<string, SnapshotFile | null>();
    for (const abs of paths) {
      const relNative = path.relative(this.dir, abs);
      if (relNative.startsWith("..") || path.isAbsolute(relNative)) continue;
      const rel = relNative.split(path.sep).join("/");
      if (rel === "") return undefined;
      if (this.leftOut(rel)) continue;
      const segs = rel.split("/");
      const root = await DirHandle.open(this.dir).catch(() => undefined);
      if (!root) return undefined;
      let dir: DirHandle = root;
      try {
        let missing: string | undefined;
        for (let i = 0; i < segs.length - 1 && missing === undefined; i++) {
          const st = await dir.lstat(segs[i]!);
          if (!st) missing = segs.slice(0, i + 1).join("/");
          else {
            const next: DirHandle | undefined = st.isDirectory() ? await dir.openDir(segs[i]!) : undefined;
            if (!next) return undefined;
            await dir.close();
            dir = next;
          }
        }
        if (missing !== undefined) {
          out.set(missing, null);
          continue;
        }
        const name = segs.at(-1)!;
        const st = await dir.lstat(name);
        if (!st) {
          out.set(rel, null);
          continue;
        }
        const es = entryStat(st);
        if (es.kind === "symlink") {
          const link = await this.linkEntry(dir, name, es);
          if (!link) return undefined;
          out.set(rel, link);
          continue;
        }
        if (es.kind !== "file" || es.size > STREAM_ABOVE || es.size > this.maxFileBytes || isSparse(es)) return undefined;
        const result = readResultAt(await readFilesIntoStore(this.dir, [dirToRead(parentOf(rel), [{ name, ino: es.ino, dev: es.dev, size: es.size }])], this.layout), 0);
        if (!Array.isArray(result)) return undefined;
        this.rememberBlob(result[0]);
        out.set(rel, { h: result[0], s: result[1], m: es.mode & 0o777, t: result[2] });
      } catch {
        return undefined;
      } finally {
        await dir.close();
      }
    }
    return out;
  }

  /**
   * Opens the pre-image window of a full look about to be queued with `background: true` (the
   * caller may wait for a watcher first): from now, {@link protectBaseline} keeps what tools hand in.
   * `false` closes it without a look (the caller gave up) and drops what was handed in.
   */
  openLook(open = true): void {
    this.lookOpen = open;
    // A look that failed: what was handed in is dropped, so no later look records stale pre-images.
    if (!open && this.baselineCommitted) this.baselineOverrides.clear();
  }

  /**
   * Tells the full look in flight (the baseline before it commits, or a look opened with
   * {@link openLook}) what `captured` paths held before a tool
   * changes them (the first pre-image of a path counts). A no-op when no look is in flight:
   * the last one read those files before the tool ran.
   */
  protectBaseline(captured: ReadonlyMap<string, SnapshotFile | null>): void {
    if (this.baselineCommitted && !this.lookOpen) return;
    for (const [rel, entry] of captured) if (!this.baselineOverrides.has(rel)) this.baselineOverrides.set(rel, entry);
  }

  /**
   * Queued: records `captured` entries (read right after a tool wrote them) as the next snapshot,
   * assigned to the checkpoint that names `alias` (a {@link pendingSnapshotId}); `resolve(alias)`
   * answers its id from then on. Returns the id.
   */
  commitCaptured(captured: ReadonlyMap<string, SnapshotFile | null>, alias: string): Promise<string> {
    return this.serial(async () => {
      let id: string;
      if (!this.working) id = await this.snapshotNow(undefined, "tool", true);
      else {
        for (const [rel, entry] of captured) this.setEntry(rel, entry);
        const head = await this.loadHead();
        id = await this.commit(head?.id, "tool");
        await this.saveHead(head ? { ...head, id, assigned: id, pinned: undefined } : { id, baseline: id, assigned: id });
      }
      await this.nameAlias(alias, id);
      return id;
    });
  }

  /** Records that the pending id `alias` became snapshot `id` ({@link resolve}). */
  private async nameAlias(alias: string, id: string): Promise<void> {
    if (!isPendingSnapshotId(alias)) throw new TypeError(`not a pending snapshot id: ${alias}`);
    await this.mkdirOnce(path.join(this.storeDir, "pending"));
    await writeFile(path.join(this.storeDir, "pending", alias), id, { mode: 0o600 });
  }

  /** The snapshot id `id` stands for: itself, or for a pending id the snapshot it became (undefined if none). */
  resolve(id: string): Promise<string | undefined> {
    if (!isPendingSnapshotId(id)) return Promise.resolve(id);
    return this.serial(async () => {
      const real = await readFile(path.join(this.storeDir, "pending", id), "utf8").catch(() => undefined);
      return real !== undefined && /^[0-9a-f]{24}$/.test(real) ? real : undefined;
    });
  }

  /** Snapshots, newest first. */
  list(): Promise<SnapshotInfo[]> {
    return this.serial(async () => {
      const records = await this.allRecords();
      return records.map(({ id, parent, createdAt, files, bytes, reason, skipped, skippedCount }) => ({
        id,
        ...(parent ? { parent } : {}),
        createdAt,
        files,
        bytes,
        ...(reason ? { reason } : {}),
        ...(skippedCount ? { skipped, skippedCount } : {}),
      }));
    });
  }

  /** True when the store holds `id`. */
  has(id: string): Promise<boolean> {
    return this.serial(async () => (await this.readRecord(id)) !== undefined);
  }

  /**
   * Brings the workspace to snapshot `id`: records the current state first (so nothing is lost),
   * then rewrites in place what differs. Entries the snapshots do not record (credential files,
   * ignored folders, skipped files) stay as they are.
   */
  restore(id: string, options: { pin?: boolean; changed?: readonly string[] } = {}): Promise<RestoreResult> {
    return this.serial(async () => {
      const target = await this.readRecord(id);
      if (!target) throw new SnapshotNotFoundError(id);
      // Reads the head first: if another process moved it, the working set is reloaded (unverified).
      await this.loadHead();
      const previous = options.changed && this.working && !this.unverified ? await this.recordBeforeRestore(target, options.changed) : await this.snapshotNow(undefined, "before-restore");
      const kept = previous === id ? [] : await this.applyRecord(target);
      const h = (await this.loadHead())!;
      await this.saveHead(options.pin ? { ...h, pinned: true } : { ...h, assigned: id, pinned: undefined });
      return { restored: id, previous, ...(kept.length > 0 ? { kept } : {}) };
    });
  }

  /**
   * Brings back only `paths` (relative, `/`-separated: files, or directories with everything
   * below) as snapshot `id` has them — where it has nothing, they are removed — and leaves every
   * other entry as it is, hand edits included. The files are recorded first (`previous`); the
   * result is a new snapshot (`restored`), which the head names, pinned: the thread's next run
   * keeps these files.
   */
  restorePaths(id: string, paths: readonly string[]): Promise<RestoreResult> {
    const rels = paths.map(relativePath);
    return this.serial(async () => {
      const target = await this.readRecord(id);
      if (!target) throw new SnapshotNotFoundError(id);
      const previous = await this.snapshotNow(undefined, "before-restore");
      const kept = await this.applyPaths(target, rels);
      const h = (await this.loadHead())!;
      await this.saveHead({ ...h, pinned: true });
      return { restored: h.id, previous, ...(kept.length > 0 ? { kept } : {}) };
    });
  }

  private async applyPaths(target: SnapshotRecord, rels: readonly string[]): Promise<string[]> {
    const { keys, visit, trees } = await this.pathsTarget(target, rels);
    return this.applyTarget({ v: 2, target: target.id, paths: [...rels] }, keys, visit, trees, undefined);
  }

  /**
   * The state before a restore, without a full look: `changed` (what a live watcher listed since
   * the last full look) is re-read, then every directory the restore will touch or remove is
   * listed directly, until none of them moved — so nothing the restore overwrites or deletes
   * goes unrecorded, whatever the watcher missed. Entries elsewhere are not touched by it.
   */
  private async recordBeforeRestore(target: SnapshotRecord, changed: readonly string[]): Promise<string> {
    const head = await this.loadHead();
    this.budget = this.maxSnapshotBytes;
    for (const p of changed) await this.updatePath(p, false);
    const verified = new Set<string>();
    for (let round = 0; ; round++) {
      const working = this.working!;
      const visit = dirsToVisit(working.keys(), Object.keys(target.dirs), (rel) => working.get(rel)?.hash !== target.dirs[rel]);
      for (const rel of working.keys()) if (!(rel in target.dirs)) visit.add(rel);
      const todo = [...visit].filter((r) => !verified.has(r) && working.has(r));
      if (todo.length === 0) break;
      if (round >= 4 || verified.size + todo.length > MAX_VERIFIED_DIRS) {
        await this.scan(); // Much moved: one full look is cheaper.
        break;
      }
      for (const rel of todo) {
        verified.add(rel);
        await this.relistDir(rel);
      }
    }
    const id = await this.commit(head?.id, "before-restore");
    if (head && id !== head.id) await this.saveHead({ ...head, id });
    return id;
  }

  /**
   * What the working set holds now — the entries the head records, relative path → entry, and
   * its directories ("" is the root) — without reading the disk (loaded from the head when cold).
   */
  current(): Promise<{ files: Map<string, SnapshotFile>; dirs: Set<string> }> {
    return this.serial(async () => {
      const head = await this.loadHead();
      if (!this.working && head) await this.loadWorking(head);
      const files = new Map<string, SnapshotFile>();
      const dirs = new Set<string>();
      for (const [rel, d] of this.working ?? []) {
        dirs.add(rel);
        for (const [name, f] of d.files) files.set(childOf(rel, name), f);
      }
      return { files, dirs };
    });
  }

  /**
   * Entries a source other than this store's own look saw but could not record (a remote
   * listing's FIFOs, sparse or over-cap files): listed in the next snapshots' `skipped` beside the
   * store's own. Replaces the previous set; `only` (relative paths) replaces just what is below those.
   */
  noteSkipped(entries: readonly SkippedEntry[], only?: readonly string[]): void {
    if (only) {
      for (const k of [...this.externalSkips.keys()]) if (only.some((o) => o === "" || isUnder(k, o))) this.externalSkips.delete(k);
    } else this.externalSkips.clear();
    for (const e of entries) this.externalSkips.set(e.path, e);
  }

  /** The files of a snapshot: relative path → entry (directories as `dirs`). */
  manifest(id: string): Promise<{ files: Map<string, SnapshotFile>; dirs: string[] }> {
    return this.serial(async () => {
      const record = await this.readRecord(id);
      if (!record) throw new SnapshotNotFoundError(id);
      const loaded = await this.loadDirs(record);
      const files = new Map<string, SnapshotFile>();
      for (const [rel, d] of loaded) for (const [name, f] of d) files.set(childOf(rel, name), f);
      return { files, dirs: [...loaded.keys()] };
    });
  }

  /** The (raw) content of a blob, loose (compressed or raw) or packed. */
  readBlob(hash: string): Promise<Buffer> {
    return this.objects.get(hash);
  }

  /** Bytes held by blobs and trees (what retention's `maxBytes` bounds). */
  async storeBytes(): Promise<number> {
    let total = await this.objects.storedBytes();
    for (const base of [this.trees, this.snaps]) {
      const walk = async (d: string): Promise<void> => {
        let entries;
        try {
          entries = await readdir(d, { withFileTypes: true });
        } catch {
          return;
        }
        for (const e of entries) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) await walk(p);
          else total += (await stat(p).catch(() => undefined))?.size ?? 0;
        }
      };
      await walk(base);
    }
    return total;
  }

  /** Applies the retention policy now (also done every few snapshots). */
  prune(): Promise<{ removed: string[] }> {
    return this.serial(() => this.pruneNow());
  }

  // ---- snapshots -------------------------------------------------------------------------

  private async snapshotNow(paths: readonly string[] | undefined, reason: string, assign = false, statCache = false, background = false): Promise<string> {
    const head = await this.loadHead();
    if (!this.working) await this.loadWorking(head);
    this.budget = this.maxSnapshotBytes;
    // Cold start (the working set as the head recorded it): what changed since is unknown.
    const full = !paths || this.unverified;
    if (full) await this.scan();
    else for (const p of paths!) await this.updatePath(p, !statCache);
    if (!head || background) {
      for (const [rel, entry] of this.baselineOverrides) this.setEntry(rel, entry);
      this.baselineOverrides.clear();
      this.baselineCommitted = true;
      this.lookOpen = false;
    }
    const id = await this.commit(head?.id, reason);
    if (full) await this.writeWorkingCache(id);
    const assigned = assign ? { assigned: id, pinned: undefined } : {};
    if (!head) await this.saveHead({ id, baseline: id, ...assigned });
    else if (id !== head.id || (assign && (head.assigned !== id || head.pinned))) await this.saveHead({ ...head, id, ...assigned });
    // Retention: the count is checked every 25 snapshots (one readdir); age and bytes, which read
    // every record and tree, every 200.
    if (++this.sinceGc % 25 === 0) {
      const count = (await readdir(this.snaps).catch(() => [])).length;
      if (count > this.retention.maxSnapshots || this.sinceGc >= 200) {
        this.sinceGc = 0;
        await this.pruneNow();
      }
    }
    return id;
  }

  /** Writes dirty trees and the record; the id is the hash of the directory map. */
  private async commit(parent: string | undefined, reason: string): Promise<string> {
    const working = this.working!;
    const dirs: Record<string, string> = {};
    let files = 0;
    let bytes = 0;
    for (const rel of [...working.keys()].sort()) {
      const d = working.get(rel)!;
      if (d.hash === undefined || d.bytes === undefined) {
        const { text, named } = treeText(d.files);
        // Named by content, size and mode only: mtimes (kept in the object as a stat cache, and to
        // set on restore) never make the same files a different snapshot.
        d.hash = sha256(named);
        await this.writeObject(path.join(this.trees, d.hash), text);
        d.bytes = 0;
        for (const f of d.files.values()) d.bytes += f.s;
        d.pack(text);
      } else d.pack();
      dirs[rel] = d.hash;
      files += d.size;
      bytes += d.bytes;
    }
    const id = sha256(JSON.stringify(dirs)).slice(0, 24);
    const file = path.join(this.snaps, `${id}.json`);
    if (id !== parent && !(await exists(file))) {
      const all = this.externalSkips.size > 0 ? [...this.skipped.values(), ...this.externalSkips.values()] : [...this.skipped.values()];
      const skips = all.length > 0 ? { skipped: all.slice(0, MAX_LISTED_SKIPS), skippedCount: all.length } : {};
      const { root, chunks } = chunkDirMap(Object.entries(dirs));
      for (const [h, text] of chunks) {
        if (this.knownChunks.has(h)) continue;
        await this.writeObject(path.join(this.trees, h), text);
        this.rememberChunk(h);
      }
      const record: StoredRecordV3 = { v: 3, id, ...(parent && parent !== id ? { parent } : {}), createdAt: Date.now(), files, bytes, reason, ...skips, root };
      await this.writeObject(file, JSON.stringify(record));
    }
    return id;
  }

  private ensureDir(rel: string): WorkingDir {
    const working = this.working!;
    let d = working.get(rel);
    if (!d) {
      d = new WorkingDir();
      working.set(rel, d);
      if (rel !== "") this.ensureDir(parentOf(rel));
    }
    return d;
  }

  private dropDir(rel: string): void {
    for (const key of [...this.working!.keys()]) if (isUnder(key, rel) && key !== "") this.working!.delete(key);
    if (rel === "") this.working!.set("", new WorkingDir());
  }

  /** Entries never recorded: ignored names anywhere on the path, excluded paths, atomic-write temp files. */
  private leftOut(rel: string): boolean {
    return this.excludedName(rel) || this.policy.excludePath(rel) || isAtomicTempName(rel.slice(rel.lastIndexOf("/") + 1));
  }

  private excludedName(rel: string): boolean {
    for (const seg of rel.split("/")) if (this.ignore.has(seg)) return true;
    return false;
  }

  private skip(rel: string, reason: SkippedEntry["reason"], size?: number): undefined {
    this.skipped.set(rel, { path: rel, reason, ...(size !== undefined ? { size } : {}) });
    return undefined;
  }

  /** Sets (or with null removes, a directory with everything below) one entry of the working set. */
  private setEntry(rel: string, entry: SnapshotFile | null): void {
    const working = this.working!;
    const parent = parentOf(rel);
    const name = rel.slice(parent === "" ? 0 : parent.length + 1);
    if (working.has(rel)) this.dropDir(rel);
    if (entry === null) {
      const p = working.get(parent);
      if (p?.files.delete(name)) p.hash = undefined;
      return;
    }
    const d = this.ensureDir(parent);
    d.files.set(name, entry);
    d.hash = undefined;
  }

  /**
   * Re-reads one path (file, directory or gone), reaching it through directories held by
   * descriptor: where a component on the way is not a plain directory (a symlink, say), that
   * component is re-read instead — nothing below a link is ever recorded.
   */
  private async updatePath(abs: string, force = true): Promise<void> {
    const relNative = path.relative(this.dir, abs);
    if (relNative.startsWith("..") || path.isAbsolute(relNative)) return;
    const rel = relNative.split(path.sep).join("/");
    if (rel === "") return this.scan();
    if (this.leftOut(rel)) return;
    const segs = rel.split("/");
    const root = await DirHandle.open(this.dir).catch(() => undefined);
    if (!root) return this.scan();
    let dir: DirHandle = root;
    try {
      let i = 0;
      for (; i < segs.length - 1; i++) {
        const next: DirHandle | undefined = await dir.openDir(segs[i]!);
        if (!next) break;
        await dir.close();
        dir = next;
      }
      await this.refreshEntry(dir, segs.slice(0, i + 1).join("/"), force);
    } finally {
      await dir.close();
    }
  }

  /** Re-reads entry `rel` of the held directory `dir` (its parent). */
  private async refreshEntry(dir: DirHandle, rel: string, force: boolean): Promise<void> {
    const working = this.working!;
    const parent = parentOf(rel);
    const name = rel.slice(parent === "" ? 0 : parent.length + 1);
    this.skipped.delete(rel);
    const st = await dir.lstat(name);
    const p = working.get(parent);
    if (!st) {
      if (p?.files.delete(name)) p.hash = undefined;
      if (working.has(rel)) {
        this.dropDir(rel);
        if (p) p.hash = undefined;
      }
      return;
    }
    if (st.isDirectory()) {
      const had = working.has(rel);
      if (p?.files.delete(name)) p.hash = undefined;
      await this.scanTree(rel, { path: dir.at(name) as string, root: false });
      if (!had) this.ensureDir(parent).hash = undefined;
      return;
    }
    // A directory replaced by a file.
    if (working.has(rel)) this.dropDir(rel);
    const d = this.ensureDir(parent);
    const entry = st.isFile() || st.isSymbolicLink() ? await this.entryFor(dir, rel, name, entryStat(st), d.files.get(name), force) : this.skip(rel, "not-regular");
    if (entry) {
      if (!sameEntry(d.files.get(name), entry)) {
        d.files.set(name, entry);
        d.hash = undefined;
      }
    } else if (d.files.delete(name)) d.hash = undefined;
    // New parents change their own parents' listing only through `dirs`: no tree edit needed.
  }

  /** Full pass: stat every file, read only those whose size or mtime moved. */
  private async scan(): Promise<void> {
    this.skipped = new Map();
    this.unverified = false;
    await this.scanTree("", { path: this.dir, root: true });
  }

  /** Opens directory `rel` by walking down from the workspace, never through a link. */
  private async openRel(rel: string): Promise<DirHandle | undefined> {
    const root = await DirHandle.open(this.dir).catch(() => undefined);
    if (rel === "" || !root) return root;
    let dir: DirHandle = root;
    for (const seg of rel.split("/")) {
      const next: DirHandle | undefined = await dir.openDir(seg).catch(() => undefined);
      await dir.close();
      if (!next) return undefined;
      dir = next;
    }
    return dir;
  }

  /**
   * Rebuilds the working entries of `rel` and below from disk: one listing with every entry's
   * `lstat` ({@link listTree}, a worker walking by descriptor), then a read of just the files
   * whose size, mtime or mode moved. `start`: the directory to list (a descriptor path, or the
   * workspace root); undefined: `rel` is not a directory any more.
   */
  private async scanTree(rel: string, start: { path: string; root: boolean } | undefined): Promise<void> {
    const working = this.working!;
    for (const k of [...this.skipped.keys()]) if (isUnder(k, rel) && k !== rel) this.skipped.delete(k);
    const known = new Map<string, string>();
    for (const [k, d] of working) if (d.sig !== undefined && d.hash !== undefined && isUnder(k, rel)) known.set(k, d.sig);
    let files = 0;
    for (const d of working.values()) files += d.size;
    const split = start?.root === true && (files > SPLIT_LISTING_ABOVE || working.size === 0);
    // Streamed: each chunk of the listing is recorded (its files read) while the rest is listed.
    const seen = new Set<string>();
    const recorded: Promise<void>[] = [];
    const onDirs = (dirs: ListedDir[]) => void recorded.push(this.recordDirs(dirs, seen));
    try {
      const listing = start ? await listTree(start.path, rel, [...this.ignore], { followStart: start.root, known, split, onDirs }) : { dirs: [], tooDeep: [] };
      for (const r of listing.tooDeep) this.skip(r, "too-deep");
      onDirs(listing.dirs);
    } finally {
      await settledAll(recorded);
    }
    for (const key of [...working.keys()]) if (isUnder(key, rel) && !seen.has(key)) working.delete(key);
    if (!working.has("")) working.set("", new WorkingDir());
  }

  /**
   * Looks at directory `rel` itself again, not below it (a subdirectory that appeared is scanned,
   * one that went is dropped). True when what the working set records there moved.
   */
  private async relistDir(rel: string): Promise<boolean> {
    const working = this.working!;
    const before = working.get(rel);
    const name = rel.slice(rel.lastIndexOf("/") + 1);
    const parent = rel === "" ? undefined : await this.openRel(parentOf(rel));
    if (rel !== "" && !parent) {
      await this.updatePath(path.join(this.dir, ...rel.split("/")));
      return true;
    }
    let listing: Awaited<ReturnType<typeof listTree>>;
    try {
      const start = parent ? (parent.at(name) as string) : this.dir;
      listing = await listTree(start, rel, [...this.ignore], { followStart: !parent, maxDepth: 0 });
    } finally {
      await parent?.close();
    }
    if (listing.dirs.length === 0) {
      await this.updatePath(path.join(this.dir, ...rel.split("/")));
      return true;
    }
    for (const k of [...this.skipped.keys()]) if (parentOf(k) === rel && k !== rel) this.skipped.delete(k);
    await this.recordListing(listing);
    let moved = working.get(rel) !== before;
    const listed = new Set(listing.dirs[0]!.entries?.filter((e) => e.kind === "directory" && e.name !== undefined).map((e) => childOf(rel, e.name!)));
    for (const sub of listed) {
      if (working.has(sub) || this.policy.excludePath(sub)) continue;
      await this.updatePath(path.join(this.dir, ...sub.split("/")));
      moved = true;
    }
    for (const key of [...working.keys()]) {
      if (key === "" || parentOf(key) !== rel || listed.has(key)) continue;
      this.dropDir(key);
      moved = true;
    }
    return moved;
  }

  /**
   * Brings the working set in line with a listing: directories listed as the caller knew them
   * stay; the others get their entries from the stat cache, reading only files that moved.
   * Returns the directories listed.
   */
  private async recordListing(listing: Awaited<ReturnType<typeof listTree>>): Promise<Set<string>> {
    for (const r of listing.tooDeep) this.skip(r, "too-deep");
    const seen = new Set<string>();
    await this.recordDirs(listing.dirs, seen);
    return seen;
  }

  /** {@link recordListing} of some directories of a listing (added to `seen`). */
  private async recordDirs(dirs: readonly ListedDir[], seen: Set<string>): Promise<void> {
    const working = this.working!;
    const toRead: { rel: string; files: Map<string, SnapshotFile>; pending: ListedEntry[]; sig: string | undefined }[] = [];
    for (const d of dirs) {
      seen.add(d.rel);
      const old = working.get(d.rel);
      const sig = d.sig;
      if (d.entries === undefined && old) continue; // Listed as the caller knew it.
      const skips = this.skipped.size;
      const files = new Map<string, SnapshotFile>();
      const pending: ListedEntry[] = [];
      for (const e of d.entries ?? []) {
        if (e.name === undefined) {
          this.skip(childOf(d.rel, printableBytes(e.raw ?? Buffer.alloc(0))), "not-utf8-name");
          continue;
        }
        const childRel = childOf(d.rel, e.name);
        // Temp files of atomic writes under way (a tool writing while the baseline runs) are not the workspace's.
        if (e.kind === "directory" || this.policy.excludePath(childRel) || isAtomicTempName(e.name)) continue;
        if (e.kind === "other") {
          this.skip(childRel, "not-regular");
          continue;
        }
        const known = old?.files.get(e.name);
        if (known && statMatches(known, e)) files.set(e.name, known);
        else pending.push(e);
      }
      const clean = this.skipped.size === skips ? sig : undefined;
      if (pending.length > 0) toRead.push({ rel: d.rel, files, pending, sig: clean });
      else {
        const same = old !== undefined && old.size === files.size && [...files].every(([n, f]) => sameEntry(old.files.get(n), f));
        const next = same ? old : new WorkingDir(files);
        next.sig = clean;
        working.set(d.rel, next);
      }
    }
    // The files that moved: small regular files in batches through the blob worker (by
    // descriptor), links and large files one by one through their directory held by descriptor.
    const small: { rel: string; files: { name: string; st: EntryStat }[] }[] = [];
    const others: { t: (typeof toRead)[number]; e: ListedEntry }[] = [];
    for (const t of toRead) {
      const files: { name: string; st: EntryStat }[] = [];
      for (const e of t.pending) {
        if (e.kind === "file" && e.size <= STREAM_ABOVE) {
          if (this.admit(childOf(t.rel, e.name!), e)) files.push({ name: e.name!, st: e });
          else t.sig = undefined;
        } else others.push({ t, e });
      }
      small.push({ rel: t.rel, files });
    }
    const read = await this.readSmall(small);
    small.forEach((d, i) => {
      const t = toRead[i]!;
      d.files.forEach(({ name, st }, j) => {
        const entry = read[i]![j];
        if (entry) t.files.set(name, entry);
        // Read as listed, or the next scan must look again.
        if (!entry || entry.s !== st.size || entry.t !== st.mtimeMs) t.sig = undefined;
      });
    });
    // One at a time across the chunks of a listing (large files are streamed).
    await this.oneByOne(async () => {
      for (const { t, e } of others) {
        const dir = await this.openRel(t.rel);
        try {
          const entry = dir ? await this.entryFor(dir, childOf(t.rel, e.name!), e.name!, e, undefined, false) : undefined;
          if (entry) t.files.set(e.name!, entry);
          if (!entry || entry.s !== e.size || entry.t !== e.mtimeMs) t.sig = undefined;
        } finally {
          await dir?.close();
        }
      }
    });
    for (const t of toRead) {
      const next = new WorkingDir(t.files);
      next.sig = t.sig;
      working.set(t.rel, next);
    }
  }

  /**
   * The entry of `name` in the held directory `dir`; re-reads it unless `known` matches its size,
   * mtime and mode (and `force` is off). Reads only through a descriptor verified against `st`.
   */
  private async entryFor(dir: DirHandle, rel: string, name: string, st: EntryStat, known: SnapshotFile | undefined, force: boolean): Promise<SnapshotFile | undefined> {
    // Permission bits only: setuid, setgid and sticky bits are never recorded, so never restored.
    const mode = st.mode & 0o777;
    if (!force && known && statMatches(known, st)) return known;
    if (st.kind === "symlink") {
      return this.linkEntry(dir, name, st);
    }
    if (st.kind !== "file") return this.skip(rel, "not-regular");
    if (!this.admit(rel, st)) return undefined;
    if (st.size <= STREAM_ABOVE) return (await this.readSmall([{ rel: parentOf(rel), files: [{ name, st }] }]))[0]![0];
    let opened: Awaited<ReturnType<DirHandle["openFile"]>>;
    try {
      opened = await dir.openFile(name, st);
    } catch (err) {
      return this.skip(rel, err instanceof EntryChangedError ? "changed-while-read" : "unreadable", st.size);
    }
    if (!opened) return undefined;
    const { fh, stats } = opened;
    try {
      // The size read is the descriptor's: a file that grows meanwhile is caught by its mtime next time.
      const size = Math.min(stats.size, st.size);
      return { h: await this.putStream(fh, size), s: size, m: mode, t: stats.mtimeMs };
    } catch {
      return this.skip(rel, "unreadable", st.size);
    } finally {
      await fh.close().catch(() => undefined);
    }
  }

  /** The entry of the symlink `name` in `dir`: its target's bytes as a blob, never what it points to. */
  private async linkEntry(dir: DirHandle, name: string, st: EntryStat): Promise<SnapshotFile | undefined> {
    const target = await readlink(dir.at(name), { encoding: "buffer" }).catch(() => undefined);
    if (target === undefined) return undefined;
    return { h: await this.putBuffer(target), s: st.size, m: st.mode & 0o777, t: st.mtimeMs, l: 1 };
  }

  /** Whether a regular file may be read now (the caps; the budget is spent here). Skips it otherwise. */
  private admit(rel: string, st: EntryStat): boolean {
    if (isSparse(st)) return this.skip(rel, "sparse", st.size) ?? false;
    if (st.size > this.maxFileBytes) return this.skip(rel, "too-large", st.size) ?? false;
    if (st.size > this.budget) return this.skip(rel, "snapshot-budget", st.size) ?? false;
    this.budget -= st.size;
    return true;
  }

  private get layout(): BlobLayout {
    return this.objects.layout;
  }

  /**
   * Reads admitted regular files of at most {@link STREAM_ABOVE} bytes, by descriptor, into the
   * store (the blob worker); per directory, per file: the entry, or undefined (skipped or gone).
   */
  private async readSmall(dirs: { rel: string; files: { name: string; st: EntryStat }[] }[]): Promise<(SnapshotFile | undefined)[][]> {
    // Bounded batches (messages, and the bytes a reader holds: a large directory is cut in
    // pieces), read by whichever reader is free.
    type Piece = { d: number; from: number; rel: string; files: { name: string; st: EntryStat }[] };
    const batches: Piece[][] = [];
    let batch: Piece[] = [];
    let n = 0;
    let bytes = 0;
    dirs.forEach((dir, d) => {
      let from = 0;
      for (let i = 0; i < dir.files.length; i++) {
        if (n > 0 && (n >= READ_BATCH || bytes + dir.files[i]!.st.size > READ_BATCH_BYTES)) {
          if (i > from) batch.push({ d, from, rel: dir.rel, files: dir.files.slice(from, i) });
          batches.push(batch);
          batch = [];
          n = bytes = 0;
          from = i;
        }
        n++;
        bytes += dir.files[i]!.st.size;
      }
      if (dir.files.length > from) batch.push({ d, from, rel: dir.rel, files: from === 0 ? dir.files : dir.files.slice(from) });
    });
    if (batch.length > 0) batches.push(batch);
    const out: (SnapshotFile | undefined)[][] = dirs.map(() => []);
    await settledAll(
      batches.map(async (pieces) => {
        const read = await readFilesIntoStore(
          this.dir,
          pieces.map((p) => {
            const stats = new Float64Array(3 * p.files.length);
            p.files.forEach(({ st }, i) => ((stats[3 * i] = st.ino), (stats[3 * i + 1] = st.dev), (stats[3 * i + 2] = st.size)));
            return { rel: p.rel, names: p.files.map((f) => f.name), stats };
          }),
          this.layout,
        );
        let k = 0;
        for (const p of pieces) {
          p.files.forEach(({ name, st }, i) => {
            const r = readResultAt(read, k++);
            let entry: SnapshotFile | undefined;
            if (r === "gone") entry = undefined;
            else if (typeof r === "string") entry = this.skip(childOf(p.rel, name), r, st.size);
            else {
              this.rememberBlob(r[0]);
              entry = { h: r[0], s: r[1], m: st.mode & 0o777, t: r[2] };
            }
            out[p.d]![p.from + i] = entry;
          });
        }
      }),
    );
    return out;
  }


  /** Stores small content (link targets) through the blob worker, the one writer of small blobs. */
  private putBuffer(data: Buffer): Promise<string> {
    return this.objects.putBuffer(data);
  }

  /** Large files: streamed into a loose compressed blob while hashing (objects.ts). */
  private putStream(fh: FileHandle, size: number): Promise<string> {
    return this.objects.putStream(fh, size);
  }

  private rememberBlob(h: string): void {
    this.objects.remember(h);
  }

  private async mkdirOnce(dir: string): Promise<void> {
    if (this.madeDirs.has(dir)) return;
    await mkdir(dir, { recursive: true });
    this.madeDirs.add(dir);
  }

  /** Atomic write: temporary file + rename, so a reader never sees half an object. */
  private async writeObject(p: string, data: string | Buffer): Promise<void> {
    if (await exists(p)) return;
    await this.writeAtomic(p, data);
  }

  private async writeAtomic(p: string, data: string | Buffer): Promise<void> {
    await this.mkdirOnce(path.dirname(p));
    const tmp = `${p}.tmp-${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, data, { mode: 0o600 });
    await rename(tmp, p);
  }

  // ---- records ---------------------------------------------------------------------------

  private async readRecord(id: string): Promise<SnapshotRecord | undefined> {
    if (!/^[0-9a-f]{24}$/.test(id)) return undefined;
    let stored: SnapshotRecord | StoredRecordV3;
    try {
      stored = JSON.parse(await readFile(path.join(this.snaps, `${id}.json`), "utf8")) as SnapshotRecord | StoredRecordV3;
    } catch {
      return undefined;
    }
    if (!("root" in stored)) return stored;
    const { root, ...info } = stored;
    const dirs: Record<string, string> = {};
    const chunks: string[] = [];
    try {
      await this.expandChunk(root, dirs, chunks);
    } catch {
      return undefined; // A chunk is missing: the record is unreadable, like a missing record.
    }
    return { ...info, dirs, chunks };
  }

  /** Adds the directories of chunk `hash` (and its sub-chunks) to `dirs`. */
  private async expandChunk(hash: string, dirs: Record<string, string>, seen: string[]): Promise<void> {
    if (!/^c[0-9a-f]{40}$/.test(hash)) throw new Error(`bad chunk name ${hash}`);
    seen.push(hash);
    let chunk = this.chunkCache.get(hash);
    if (chunk) {
      this.chunkCache.delete(hash);
    } else chunk = JSON.parse(await readFile(path.join(this.trees, hash), "utf8")) as DirChunk;
    this.chunkCache.set(hash, chunk);
    if (this.chunkCache.size > 4096) this.chunkCache.delete(this.chunkCache.keys().next().value as string);
    Object.assign(dirs, chunk.d);
    for (const sub of Object.values(chunk.c ?? {})) await this.expandChunk(sub, dirs, seen);
  }

  private rememberChunk(h: string): void {
    this.knownChunks.add(h);
    if (this.knownChunks.size > 16384) this.knownChunks.delete(this.knownChunks.values().next().value as string);
  }

  private async allRecords(): Promise<SnapshotRecord[]> {
    let names: string[];
    try {
      names = await readdir(this.snaps);
    } catch {
      return [];
    }
    const records = await Promise.all(names.filter((n) => n.endsWith(".json")).map((n) => this.readRecord(n.slice(0, -5))));
    return records.filter((r): r is SnapshotRecord => r !== undefined).sort((a, b) => b.createdAt - a.createdAt);
  }

  private async readTree(hash: string): Promise<Map<string, SnapshotFile>> {
    return parseTree(await readFile(path.join(this.trees, hash), "utf8"));
  }

  /** The trees of `record` (only the directories `only` names, when given). */
  private async loadDirs(record: SnapshotRecord, only?: ReadonlySet<string>): Promise<Map<string, Map<string, SnapshotFile>>> {
    const out = new Map<string, Map<string, SnapshotFile>>();
    const cache = new Map<string, Promise<Map<string, SnapshotFile>>>();
    const limit = pLimit(16);
    await Promise.all(
      Object.entries(record.dirs)
        .filter(([rel]) => !only || only.has(rel))
        .map(([rel, h]) =>
          limit(async () => {
            if (!cache.has(h)) cache.set(h, this.readTree(h));
            out.set(rel, await cache.get(h)!);
          }),
        ),
    );
    return out;
  }

  private async workingFrom(id: string): Promise<Map<string, WorkingDir>> {
    const record = await this.readRecord(id);
    if (!record) return new Map();
    const cache = await this.readWorkingCache();
    const working = new Map<string, WorkingDir>();
    if (cache) {
      // Tree texts kept packed, with the listing digests of the last scan: the first scan of a
      // new process unpacks only the directories whose listing moved.
      const limit = pLimit(16);
      await Promise.all(
        Object.entries(record.dirs).map(([rel, h]) =>
          limit(async () => {
            const c = cache[rel];
            const text = await readFile(path.join(this.trees, h), "utf8");
            working.set(rel, c && c[0] === h ? WorkingDir.packed(text, h, c[2], c[3], c[1] || undefined) : new WorkingDir(parseTree(text), h));
          }),
        ),
      );
      return working;
    }
    const dirs = await this.loadDirs(record);
    for (const [rel, files] of dirs) working.set(rel, new WorkingDir(new Map(files), record.dirs[rel]));
    return working;
  }

  private get workingCachePath(): string {
    return path.join(this.storeDir, "working.json");
  }

  /** The working-set cache: relative dir → [tree hash, listing digest, entries, bytes]. */
  private async readWorkingCache(): Promise<Record<string, [string, string, number, number]> | undefined> {
    try {
      const cache = JSON.parse(await readFile(this.workingCachePath, "utf8")) as { v: 1; head: string; dirs: Record<string, [string, string, number, number]> };
      // Valid per directory: an entry is used only where its tree hash is the snapshot's (the
      // content it describes), whichever snapshot the cache was written at.
      return cache.v === 1 ? cache.dirs : undefined;
    } catch {
      return undefined;
    }
  }

  /** After a full scan: what a new process needs to start from `id` without parsing every tree. */
  private async writeWorkingCache(id: string): Promise<void> {
    const dirs: Record<string, [string, string, number, number]> = {};
    for (const [rel, d] of this.working!) if (d.hash !== undefined && d.bytes !== undefined) dirs[rel] = [d.hash, d.sig ?? "", d.size, d.bytes];
    const text = JSON.stringify({ v: 1, head: id, dirs });
    if (text === this.cacheText) return;
    await this.writeAtomic(this.workingCachePath, text);
    this.cacheText = text;
  }

  /** Loads the working set now (a run start does this while it waits for the watcher). */
  warm(): Promise<void> {
    return this.serial(async () => {
      if (!this.working) await this.loadWorking(await this.loadHead());
    });
  }

  /** The working set as snapshot `head` recorded it, to be verified by the next full scan. */
  private async loadWorking(head: Head | undefined): Promise<void> {
    this.working = head ? await this.workingFrom(head.id) : new Map();
    this.unverified = true;
  }

  private async loadHead(): Promise<Head | undefined> {
    const p = path.join(this.storeDir, "HEAD.json");
    // Stat before reading: a write racing the pair leaves a stamp older than the text, read again next time.
    const stamp = await headStampOf(p);
    if (this.headLoaded && stamp === this.headStamp) return this.head;
    const moved = this.headLoaded;
    try {
      this.head = JSON.parse(await readFile(p, "utf8")) as Head;
      this.baselineCommitted = true;
    } catch {
      this.head = undefined;
    }
    this.headLoaded = true;
    this.headStamp = stamp;
    // Another process moved the head: the working set this one holds describes an older snapshot.
    if (moved && this.working) await this.loadWorking(this.head);
    return this.head;
  }

  private async saveHead(head: Head): Promise<void> {
    await this.mkdirOnce(this.storeDir);
    const p = path.join(this.storeDir, "HEAD.json");
    const tmp = `${p}.tmp-${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, JSON.stringify(head), { mode: 0o600 });
    // A rename keeps inode and mtime: the temp file's stamp is the head's.
    const stamp = await headStampOf(tmp);
    await rename(tmp, p);
    this.head = head;
    this.headLoaded = true;
    this.headStamp = stamp;
  }

  // ---- restore ---------------------------------------------------------------------------

  private get journal(): RestoreJournalFile {
    return (this.journalFile ??= new RestoreJournalFile(this.storeDir));
  }

  /**
   * Rewrites the workspace (whose working set a scan just brought up to date) into `target`,
   * in place and only where it differs; sets the head. Returns the paths kept as they were.
   */
  private async applyRecord(target: SnapshotRecord): Promise<string[]> {
    const working = this.working!;
    const differs = (rel: string) => working.get(rel)?.hash !== target.dirs[rel];
    const visit = dirsToVisit(working.keys(), Object.keys(target.dirs), differs);
    const trees = await this.loadDirs(target, visit);
    return this.applyTarget({ v: 2, target: target.id }, new Set(Object.keys(target.dirs)), visit, trees, target.dirs);
  }

  /**
   * The target of a per-path restore: the files as they are, with `rels` (files, or directories
   * with everything below) replaced by what `record` has there (nothing, where it has nothing).
   */
  private async pathsTarget(record: SnapshotRecord, rels: readonly string[]): Promise<{ keys: Set<string>; visit: Set<string>; trees: Map<string, Map<string, SnapshotFile>> }> {
    const working = this.working!;
    const keys = new Set(working.keys());
    const trees = new Map<string, Map<string, SnapshotFile>>();
    const treeOf = (rel: string) => {
      let t = trees.get(rel);
      if (!t) trees.set(rel, (t = new Map(working.get(rel)?.files ?? [])));
      return t;
    };
    for (const rel of rels) {
      const parent = parentOf(rel);
      const name = rel.slice(parent === "" ? 0 : parent.length + 1);
      const entry = record.dirs[parent] !== undefined ? (await this.readTree(record.dirs[parent]!)).get(name) : undefined;
      const isDir = rel in record.dirs;
      // What is there now goes (a file, or a directory and everything below)...
      if (keys.has(parent)) treeOf(parent).delete(name);
      for (const k of [...keys]) {
        if (!isUnder(k, rel)) continue;
        keys.delete(k);
        trees.delete(k);
      }
      if (!entry && !isDir) continue;
      // ...and what the snapshot has there comes back, with the directories above it.
      for (let r = parent; !keys.has(r); r = parentOf(r)) {
        keys.add(r);
        treeOf(r);
      }
      if (entry) treeOf(parent).set(name, entry);
      for (const [k, h] of Object.entries(record.dirs)) {
        if (!isUnder(k, rel)) continue;
        keys.add(k);
        trees.set(k, await this.readTree(h));
      }
    }
    const visit = dirsToVisit(working.keys(), keys, (rel) => trees.has(rel));
    return { keys, visit, trees };
  }

  /**
   * Rewrites the workspace (whose working set a scan just brought up to date) into the target —
   * directories `keys`, the entries of the visited ones in `trees` (the others as they are), their
   * tree hashes when it is a stored snapshot — in place and only where it differs, journaled;
   * sets the head. Returns the paths kept as they were.
   */
  private async applyTarget(
    journal: Journal,
    keys: ReadonlySet<string>,
    visit: ReadonlySet<string>,
    trees: ReadonlyMap<string, ReadonlyMap<string, SnapshotFile>>,
    hashes: Record<string, string> | undefined,
  ): Promise<string[]> {
    const working = this.working!;
    const current: TreeMap = { keys: () => working.keys(), get: (rel) => working.get(rel)?.files, has: (rel) => working.has(rel) };
    const wanted: TreeMap = { keys: () => keys.values(), get: (rel) => trees.get(rel) ?? working.get(rel)?.files, has: (rel) => keys.has(rel) };
    await this.mkdirOnce(this.storeDir);
    await this.journal.write(journal);
    const root = await DirHandle.open(this.dir);
    let result: Awaited<ReturnType<typeof applyInPlace>>;
    try {
      result = await applyInPlace(root, current, wanted, visit, {
        put: (dir, name, entry, replace) => this.putEntry(dir, name, entry, replace),
        putAll: (dir, _rel, items) => this.putEntries(dir, items),
      });
    } catch (error) {
      // Left half-way (a permission error, the disk full): the working set follows the disk again.
      await root.close();
      this.working = undefined;
      await this.journal.clear();
      throw error;
    }
    await root.close();
    for (const rel of [...working.keys()]) if (!keys.has(rel)) working.delete(rel);
    for (const rel of result.visited) {
      const tree = trees.get(rel);
      if (!tree) continue;
      const before = working.get(rel)?.files;
      const files = new Map(tree);
      // Untouched files keep the mtimes they have on disk (the stat cache stays exact).
      if (before) for (const [n, f] of files) if (sameContent(before.get(n), f)) files.set(n, before.get(n)!);
      const d = new WorkingDir(files, hashes?.[rel]);
      if (hashes) d.pack();
      working.set(rel, d);
    }
    const head = (await this.loadHead())!;
    let id = journal.target;
    if (result.kept.length > 0 || !hashes) {
      this.budget = this.maxSnapshotBytes;
      for (const rel of result.kept) await this.updatePath(path.join(this.dir, ...rel.split("/")));
      id = await this.commit(head.id, hashes ? "restore-kept" : "restore-paths");
    }
    await this.saveHead({ ...head, id });
    await this.journal.clear();
    return result.kept;
  }

  /**
   * Writes entries of one directory of a restore: small regular files in one batch through the
   * blob worker (synchronous writes off the event loop), links and large files one by one.
   */
  private async putEntries(dir: DirHandle, items: { name: string; entry: SnapshotFile; replace: boolean }[]): Promise<("ok" | "kept")[]> {
    const results: ("ok" | "kept")[] = new Array(items.length).fill("ok");
    const batch: number[] = [];
    items.forEach((item, i) => {
      if (!item.entry.l && item.entry.s <= STREAM_ABOVE) batch.push(i);
    });
    if (batch.length > 0) {
      const put = await this.objects.putEntries(
        dir.via,
        batch.map((i) => ({ name: items[i]!.name, h: items[i]!.entry.h, m: items[i]!.entry.m, t: items[i]!.entry.t, replace: items[i]!.replace })),
      );
      batch.forEach((i, j) => (results[i] = put[j] ?? "ok"));
    }
    const single = new Set(batch);
    await Promise.all(
      items.map((item, i) =>
        single.has(i)
          ? undefined
          : this.io(async () => {
              try {
                await this.putEntry(dir, item.name, item.entry, item.replace);
              } catch (err) {
                const code = (err as NodeJS.ErrnoException).code;
                if (code === "EISDIR" || code === "ENOTEMPTY" || code === "EEXIST") results[i] = "kept";
                else throw err;
              }
            }),
      ),
    );
    return results;
  }

  /** Writes one entry of a restore from the store: a temporary copy, then rename (or link) in place. */
  private async putEntry(dir: DirHandle, name: string, f: SnapshotFile, replace: boolean): Promise<void> {
    const tmp = path.join(this.storeDir, `restore-tmp-${randomBytes(6).toString("hex")}`);
    try {
      if (f.l) await symlink(await this.readBlob(f.h), tmp);
      else {
        await this.extractBlob(f, tmp);
        await chmod(tmp, f.m & 0o777);
        await utimes(tmp, f.t / 1000, f.t / 1000);
      }
      // `rename` replaces what is at the name (never following a link there); `link` takes a free name only.
      if (replace) await rename(tmp, dir.at(name));
      else await link(tmp, dir.at(name));
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Writes the raw content of `f`'s blob to the new file `tmp` (decompressing; streamed when large). */
  private extractBlob(f: SnapshotFile, tmp: string): Promise<void> {
    return this.objects.extractTo(f.h, f.s, tmp, STREAM_ABOVE);
  }

  /**
   * Finishes a restore a crash interrupted: the files are scanned again (the state before the
   * restore was recorded first) and the target applied over whatever part was done. A 0.1.x
   * journal (a staged copy) is finished or undone as that version did.
   */
  private async recover(): Promise<void> {
    if (this.recovered) return;
    this.recovered = true;
    const journal = await this.journal.read();
    if (journal?.staging) await settleLegacySwap(journal, this.journal, this.dir, async (target) => this.saveHead({ ...(await this.loadHead()), id: target }));
    else if (journal) {
      const target = await this.readRecord(journal.target);
      const head = await this.loadHead();
      this.working = head ? await this.workingFrom(head.id) : new Map();
      this.budget = this.maxSnapshotBytes;
      await this.scan();
      await this.commit(head?.id, "before-restore");
      if (target && journal.paths) await this.applyPaths(target, journal.paths);
      else if (target) await this.applyRecord(target);
      await this.journal.clear();
    }
    await this.journal.removeLeftovers();
  }

  // ---- retention -------------------------------------------------------------------------

  private async pruneNow(): Promise<{ removed: string[] }> {
    const removed = await pruneStore({
      head: (await this.loadHead())?.id,
      records: await this.allRecords(),
      retention: this.retention,
      readTree: (h) => this.readTree(h),
      objects: this.objects,
      removeRecord: (id) => rm(path.join(this.snaps, `${id}.json`), { force: true }),
      dirs: { trees: this.trees },
    });
    if (removed.length > 0) this.knownChunks.clear();
    return { removed };
  }
}

function sameEntry(a: SnapshotFile | undefined, b: SnapshotFile): boolean {
  return a !== undefined && a.h === b.h && a.s === b.s && a.m === b.m && a.t === b.t && Boolean(a.l) === Boolean(b.l);
}

/** Like Promise.all, but rejects only once every promise settled (no work left running behind a failure). */
async function settledAll<T>(promises: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}


/** HEAD.json's identity, to notice another process's write (undefined when there is none). */
async function headStampOf(p: string): Promise<string | undefined> {
  try {
    const s = await stat(p, { bigint: true });
    return `${s.ino}:${s.mtimeNs}:${s.size}`;
  } catch {
    return undefined;
  }
}
