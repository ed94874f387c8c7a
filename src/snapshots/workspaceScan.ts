/**
 * The looks of a snapshot store at the workspace: full scans (one listing by descriptor, then a
 * read of just the files whose size, mtime or mode moved), re-reads of single paths and
 * directories, and the capture of a tool's pre-images — bringing the working set
 * ({@link WorkingIndex}) in line with the disk. Reads go through directories held by descriptor
 * ({@link DirHandle}), never through a link, only regular files the listing named; the caps and the
 * per-snapshot byte budget are applied here.
 */
import { type Stats } from "node:fs";
import { readlink, type FileHandle } from "node:fs/promises";
import path from "node:path";
import pLimit from "p-limit";
import { DirHandle, EntryChangedError } from "../environment/dirHandle.js";
import { isAtomicTempName } from "../environment/tempFiles.js";
import { CTIME_SLACK_MS, listDirs, listTree, type ListedDir, type ListedEntry } from "../environment/listWorker.js";
import { dirToRead, readFilesIntoStore, readResultAt, type BlobLayout } from "./blobWorker.js";
import type { ObjectStore } from "./objects.js";
import { childOf, isUnder, parentOf, printableBytes, sameMtime, type SnapshotFile } from "./format.js";
import type { WorkingIndex } from "./workingIndex.js";
import { WorkingDir } from "./workingDir.js";

/** Files above this are streamed (read into a loose blob, and restored), not read whole by the blob worker. */
export const STREAM_ABOVE = 4 * 1024 * 1024;
/** Workspaces with more recorded files than this are listed by two workers at once. */
const SPLIT_LISTING_ABOVE = 5_000;
/** Files, and bytes past one file, a read request takes at most (three readers share them out: blobWorker.ts). */
const READ_BATCH = 1_000;
const READ_BATCH_BYTES = 4 * 1024 * 1024;
/** Listing chunks (~2,000 entries each) a scan records at once: two read batches each, for three readers. */
const CHUNKS_IN_FLIGHT = 3;

/** What a snapshot needs to know of a file or link before reading it (from a listing or an `lstat`). */
type EntryStat = Omit<ListedEntry, "name" | "raw">;
/** A file to read: its name and stat (a listed entry as it is: no object per file made for the read). */
type FileStat = EntryStat & { name: string };

function entryStat(st: Stats): EntryStat {
  const kind = st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : "other";
  return { kind, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode, ino: st.ino, dev: st.dev, blocks: st.blocks, ctimeMs: st.ctimeMs };
}

/** The stat cache: a recorded entry still describes the file when size, mtime, mode and kind agree. */
function statMatches(known: SnapshotFile, st: EntryStat): boolean {
  return known.s === st.size && sameMtime(known.t, st.mtimeMs) && known.m === (st.mode & 0o777) && Boolean(known.l) === (st.kind === "symlink");
}

/** A file is sparse when far less is allocated than its size says (`truncate -s 1T`): never read. */
function isSparse(st: EntryStat): boolean {
  return st.size > 1024 * 1024 && typeof st.blocks === "number" && st.blocks * 512 < st.size / 8;
}

/** What a look leaves out (the store's SnapshotPolicy, passed as it is). */
export interface ScanPolicy {
  ignoreNames: readonly string[];
  excludePath: (rel: string) => boolean;
}

/** How much a look reads: the per-file cap and the per-snapshot byte budget. */
export interface ScanCaps {
  maxFileBytes: number;
  maxSnapshotBytes: number;
}

export class WorkspaceScan {
  private readonly ignore: Set<string>;
  private readonly maxFileBytes: number;
  private readonly maxSnapshotBytes: number;
  /** Bytes the snapshot under way may still read. */
  private budget = 0;
  /** Links and large files of a scan, read one by one. */
  private readonly oneByOne = pLimit(1);
  /** See {@link flagFrom}. */
  private flaggedFrom: number | undefined;
  /**
   * What was found changed since {@link flagFrom}'s time: files and links by path, directories
   * (an entry was added, removed or renamed there) ending in "/", the root as "./".
   */
  readonly changedWhileTaken = new Set<string>();

  constructor(
    /** The workspace directory. */
    private readonly dir: string,
    private readonly policy: ScanPolicy,
    caps: ScanCaps,
    private readonly objects: ObjectStore,
    private readonly index: WorkingIndex,
  ) {
    this.ignore = new Set(policy.ignoreNames);
    this.maxFileBytes = caps.maxFileBytes;
    this.maxSnapshotBytes = caps.maxSnapshotBytes;
  }

