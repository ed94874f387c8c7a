/**
 * The working set of a snapshot store: per directory ("" is the root), the entries the last look
 * found ({@link WorkingDir}), what it saw but did not record, and the working-set cache on disk
 * (`working.json`: docs/snapshot-format.md) from which a new process starts without parsing
 * every tree. The next snapshot is committed from it.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { childOf, isUnder, parentOf, parseTree, type SkippedEntry, type SnapshotFile, type SnapshotRecord } from "./format.js";
import type { SnapshotRecords } from "./snapshotRecords.js";
import type { StoreFiles } from "./storeFiles.js";
import { WorkingDir } from "./workingDir.js";

/** One directory in the working-set cache: [tree hash, listing digest, entries, bytes]. */
type CachedDir = [string, string, number, number];

export class WorkingIndex {
  /** Relative directory → its entries; undefined until loaded (and after a restore left half-way). */
  working: Map<string, WorkingDir> | undefined;
  /** Entries the last looks saw but did not record (relative path → why). */
  skipped = new Map<string, SkippedEntry>();
  /** Entries another source reported as not recordable ({@link noteSkipped}). */
  private readonly externalSkips = new Map<string, SkippedEntry>();
  /** The working set was loaded from the head and not checked against the disk since. */
  unverified = false;
  /** The working-set cache as last written. */
  private cacheText: string | undefined;

  constructor(
    private readonly storeDir: string,
    private readonly records: SnapshotRecords,
    private readonly files: StoreFiles,
  ) {}

  /** The working set as snapshot `headId` recorded it, to be verified by the next full scan. */
  async load(headId: string | undefined): Promise<void> {
    this.working = headId !== undefined ? await this.workingFrom(headId) : new Map();
    this.unverified = true;
  }

  /**
   * A cold start that lists before the working set is in: the listing digests of the working-set
   * cache where it describes snapshot `headId`'s trees, and the files they hold (for the caller's
   * listing), with the working set loading meanwhile (`loaded`: set once read; at 100k files
   * ~1,000 tree texts, about as long as the listing's first half). Undefined without the record
   * or the cache: {@link load} instead.
   */
  async loadBehind(headId: string): Promise<{ known: Map<string, string>; files: number; loaded: Promise<void> } | undefined> {
    const record = await this.records.readRecord(headId);
    const cache = record ? await this.readWorkingCache() : undefined;
    if (!record || !cache) return undefined;
    const known = new Map<string, string>();
    let files = 0;
    for (const [rel, h] of Object.entries(record.dirs)) {
      const c = cache[rel];
      if (c?.[0] !== h) continue;
      files += c[2];
      if (c[1]) known.set(rel, c[1]);
    }
    this.working = undefined;
    this.unverified = false;
    const loaded = this.workingOf(record, cache).then((w) => void (this.working = w));
    return { known, files, loaded };
  }

  /** How many files the working set records, or (not loaded yet) its cache; undefined when unknown. */
  async fileCount(): Promise<number | undefined> {
    let files = 0;
    if (this.working) for (const d of this.working.values()) files += d.size;
    else {
      const cache = await this.readWorkingCache();
      if (!cache) return undefined;
      for (const c of Object.values(cache)) files += c[2];
    }
    return files;
  }

  async workingFrom(id: string): Promise<Map<string, WorkingDir>> {
    const record = await this.records.readRecord(id);
    return record ? this.workingOf(record, await this.readWorkingCache()) : new Map();
  }

  /** The working set of `record`, with the working-set cache when there is one. */
  private async workingOf(record: SnapshotRecord, cache: Record<string, CachedDir> | undefined): Promise<Map<string, WorkingDir>> {
    const working = new Map<string, WorkingDir>();
    if (cache) {
      // Tree texts kept packed, with the listing digests of the last scan: the first scan of a
      // new process unpacks only the directories whose listing moved.
      const dirs = Object.entries(record.dirs);
      const texts = await this.records.readTreeTexts(dirs.map(([, h]) => h));
      dirs.forEach(([rel, h], i) => {
        const c = cache[rel];
        const text = texts[i]!;
        working.set(rel, c && c[0] === h ? WorkingDir.packed(text, h, c[2], c[3], c[1] || undefined) : new WorkingDir(parseTree(text.toString("utf8")), h));
      });
      return working;
    }
    const dirs = await this.records.loadDirs(record);
    for (const [rel, files] of dirs) working.set(rel, new WorkingDir(new Map(files), record.dirs[rel]));
    return working;
  }

