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
 *
 * The store is a façade over one module per job, all run through its one queue: the working set
 * (workingIndex.ts), the looks at the workspace (workspaceScan.ts), records and trees
 * (snapshotRecords.ts), blobs (objects.ts), the head (head.ts), the restore's rewrite
 * (restoreApply.ts) and journal (restoreJournal.ts), and retention (retention.ts). On-disk
 * layout: docs/snapshot-format.md.
 */
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { DirHandle } from "../environment/dirHandle.js";
import { RestoreJournalFile, settleLegacySwap, type RestoreJournal } from "./restoreJournal.js";
import { ObjectStore } from "./objects.js";
import { dirsToVisit } from "./applyInPlace.js";
import { WorkbenchError } from "../workbenchError.js";
import { childOf, type SkippedEntry, type SnapshotFile, type SnapshotInfo, type SnapshotRecord } from "./format.js";
import { pruneStore, type RetentionPolicy } from "./retention.js";
import { HeadFile, type SnapshotHead } from "./head.js";
import { StoreFiles } from "./storeFiles.js";
import { SnapshotRecords } from "./snapshotRecords.js";
import { WorkingIndex } from "./workingIndex.js";
import type { WorkingDir } from "./workingDir.js";
import { WorkspaceScan } from "./workspaceScan.js";
import { adoptTarget, pathsTarget, recordTarget, RestoreWriter, type RestoreTarget } from "./restoreApply.js";

export type { RetentionPolicy } from "./retention.js";
export type { SnapshotHead } from "./head.js";
export { MAX_LISTED_SKIPS } from "./snapshotRecords.js";
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

type Head = SnapshotHead;

type Journal = RestoreJournal;

/** What a restore did. */
export interface RestoreResult {
  restored: string;
  /** The snapshot of the files just before (recorded first, so nothing is lost). */
  previous: string;
  /** Paths the snapshot's entries could not take: an entry it does not record holds the name. */
  kept?: string[];
  /** The restored snapshot's {@link SnapshotInfo.changedWhileTaken}: what it may not have brought back exactly. */
  changedWhileTaken?: string[];
}

/** A restore lists at most this many directories one by one before it takes one full look instead. */
const MAX_VERIFIED_DIRS = 200;

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
  /** A {@link pendingSnapshotId} a checkpoint already names: `resolve(alias)` answers this snapshot's id. */
  alias?: string;
}

/**
 * The store of one workspace directory. Every operation runs through one queue per store, so
 * snapshots and restores of a thread never interleave.
 */
export class SnapshotStore {
  /** Blobs, loose and packed (objects.ts). */
  private readonly objects: ObjectStore;
  private readonly files = new StoreFiles();
  /** Records, trees and directory-map chunks (snapshotRecords.ts). */
  private readonly records: SnapshotRecords;
  /** The working set and what it skipped (workingIndex.ts). */
  private readonly index: WorkingIndex;
  /** The looks at the workspace (workspaceScan.ts). */
  private readonly scanner: WorkspaceScan;
  private readonly writer: RestoreWriter;
  private readonly headFile: HeadFile;
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
  private queue: Promise<unknown> = Promise.resolve();
  private recovered = false;
  private journalFile: RestoreJournalFile | undefined;
  private sinceGc = 0;

  constructor(
    /** The workspace directory. */
    readonly dir: string,
    /** The store directory (outside the workspace). */
    readonly storeDir: string,
    policy: SnapshotPolicy,
    private readonly retention: RetentionPolicy,
  ) {
    this.objects = new ObjectStore(storeDir);
    this.records = new SnapshotRecords(storeDir, this.files);
    this.index = new WorkingIndex(storeDir, this.records, this.files);
    const caps = { maxFileBytes: policy.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, maxSnapshotBytes: policy.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES };
    this.scanner = new WorkspaceScan(dir, policy, caps, this.objects, this.index);
    this.writer = new RestoreWriter(storeDir, this.objects);
    this.headFile = new HeadFile(storeDir, this.files);
  }