  /**
   * From `at` (wall-clock ms) on, every entry read and every directory listed whose ctime is
   * that late is noted in {@link changedWhileTaken}: what the look records of it may already be
   * what a command running beside the look made of it (ctime moves on every write, chmod, link
   * and rename, and no unprivileged process can set it back). `undefined` stops and forgets.
   */
  flagFrom(at: number | undefined): void {
    this.flaggedFrom = at === undefined ? undefined : at - CTIME_SLACK_MS;
    if (at === undefined) this.changedWhileTaken.clear();
  }

  /** Whether {@link noteChanged} would note an entry of this ctime (checked first: no path string made per file otherwise). */
  private flagged(ctimeMs: number): boolean {
    return this.flaggedFrom !== undefined && ctimeMs >= this.flaggedFrom;
  }

  private noteChanged(rel: string, ctimeMs: number, dir = false): void {
    if (!this.flagged(ctimeMs)) return;
    this.changedWhileTaken.add(dir ? (rel === "" ? "./" : `${rel}/`) : rel);
  }

  /** A new snapshot starts: it may read the per-snapshot byte budget again. */
  resetBudget(): void {
    this.budget = this.maxSnapshotBytes;
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
          const link = await this.linkEntry(dir, rel, name, es);
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

  /** Entries never recorded: ignored names anywhere on the path, excluded paths, atomic-write temp files. */
  leftOut(rel: string): boolean {
    return this.excludedName(rel) || this.policy.excludePath(rel) || isAtomicTempName(rel.slice(rel.lastIndexOf("/") + 1));
  }

  private excludedName(rel: string): boolean {
    for (const seg of rel.split("/")) if (this.ignore.has(seg)) return true;
    return false;
  }

  /**
   * Re-reads one path (file, directory or gone), reaching it through directories held by
   * descriptor: where a component on the way is not a plain directory (a symlink, say), that
   * component is re-read instead — nothing below a link is ever recorded.
   */
  async updatePath(abs: string, force = true): Promise<void> {
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
    const working = this.index.working!;
    const parent = parentOf(rel);
    const name = rel.slice(parent === "" ? 0 : parent.length + 1);
    this.index.skipped.delete(rel);
    const st = await dir.lstat(name);
    const p = working.get(parent);
    if (!st) {
      if (p?.files.delete(name)) p.hash = undefined;
      if (working.has(rel)) {
        this.index.dropDir(rel);
        if (p) p.hash = undefined;
      }
      return;
    }
    if (st.isDirectory()) {
      const had = working.has(rel);
      if (p?.files.delete(name)) p.hash = undefined;
      await this.scanTree(rel, { path: dir.at(name) as string, root: false });
      if (!had) this.index.ensureDir(parent).hash = undefined;
      return;
    }
    // A directory replaced by a file.
    if (working.has(rel)) this.index.dropDir(rel);
    const d = this.index.ensureDir(parent);
    const entry = st.isFile() || st.isSymbolicLink() ? await this.entryFor(dir, rel, name, entryStat(st), d.files.get(name), force) : this.index.skip(rel, "not-regular");
    if (entry) {
      if (!sameEntry(d.files.get(name), entry)) {
        d.files.set(name, entry);
        d.hash = undefined;
      }
    } else if (d.files.delete(name)) d.hash = undefined;
    // New parents change their own parents' listing only through `dirs`: no tree edit needed.
  }

  /** Full pass: stat every file, read only those whose size or mtime moved. */
  async scan(): Promise<void> {
    this.index.skipped = new Map();
    this.index.unverified = false;
    await this.scanTree("", { path: this.dir, root: true });
  }

  /**
   * The first full pass of a process (no working set yet; `headId`: the head, if any): the
   * listing starts at once, from the working-set cache's digests, while the head's tree texts
   * are read ({@link WorkingIndex.loadBehind}); each listed chunk is recorded once they are in.
   * On failure the working set is dropped: the next operation loads it again.
   */
  async scanCold(headId: string | undefined): Promise<void> {
    const behind = headId === undefined ? undefined : await this.index.loadBehind(headId);
    if (!behind) {
      await this.index.load(headId);
      return this.scan();
    }
    this.index.skipped = new Map();
    try {
      await this.scanTree("", { path: this.dir, root: true }, behind);
    } catch (error) {
      this.index.working = undefined;
      throw error;
    }
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
  private async scanTree(
    rel: string,
    start: { path: string; root: boolean } | undefined,
    /** A cold start ({@link scanCold}): the cache's digests and file count, and the working set once loaded. */
    cold?: { known: Map<string, string>; files: number; loaded: Promise<void> },
  ): Promise<void> {
    for (const k of [...this.index.skipped.keys()]) if (isUnder(k, rel) && k !== rel) this.index.skipped.delete(k);
    const { known, files } = cold ?? this.knownDigests(rel);
    const split = start?.root === true && (files > SPLIT_LISTING_ABOVE || (cold ? files === 0 : this.index.working!.size === 0));
    // Streamed: each chunk of the listing is recorded (its files read) while the rest is listed.
    const seen = new Set<string>();
    const loaded = cold?.loaded;
    const recorded: Promise<void>[] = [];
    // Each marked handled at once (a failure is thrown below, once all settled), not left unhandled while the listing runs.
    const track = (p: Promise<void>) => {
      recorded.push(p);
      p.catch(() => undefined);
    };
    if (loaded) track(loaded);
    // A few chunks at a time (enough to keep the three readers busy): the listing outruns the
    // reads, and a chunk taken early would hold an object per entry until its files are read.
    const chunks = pLimit(CHUNKS_IN_FLIGHT);
    const onDirs = (take: () => ListedDir[]) =>
      track(
        chunks(async () => {
          await loaded;
          await this.recordDirs(take(), seen);
        }),
      );
    try {
      const listing = start ? await listTree(start.path, rel, [...this.ignore], { followStart: start.root, known, split, onChunk: onDirs }) : { dirs: [], tooDeep: [] };
      for (const r of listing.tooDeep) this.index.skip(r, "too-deep");
      onDirs(() => listing.dirs);
    } finally {
      await settledAll(recorded);
    }
    const working = this.index.working!;
    for (const key of [...working.keys()]) if (isUnder(key, rel) && !seen.has(key)) working.delete(key);
    if (!working.has("")) working.set("", new WorkingDir());
  }

  /**
   * The working set's listing digests (directory → digest) and the files it records, or undefined
   * when a directory has none (it holds a skipped entry, or was edited since it was listed).
   */
  digests(): { known: Map<string, string>; files: number } | undefined {
    const { known, files, complete } = this.knownDigests("");
    return complete ? { known, files } : undefined;
  }

  /**
   * The listing digests of the working set's directories at or under `rel` (those that have one),
   * whether every one of them has one, and the files the whole working set records.
   */
  private knownDigests(rel: string): { known: Map<string, string>; files: number; complete: boolean } {
    const known = new Map<string, string>();
    let files = 0;
    let complete = true;
    for (const [k, d] of this.index.working!) {
      files += d.size;
      if (!isUnder(k, rel)) continue;
      if (d.sig !== undefined && d.hash !== undefined) known.set(k, d.sig);
      else complete = false;
    }
    return { known, files, complete };
  }

  /**
   * Whether one listing of the workspace finds every directory of `known` with its digest, and
   * no other directory. Streamed: a directory that moved comes back with its rows, dropped at once.
   */
  async listsAsKnown({ known, files }: { known: Map<string, string>; files: number }): Promise<boolean> {
    let same = true;
    let listed = 0;
    const check = (dirs: readonly ListedDir[]) => {
      for (const d of dirs) {
        listed++;
        if (d.entries !== undefined || !known.has(d.rel)) same = false;
      }
    };
    const listing = await listTree(this.dir, "", [...this.ignore], { followStart: true, known, split: files > SPLIT_LISTING_ABOVE, onChunk: (take) => check(take()) });
    check(listing.dirs);
    return same && listing.tooDeep.length === 0 && listed === known.size;
  }

  /**
   * Looks at directories `rels` themselves again, not below them, in one listing (a subdirectory
   * that appeared is scanned, one that went is dropped; a directory that is gone or no longer a
   * directory is looked at as a path). True when what the working set records there moved.
   */
  async relistDirs(rels: readonly string[]): Promise<boolean> {
    const working = this.index.working!;
    const before = new Map(rels.map((rel) => [rel, working.get(rel)]));
    const listing = await listDirs(this.dir, rels, [...this.ignore]);
    const found = new Set(listing.dirs.map((d) => d.rel));
    let moved = false;
    for (const rel of rels) {
      if (found.has(rel)) continue;
      await this.updatePath(path.join(this.dir, ...rel.split("/")));
      moved = true;
    }
    if (listing.dirs.length === 0) return moved;
    // What was skipped in a listed directory is decided again by this listing (one pass over the skipped).
    for (const k of [...this.index.skipped.keys()]) if (k !== "" && found.has(parentOf(k))) this.index.skipped.delete(k);
    await this.recordListing(listing);
    const listedSubs = new Map<string, Set<string>>();
    for (const d of listing.dirs) {
      if (working.get(d.rel) !== before.get(d.rel)) moved = true;
      const subs = new Set(d.entries?.filter((e) => e.kind === "directory" && e.name !== undefined).map((e) => childOf(d.rel, e.name!)));
      listedSubs.set(d.rel, subs);
      for (const sub of subs) {
        if (working.has(sub) || this.policy.excludePath(sub)) continue;
        await this.updatePath(path.join(this.dir, ...sub.split("/")));
        moved = true;
      }
    }
    for (const key of [...working.keys()]) {
      const subs = key === "" ? undefined : listedSubs.get(parentOf(key));
      if (!subs || subs.has(key)) continue;
      this.index.dropDir(key);
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
    for (const r of listing.tooDeep) this.index.skip(r, "too-deep");
    const seen = new Set<string>();
    await this.recordDirs(listing.dirs, seen);
    return seen;
  }

  /** {@link recordListing} of some directories of a listing (added to `seen`). */
  private async recordDirs(dirs: readonly ListedDir[], seen: Set<string>): Promise<void> {
    const working = this.index.working!;
    const toRead: { rel: string; files: Map<string, SnapshotFile>; pending: ListedEntry[]; sig: string | undefined }[] = [];
    for (const d of dirs) {
      seen.add(d.rel);
      this.noteChanged(d.rel, d.ctimeMs, true);
      const old = working.get(d.rel);
      const sig = d.sig;
      if (d.entries === undefined && old) continue; // Listed as the caller knew it.
      const skips = this.index.skipped.size;
      const files = new Map<string, SnapshotFile>();
      const pending: ListedEntry[] = [];
      for (const e of d.entries ?? []) {
        if (e.name === undefined) {
          this.index.skip(childOf(d.rel, printableBytes(e.raw ?? Buffer.alloc(0))), "not-utf8-name");
          continue;
        }
        const childRel = childOf(d.rel, e.name);
        // Temp files of atomic writes under way (a tool writing while the baseline runs) are not the workspace's.
        if (e.kind === "directory" || this.policy.excludePath(childRel) || isAtomicTempName(e.name)) continue;
        if (e.kind === "other") {
          this.index.skip(childRel, "not-regular");
          continue;
        }
        const known = old?.files.get(e.name);
        if (known && statMatches(known, e)) files.set(e.name, known);
        else pending.push(e);
      }
      const clean = this.index.skipped.size === skips ? sig : undefined;
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
    const small: { rel: string; files: FileStat[] }[] = [];
    const others: { t: (typeof toRead)[number]; e: ListedEntry }[] = [];
    for (const t of toRead) {
      const files: FileStat[] = [];
      for (const e of t.pending) {
        if (e.kind === "file" && e.size <= STREAM_ABOVE) {
          if (this.admit(t.rel, e.name!, e)) files.push(e as FileStat);
          else t.sig = undefined;
        } else others.push({ t, e });
      }
      small.push({ rel: t.rel, files });
    }
    const read = await this.readSmall(small);
    small.forEach((d, i) => {
      const t = toRead[i]!;
      const got = read[i]!;
      for (let j = 0; j < d.files.length; j++) {
        const st = d.files[j]!;
        const entry = got[j];
        if (entry) t.files.set(st.name, entry);
        // Read as listed, or the next scan must look again.
        if (!entry || entry.s !== st.size || entry.t !== st.mtimeMs) t.sig = undefined;
      }
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
    // Held as tree texts from here on, not as an object per file (100k files: ~10 MB less live
    // heap at the end of a baseline, which V8 doubles in the heap it keeps).
    for (const d of dirs) await this.index.seal(d.rel);
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
      return this.linkEntry(dir, rel, name, st);
    }
    if (st.kind !== "file") return this.index.skip(rel, "not-regular");
    if (!this.admit(parentOf(rel), name, st)) return undefined;
    if (st.size <= STREAM_ABOVE) return (await this.readSmall([{ rel: parentOf(rel), files: [{ ...st, name }] }]))[0]![0];
    let opened: Awaited<ReturnType<DirHandle["openFile"]>>;
    try {
      opened = await dir.openFile(name, st);
    } catch (err) {
      return this.index.skip(rel, err instanceof EntryChangedError ? "changed-while-read" : "unreadable", st.size);
    }
    if (!opened) return undefined;
    const { fh, stats } = opened;
    this.noteChanged(rel, stats.ctimeMs);
    try {
      // The size read is the descriptor's: a file that grows meanwhile is caught by its mtime next time.
      const size = Math.min(stats.size, st.size);
      return { h: await this.putStream(fh, size), s: size, m: mode, t: stats.mtimeMs };
    } catch {
      return this.index.skip(rel, "unreadable", st.size);
    } finally {
      await fh.close().catch(() => undefined);
    }
  }

  /** The entry of the symlink `name` in `dir`: its target's bytes as a blob, never what it points to. */
  private async linkEntry(dir: DirHandle, rel: string, name: string, st: EntryStat): Promise<SnapshotFile | undefined> {
    const target = await readlink(dir.at(name), { encoding: "buffer" }).catch(() => undefined);
    if (target === undefined) return undefined;
    this.noteChanged(rel, st.ctimeMs);
    return { h: await this.putBuffer(target), s: st.size, m: st.mode & 0o777, t: st.mtimeMs, l: 1 };
  }

  /** Whether regular file `name` of directory `dirRel` may be read now (the caps; the budget is spent here). Skips it otherwise. */
  private admit(dirRel: string, name: string, st: EntryStat): boolean {
    if (isSparse(st)) return this.index.skip(childOf(dirRel, name), "sparse", st.size) ?? false;
    if (st.size > this.maxFileBytes) return this.index.skip(childOf(dirRel, name), "too-large", st.size) ?? false;
    if (st.size > this.budget) return this.index.skip(childOf(dirRel, name), "snapshot-budget", st.size) ?? false;
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
  private async readSmall(dirs: { rel: string; files: FileStat[] }[]): Promise<(SnapshotFile | undefined)[][]> {
    // Bounded batches (messages, and the bytes a reader holds: a large directory is cut in
    // pieces), read by whichever reader is free.
    type Piece = { d: number; from: number; rel: string; files: FileStat[] };
    const batches: Piece[][] = [];
    let batch: Piece[] = [];
    let n = 0;
    let bytes = 0;
    dirs.forEach((dir, d) => {
      let from = 0;
      for (let i = 0; i < dir.files.length; i++) {
        if (n > 0 && (n >= READ_BATCH || bytes + dir.files[i]!.size > READ_BATCH_BYTES)) {
          if (i > from) batch.push({ d, from, rel: dir.rel, files: dir.files.slice(from, i) });
          batches.push(batch);
          batch = [];
          n = bytes = 0;
          from = i;
        }
        n++;
        bytes += dir.files[i]!.size;
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
            p.files.forEach((st, i) => ((stats[3 * i] = st.ino), (stats[3 * i + 1] = st.dev), (stats[3 * i + 2] = st.size)));
            return { rel: p.rel, names: p.files.map((f) => f.name), stats };
          }),
          this.layout,
        );
        let k = 0;
        for (const p of pieces) {
          const into = out[p.d]!;
          for (let i = 0; i < p.files.length; i++, k++) {
            const st = p.files[i]!;
            // Read from the columns (no result tuple per file); a failure as readResultAt names it.
            const got = read.nums[3 * k]!;
            let entry: SnapshotFile | undefined;
            if (got >= 0) {
              const h = read.hashes[k]!;
              this.rememberBlob(h);
              if (this.flagged(read.nums[3 * k + 2]!)) this.noteChanged(childOf(p.rel, st.name), read.nums[3 * k + 2]!);
              entry = { h, s: got, m: st.mode & 0o777, t: read.nums[3 * k + 1]! };
            } else {
              const r = readResultAt(read, k);
              entry = r === "gone" || typeof r !== "string" ? undefined : this.index.skip(childOf(p.rel, st.name), r, st.size);
            }
            into[p.from + i] = entry;
          }
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