  private get workingCachePath(): string {
    return path.join(this.storeDir, "working.json");
  }

  /** The working-set cache: relative dir → [tree hash, listing digest, entries, bytes]. */
  private async readWorkingCache(): Promise<Record<string, CachedDir> | undefined> {
    try {
      const cache = JSON.parse(await readFile(this.workingCachePath, "utf8")) as { v: 1; head: string; dirs: Record<string, CachedDir> };
      // Valid per directory: an entry is used only where its tree hash is the snapshot's (the
      // content it describes), whichever snapshot the cache was written at.
      return cache.v === 1 ? cache.dirs : undefined;
    } catch {
      return undefined;
    }
  }

  /** After a full scan: what a new process needs to start from `id` without parsing every tree. */
  async writeWorkingCache(id: string): Promise<void> {
    const dirs: Record<string, CachedDir> = {};
    for (const [rel, d] of this.working!) if (d.hash !== undefined && d.bytes !== undefined) dirs[rel] = [d.hash, d.sig ?? "", d.size, d.bytes];
    const text = JSON.stringify({ v: 1, head: id, dirs });
    if (text === this.cacheText) return;
    await this.files.writeAtomic(this.workingCachePath, text);
    this.cacheText = text;
  }

  /** Writes the tree of directory `rel` now and packs it ({@link SnapshotRecords.seal}); a directory edited meanwhile stays dirty. */
  async seal(rel: string): Promise<void> {
    const d = this.working?.get(rel);
    if (d) await this.records.seal(d);
  }

  ensureDir(rel: string): WorkingDir {
    const working = this.working!;
    let d = working.get(rel);
    if (!d) {
      d = new WorkingDir();
      working.set(rel, d);
      if (rel !== "") this.ensureDir(parentOf(rel));
    }
    return d;
  }

  dropDir(rel: string): void {
    for (const key of [...this.working!.keys()]) if (isUnder(key, rel) && key !== "") this.working!.delete(key);
    if (rel === "") this.working!.set("", new WorkingDir());
  }

  /** Sets (or with null removes, a directory with everything below) one entry of the working set. */
  setEntry(rel: string, entry: SnapshotFile | null): void {
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

  /** Lists `rel` as seen but not recorded; undefined (the entry it stands for). */
  skip(rel: string, reason: SkippedEntry["reason"], size?: number): undefined {
    this.skipped.set(rel, { path: rel, reason, ...(size !== undefined ? { size } : {}) });
    return undefined;
  }

  /** See {@link SnapshotStore.noteSkipped}. */
  noteSkipped(entries: readonly SkippedEntry[], only?: readonly string[]): void {
    if (only) {
      for (const k of [...this.externalSkips.keys()]) if (only.some((o) => o === "" || isUnder(k, o))) this.externalSkips.delete(k);
    } else this.externalSkips.clear();
    for (const e of entries) this.externalSkips.set(e.path, e);
  }

  /** What the next record lists as skipped: the store's own looks, then the other sources'. */
  allSkips(): SkippedEntry[] {
    return this.externalSkips.size > 0 ? [...this.skipped.values(), ...this.externalSkips.values()] : [...this.skipped.values()];
  }

  /** The entries held now, relative path → entry, and the directories. */
  entries(): { files: Map<string, SnapshotFile>; dirs: Set<string> } {
    const files = new Map<string, SnapshotFile>();
    const dirs = new Set<string>();
    for (const [rel, d] of this.working ?? []) {
      dirs.add(rel);
      for (const [name, f] of d.files) files.set(childOf(rel, name), f);
    }
    return { files, dirs };
  }
}