  /** The working set (workingIndex.ts); undefined until loaded. */
  private get working(): Map<string, WorkingDir> | undefined {
    return this.index.working;
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
    return this.recovered ? this.headFile.peek() : undefined;
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
      const id = await this.snapshotNow(options.paths, options.reason ?? (options.paths ? "tool" : "scan"), options.assign, options.statCache, background).catch((error: unknown) => {
        if (background) this.openLook(false);
        throw error;
      });
      if (options.alias !== undefined) await this.nameAlias(options.alias, id);
      return id;
    });
  }

  /**
   * Reads `paths` (absolute, inside the workspace: files or links) now, without waiting for the
   * queue, through directories held by descriptor: relative path → entry, or null where nothing
   * is (at the top-most missing component). Undefined when one of them is a directory, a large or
   * odd file, or unreadable: the caller then waits for the queue instead.
   */
  capture(paths: readonly string[]): Promise<Map<string, SnapshotFile | null> | undefined> {
    return this.scanner.capture(paths);
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
   * A tool whose changes are unknown (a command) starts at `at` (wall-clock ms) while the
   * background look is open, and will not wait for it: from now until `flagChangesFrom(undefined)`
   * every snapshot committed names what the look found changed since (by ctime) in
   * `changedWhileTaken`. False (nothing done) when no background look is open: wait for it instead.
   */
  flagChangesFrom(at: number | undefined): boolean {
    if (at !== undefined && !this.lookOpen) return false;
    this.scanner.flagFrom(at);
    return true;
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
        for (const [rel, entry] of captured) this.index.setEntry(rel, entry);
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
    await this.files.mkdirOnce(path.join(this.storeDir, "pending"));
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
      const records = await this.records.allRecords();
      return records.map(({ id, parent, createdAt, files, bytes, reason, skipped, skippedCount, changedWhileTaken, changedWhileTakenCount }) => ({
        id,
        ...(parent ? { parent } : {}),
        createdAt,
        files,
        bytes,
        ...(reason ? { reason } : {}),
        ...(skippedCount ? { skipped, skippedCount } : {}),
        ...(changedWhileTakenCount ? { changedWhileTaken, changedWhileTakenCount } : {}),
      }));
    });
  }

  /** True when the store holds `id`. */
  has(id: string): Promise<boolean> {
    return this.serial(async () => (await this.records.readRecord(id)) !== undefined);
  }

  /**
   * Brings the workspace to snapshot `id`: records the current state first (so nothing is lost),
   * then rewrites in place what differs. Entries the snapshots do not record (credential files,
   * ignored folders, skipped files) stay as they are.
   */
  restore(id: string, options: { pin?: boolean; changed?: readonly string[] } = {}): Promise<RestoreResult> {
    return this.serial(async () => {
      const target = await this.records.readRecord(id);
      if (!target) throw new SnapshotNotFoundError(id);
      // Reads the head first: if another process moved it, the working set is reloaded (unverified).
      await this.loadHead();
      const previous = options.changed && this.working && !this.index.unverified ? await this.recordBeforeRestore(target, options.changed) : await this.snapshotNow(undefined, "before-restore");
      const kept = previous === id ? [] : await this.applyRecord(target);
      const h = (await this.loadHead())!;
      await this.saveHead(options.pin ? { ...h, pinned: true } : { ...h, assigned: id, pinned: undefined });
      return { restored: id, previous, ...(kept.length > 0 ? { kept } : {}), ...(target.changedWhileTaken ? { changedWhileTaken: target.changedWhileTaken } : {}) };
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
      const target = await this.records.readRecord(id);
      if (!target) throw new SnapshotNotFoundError(id);
      const previous = await this.snapshotNow(undefined, "before-restore");
      const kept = await this.applyPaths(target, rels);
      const h = (await this.loadHead())!;
      await this.saveHead({ ...h, pinned: true });
      return { restored: h.id, previous, ...(kept.length > 0 ? { kept } : {}) };
    });
  }

  private async applyPaths(target: SnapshotRecord, rels: readonly string[]): Promise<string[]> {
    return this.applyTarget({ v: 2, target: target.id, paths: [...rels] }, await pathsTarget(this.working!, target, rels, this.records));
  }

  /**
   * The state before a restore, without a full look: `changed` (what a live watcher listed since
   * the last full look) is re-read, then every directory the restore will touch or remove is
   * listed directly, until none of them moved — so nothing the restore overwrites or deletes
   * goes unrecorded, whatever the watcher missed. Entries elsewhere are not touched by it.
   */
  private async recordBeforeRestore(target: SnapshotRecord, changed: readonly string[]): Promise<string> {
    const head = await this.loadHead();
    this.scanner.resetBudget();
    for (const p of changed) await this.scanner.updatePath(p, false);
    const verified = new Set<string>();
    for (let round = 0; ; round++) {
      const working = this.working!;
      const visit = dirsToVisit(working.keys(), Object.keys(target.dirs), (rel) => working.get(rel)?.hash !== target.dirs[rel]);
      for (const rel of working.keys()) if (!(rel in target.dirs)) visit.add(rel);
      const todo = [...visit].filter((r) => !verified.has(r) && working.has(r));
      if (todo.length === 0) break;
      if (round >= 4 || verified.size + todo.length > MAX_VERIFIED_DIRS) {
        await this.scanner.scan(); // Much moved: one full look is cheaper.
        break;
      }
      for (const rel of todo) verified.add(rel);
      await this.scanner.relistDirs(todo);
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
      if (!this.working && head) await this.index.load(head.id);
      return this.index.entries();
    });
  }

  /**
   * Entries a source other than this store's own look saw but could not record (a remote
   * listing's FIFOs, sparse or over-cap files): listed in the next snapshots' `skipped` beside the
   * store's own. Replaces the previous set; `only` (relative paths) replaces just what is below those.
   */
  noteSkipped(entries: readonly SkippedEntry[], only?: readonly string[]): void {
    this.index.noteSkipped(entries, only);
  }

  /** The files of a snapshot: relative path → entry (directories as `dirs`). */
  manifest(id: string): Promise<{ files: Map<string, SnapshotFile>; dirs: string[] }> {
    return this.serial(async () => {
      const record = await this.records.readRecord(id);
      if (!record) throw new SnapshotNotFoundError(id);
      const loaded = await this.records.loadDirs(record);
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
    total += await this.records.storedBytes();
    return total;
  }

  /** Applies the retention policy now (also done every few snapshots). */
  prune(): Promise<{ removed: string[] }> {
    return this.serial(() => this.pruneNow());
  }

  // ---- snapshots -------------------------------------------------------------------------

  private async snapshotNow(paths: readonly string[] | undefined, reason: string, assign = false, statCache = false, background = false): Promise<string> {
    const head = await this.loadHead();
    this.scanner.resetBudget();
    // Cold start (the working set as the head recorded it): what changed since is unknown.
    const cold = !this.working;
    const full = !paths || cold || this.index.unverified;
    if (cold) await this.scanner.scanCold(head?.id);
    else if (full) await this.scanner.scan();
    else for (const p of paths!) await this.scanner.updatePath(p, !statCache);
    if (!head || background) {
      for (const [rel, entry] of this.baselineOverrides) this.index.setEntry(rel, entry);
      this.baselineOverrides.clear();
      this.baselineCommitted = true;
      this.lookOpen = false;
    }
    const id = await this.commit(head?.id, reason);
    if (full) await this.index.writeWorkingCache(id);
    const assigned = assign ? { assigned: id, pinned: undefined } : {};
    if (!head) await this.saveHead({ id, baseline: id, ...assigned });
    else if (id !== head.id || (assign && (head.assigned !== id || head.pinned))) await this.saveHead({ ...head, id, ...assigned });
    // Retention: the count is checked every 25 snapshots (one readdir); age and bytes, which read
    // every record and tree, every 200.
    if (++this.sinceGc % 25 === 0) {
      const count = await this.records.count();
      if (count > this.retention.maxSnapshots || this.sinceGc >= 200) {
        this.sinceGc = 0;
        await this.pruneNow();
      }
    }
    return id;
  }

  /** Writes dirty trees and the record; the id is the hash of the directory map. */
  private commit(parent: string | undefined, reason: string): Promise<string> {
    return this.records.commit(this.working!, parent, reason, () => this.index.allSkips(), [...this.scanner.changedWhileTaken].sort());
  }

  /**
   * Whether the files are still what the working set records, by one listing's directory digests
   * (names, kinds, sizes, mtimes and modes, as a full look compares them): nothing read, nothing
   * committed, and other operations go on meanwhile (only the digests are taken in turn). False
   * when the working set is not verified against the disk, or a directory has no digest (it holds
   * an entry a look skipped).
   */
  async matchesDisk(): Promise<boolean> {
    const known = await this.serial(async () => (this.working && !this.index.unverified ? this.scanner.digests() : undefined));
    return known ? this.scanner.listsAsKnown(known) : false;
  }

  /**
   * Reads the head ahead of the next full look (a run start does this while it may wait for the
   * watcher) and answers how many files it records, when known: from the working set, or its
   * cache when cold (the first full look loads the working set while it lists).
   */
  warm(): Promise<number | undefined> {
    return this.serial(async () => ((await this.loadHead()) || this.working ? this.index.fileCount() : undefined));
  }

  private async loadHead(): Promise<Head | undefined> {
    const { head, parsed, moved } = await this.headFile.load();
    if (parsed) this.baselineCommitted = true;
    // Another process moved the head: the working set this one holds describes an older snapshot.
    if (moved && this.working) await this.index.load(head?.id);
    return head;
  }

  private saveHead(head: Head): Promise<void> {
    return this.headFile.save(head);
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
    return this.applyTarget({ v: 2, target: target.id }, await recordTarget(this.working!, target, this.records));
  }

  /**
   * Rewrites the workspace (whose working set a scan just brought up to date) into the target —
   * directories `keys`, the entries of the visited ones in `trees` (the others as they are), their
   * tree hashes when it is a stored snapshot — in place and only where it differs, journaled;
   * sets the head. Returns the paths kept as they were.
   */
  private async applyTarget(journal: Journal, target: RestoreTarget): Promise<string[]> {
    const working = this.working!;
    await this.files.mkdirOnce(this.storeDir);
    await this.journal.write(journal);
    const root = await DirHandle.open(this.dir);
    let result: Awaited<ReturnType<RestoreWriter["apply"]>>;
    try {
      result = await this.writer.apply(root, working, target);
    } catch (error) {
      // Left half-way (a permission error, the disk full): the working set follows the disk again.
      await root.close();
      this.index.working = undefined;
      await this.journal.clear();
      throw error;
    }
    await root.close();
    adoptTarget(working, target, result.visited);
    const hashes = target.hashes;
    const head = (await this.loadHead())!;
    let id = journal.target;
    if (result.kept.length > 0 || !hashes) {
      this.scanner.resetBudget();
      for (const rel of result.kept) await this.scanner.updatePath(path.join(this.dir, ...rel.split("/")));
      id = await this.commit(head.id, hashes ? "restore-kept" : "restore-paths");
    }
    await this.saveHead({ ...head, id });
    await this.journal.clear();
    return result.kept;
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
      const target = await this.records.readRecord(journal.target);
      const head = await this.loadHead();
      this.index.working = head ? await this.index.workingFrom(head.id) : new Map();
      this.scanner.resetBudget();
      await this.scanner.scan();
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
      records: await this.records.allRecords(),
      retention: this.retention,
      readTree: (h) => this.records.readTree(h),
      objects: this.objects,
      removeRecord: (id) => this.records.removeRecord(id),
      dirs: { trees: this.records.trees },
    });
    if (removed.length > 0) this.records.forgetChunks();
    return { removed };
  }
}
