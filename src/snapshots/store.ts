/**
 * A thread workspace's snapshot store: content-addressed blobs (sha256, deduplicated), one small
 * tree object per directory, and one record per snapshot naming those trees. A snapshot after a
 * change re-hashes only the paths it is told about (or, after tools whose effect is unknown,
 * re-hashes only files whose size or mtime moved) and rewrites only the trees of the directories
 * that changed. Restores build the target tree in a staging directory and swap it in with two
 * renames, journaled so a crash at any point is rolled back or forward on the next use.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, type Stats } from "node:fs";
import { chmod, copyFile, link, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import pLimit from "p-limit";

/** One file in a directory tree: content hash, size, mode bits, mtime (ms), symlink flag. */
export interface SnapshotFile {
  h: string;
  s: number;
  m: number;
  t: number;
  l?: 1;
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
}

/** Which workspace entries a snapshot leaves out (kept as they are on restore). */
export interface SnapshotPolicy {
  /** Directory or file names skipped wherever they occur (e.g. `node_modules`, `.git`). */
  ignoreNames: readonly string[];
  /** Relative `/`-separated path → true to leave it out (credential files). */
  excludePath: (rel: string) => boolean;
}

/** Retention: snapshots beyond any bound are pruned, oldest first (the head is kept). */
export interface RetentionPolicy {
  maxSnapshots: number;
  maxAgeMs: number;
  maxBytes: number;
}

interface SnapshotRecord extends SnapshotInfo {
  v: 1;
  /** relDir ("" = root) → tree object hash. */
  dirs: Record<string, string>;
}

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

interface Journal {
  target: string;
  staging: string;
  trash: string;
  /** Excluded directories moved from the workspace into staging (relative paths). */
  moved: string[];
}

/**
 * One directory of the working set. Between snapshots its entries stay packed as their tree text
 * (one string), so a full garbage collection of the agent's heap marks one object per directory
 * instead of three per file (100k files: about 24 MB of small objects, marked again by every
 * full collection of the agent's process); a snapshot that reads or edits the directory unpacks it.
 */
class WorkingDir {
  private map: Map<string, SnapshotFile> | undefined;
  private packed: string | undefined;
  private count = 0;
  /** Tree hash of the entries, undefined while dirty. */
  hash?: string;
  /** Sum of the file sizes, computed with `hash`. */
  bytes?: number;

  constructor(files: Map<string, SnapshotFile> = new Map(), hash?: string) {
    this.map = files;
    this.hash = hash;
  }

  /** The entries, unpacked on first use after {@link pack}. */
  get files(): Map<string, SnapshotFile> {
    if (this.map === undefined) {
      this.map = parseTree(this.packed!);
      this.packed = undefined;
    }
    return this.map;
  }

  get size(): number {
    return this.map === undefined ? this.count : this.map.size;
  }

  /** Packs the entries; `text` is their {@link treeText} when the caller has it already. */
  pack(text?: string): void {
    if (this.map === undefined) return;
    this.packed = text ?? treeText(this.map).text;
    this.count = this.map.size;
    this.map = undefined;
  }
}

/** A directory's tree object: with mtimes (`text`, what is stored) and without (what names it). */
function treeText(files: Map<string, SnapshotFile>): { text: string; named: string } {
  if (files.size === 0) return { text: EMPTY_TREE, named: EMPTY_TREE };
  const entries = [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    text: JSON.stringify(entries.map(([n, f]) => [n, f.h, f.s, f.m, f.t, f.l ?? 0])),
    named: JSON.stringify(entries.map(([n, f]) => [n, f.h, f.s, f.m, f.l ?? 0])),
  };
}

function parseTree(text: string): Map<string, SnapshotFile> {
  const files = new Map<string, SnapshotFile>();
  for (const [n, h, s, m, t, l] of JSON.parse(text) as [string, string, number, number, number, number][]) {
    files.set(n, { h, s, m, t, ...(l ? { l: 1 as const } : {}) });
  }
  return files;
}

const STREAM_ABOVE = 4 * 1024 * 1024;
const KNOWN_BLOBS = 4_096;
const EMPTY_TREE = "[]";

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

function childOf(rel: string, name: string): string {
  return rel === "" ? name : `${rel}/${name}`;
}

function parentOf(rel: string): string {
  const i = rel.lastIndexOf("/");
  return i === -1 ? "" : rel.slice(0, i);
}

function isUnder(rel: string, dir: string): boolean {
  return dir === "" || rel === dir || rel.startsWith(`${dir}/`);
}

/** Raised for a snapshot id the store does not hold (pruned, or never taken). */
export class SnapshotNotFoundError extends Error {
  override readonly name = "SnapshotNotFoundError";
  constructor(readonly id: string) {
    super(`Snapshot ${id} is not in the store (pruned by retention, or taken elsewhere). List the thread's snapshots to pick one.`);
  }
}

/**
 * The store of one workspace directory. Every operation runs through one queue per store, so
 * snapshots and restores of a thread never interleave.
 */
export class SnapshotStore {
  private readonly blobs: string;
  private readonly trees: string;
  private readonly snaps: string;
  private working: Map<string, WorkingDir> | undefined;
  /** Top-most excluded entries seen by the last scan (relative path → is a directory). */
  private excluded = new Map<string, boolean>();
  private head: Head | undefined;
  private headLoaded = false;
  private queue: Promise<unknown> = Promise.resolve();
  private recovered = false;
  private sinceGc = 0;
  private readonly ignore: Set<string>;
  /** Directories of the store known to exist, and blobs known to be stored (saves a syscall each). */
  private readonly madeDirs = new Set<string>();
  /** Blobs known to be stored (a bounded shortcut: a miss costs one `stat` in `writeObject`). */
  private readonly knownBlobs = new Set<string>();

  constructor(
    /** The workspace directory. */
    readonly dir: string,
    /** The store directory (outside the workspace). */
    readonly storeDir: string,
    private readonly policy: SnapshotPolicy,
    private readonly retention: RetentionPolicy,
  ) {
    this.blobs = path.join(storeDir, "blobs");
    this.trees = path.join(storeDir, "trees");
    this.snaps = path.join(storeDir, "snaps");
    this.ignore = new Set(policy.ignoreNames);
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
   * re-read; without, every file is stat'ed and only files whose size or mtime moved are read.
   * Returns the snapshot id (the same id when nothing changed).
   */
  snapshot(options: { paths?: readonly string[]; reason?: string; assign?: boolean } = {}): Promise<string> {
    return this.serial(() => this.snapshotNow(options.paths, options.reason ?? (options.paths ? "tool" : "scan"), options.assign));
  }

  /** Snapshots, newest first. */
  list(): Promise<SnapshotInfo[]> {
    return this.serial(async () => {
      const records = await this.allRecords();
      return records.map(({ id, parent, createdAt, files, bytes, reason }) => ({ id, ...(parent ? { parent } : {}), createdAt, files, bytes, ...(reason ? { reason } : {}) }));
    });
  }

  /** True when the store holds `id`. */
  has(id: string): Promise<boolean> {
    return this.serial(async () => (await this.readRecord(id)) !== undefined);
  }

  /**
   * Brings the workspace to snapshot `id`: records the current state first (full scan, so
   * nothing is lost), then swaps in a staged copy. Excluded entries (credential files, ignored
   * folders) stay as they are. Returns the id of the state it replaced.
   */
  restore(id: string, options: { pin?: boolean } = {}): Promise<{ restored: string; previous: string }> {
    return this.serial(async () => {
      const target = await this.readRecord(id);
      if (!target) throw new SnapshotNotFoundError(id);
      const previous = await this.snapshotNow(undefined, "before-restore");
      if (previous !== id) await this.swapIn(target);
      const h = (await this.loadHead())!;
      await this.saveHead(options.pin ? { ...h, id, pinned: true } : { ...h, id, assigned: id, pinned: undefined });
      return { restored: id, previous };
    });
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

  /** The content of a blob. */
  readBlob(hash: string): Promise<Buffer> {
    return readFile(this.blobPath(hash));
  }

  /** Bytes held by blobs and trees (what retention's `maxBytes` bounds). */
  async storeBytes(): Promise<number> {
    let total = 0;
    for (const base of [this.blobs, this.trees, this.snaps]) {
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

  private async snapshotNow(paths: readonly string[] | undefined, reason: string, assign = false): Promise<string> {
    const head = await this.loadHead();
    if (!this.working) {
      this.working = head ? await this.workingFrom(head.id) : new Map();
      // Cold start: what changed since the head was taken is unknown.
      paths = undefined;
    }
    if (paths) {
      for (const p of paths) await this.updatePath(p);
    } else {
      await this.scan();
    }
    const id = await this.commit(head?.id, reason);
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
      const record: SnapshotRecord = { v: 1, id, ...(parent && parent !== id ? { parent } : {}), createdAt: Date.now(), files, bytes, reason, dirs };
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
    for (const key of [...this.working!.keys()]) if (isUnder(key, rel) && key !== "" ) this.working!.delete(key);
    if (rel === "") this.working!.set("", new WorkingDir());
  }

  private excludedName(rel: string): boolean {
    for (const seg of rel.split("/")) if (this.ignore.has(seg)) return true;
    return false;
  }

  /** Re-reads one path (file, directory or gone). */
  private async updatePath(abs: string): Promise<void> {
    const relNative = path.relative(this.dir, abs);
    if (relNative.startsWith("..") || path.isAbsolute(relNative)) return;
    const rel = relNative.split(path.sep).join("/");
    if (rel === "") return this.scan();
    if (this.excludedName(rel) || this.policy.excludePath(rel)) return;
    const st = await lstat(abs).catch(() => undefined);
    const parent = parentOf(rel);
    const name = rel.slice(parent === "" ? 0 : parent.length + 1);
    if (!st) {
      const d = this.working!.get(parent);
      if (d?.files.delete(name)) d.hash = undefined;
      if (this.working!.has(rel)) {
        this.dropDir(rel);
        const p = this.working!.get(parent);
        if (p) p.hash = undefined;
      }
      return;
    }
    if (st.isDirectory()) {
      const had = this.working!.has(rel);
      await this.scanDir(rel, true);
      if (!had) this.ensureDir(parent).hash = undefined;
      return;
    }
    // A directory replaced by a file.
    if (this.working!.has(rel)) this.dropDir(rel);
    const d = this.ensureDir(parent);
    const entry = await this.entryFor(abs, st, d.files.get(name), true);
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
    this.excluded = new Map();
    await this.scanDir("", false);
  }

  /** Rebuilds the working entries of `rel` and below from disk. */
  private async scanDir(rel: string, onlyHere: boolean): Promise<void> {
    const working = this.working!;
    const seen = new Set<string>();
    const limit = pLimit(16);
    const visit = async (relDir: string): Promise<void> => {
      seen.add(relDir);
      const abs = relDir === "" ? this.dir : path.join(this.dir, ...relDir.split("/"));
      let entries;
      try {
        entries = await readdir(abs, { withFileTypes: true });
      } catch {
        return;
      }
      const old = working.get(relDir);
      const files = new Map<string, SnapshotFile>();
      const subdirs: string[] = [];
      await Promise.all(
        entries.map((e) =>
          limit(async () => {
            const childRel = childOf(relDir, e.name);
            if (this.ignore.has(e.name) || this.policy.excludePath(childRel)) {
              if (e.isDirectory() || e.isFile() || e.isSymbolicLink()) this.excluded.set(childRel, e.isDirectory());
              return;
            }
            if (e.isDirectory()) {
              subdirs.push(childRel);
              return;
            }
            if (!e.isFile() && !e.isSymbolicLink()) return;
            const p = path.join(abs, e.name);
            const st = await lstat(p).catch(() => undefined);
            if (!st) return;
            const entry = await this.entryFor(p, st, old?.files.get(e.name), false);
            if (entry) files.set(e.name, entry);
          }),
        ),
      );
      const same = old !== undefined && old.size === files.size && [...files].every(([n, f]) => sameEntry(old.files.get(n), f));
      working.set(relDir, same ? old : new WorkingDir(files));
      await Promise.all(subdirs.map(visit));
    };
    if (onlyHere) {
      for (const [k] of this.excluded) if (isUnder(k, rel)) this.excluded.delete(k);
    }
    await visit(rel);
    for (const key of [...working.keys()]) if (isUnder(key, rel) && !seen.has(key)) working.delete(key);
    if (!working.has("")) working.set("", new WorkingDir());
  }

  /** The entry of one file; re-reads it unless `known` matches its size and mtime (and `force` is off). */
  private async entryFor(abs: string, st: Stats, known: SnapshotFile | undefined, force: boolean): Promise<SnapshotFile | undefined> {
    const mode = st.mode & 0o7777;
    if (!force && known && known.s === st.size && known.t === st.mtimeMs && known.m === mode && Boolean(known.l) === st.isSymbolicLink()) return known;
    if (st.isSymbolicLink()) {
      const target = await readlink(abs).catch(() => undefined);
      if (target === undefined) return undefined;
      const h = await this.putBuffer(Buffer.from(target));
      return { h, s: st.size, m: mode, t: st.mtimeMs, l: 1 };
    }
    if (!st.isFile()) return undefined;
    try {
      const h = st.size > STREAM_ABOVE ? await this.putStream(abs) : await this.putBuffer(await readFile(abs));
      return { h, s: st.size, m: mode, t: st.mtimeMs };
    } catch {
      return undefined; // Deleted or unreadable between the listing and the read.
    }
  }

  private blobPath(hash: string): string {
    return path.join(this.blobs, hash.slice(0, 2), hash.slice(2));
  }

  private async putBuffer(data: Buffer): Promise<string> {
    const h = sha256(data);
    if (this.knownBlobs.has(h)) return h;
    await this.writeObject(this.blobPath(h), data);
    this.rememberBlob(h);
    return h;
  }

  /** Large files: copied to a temporary blob while hashing, so the content is read once. */
  private async putStream(abs: string): Promise<string> {
    await this.mkdirOnce(this.blobs);
    const tmp = path.join(this.blobs, `.tmp-${randomBytes(6).toString("hex")}`);
    const hash = createHash("sha256");
    try {
      await pipeline(
        createReadStream(abs),
        async function* (source: AsyncIterable<Buffer>) {
          for await (const chunk of source) {
            hash.update(chunk);
            yield chunk;
          }
        },
        createWriteStream(tmp),
      );
      const h = hash.digest("hex");
      const p = this.blobPath(h);
      if (this.knownBlobs.has(h) || (await exists(p))) await rm(tmp, { force: true });
      else {
        await this.mkdirOnce(path.dirname(p));
        await rename(tmp, p);
      }
      this.rememberBlob(h);
      return h;
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
  }

  /** Bounded, oldest out: 100k hashes held for good are 100k strings for every full GC to mark. */
  private rememberBlob(h: string): void {
    this.knownBlobs.add(h);
    if (this.knownBlobs.size > KNOWN_BLOBS) this.knownBlobs.delete(this.knownBlobs.values().next().value as string);
  }

  private async mkdirOnce(dir: string): Promise<void> {
    if (this.madeDirs.has(dir)) return;
    await mkdir(dir, { recursive: true });
    this.madeDirs.add(dir);
  }

  /** Atomic write: temporary file + rename, so a reader never sees half an object. */
  private async writeObject(p: string, data: string | Buffer): Promise<void> {
    if (await exists(p)) return;
    await this.mkdirOnce(path.dirname(p));
    const tmp = `${p}.tmp-${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, data, { mode: 0o600 });
    await rename(tmp, p);
  }

  // ---- records ---------------------------------------------------------------------------

  private async readRecord(id: string): Promise<SnapshotRecord | undefined> {
    if (!/^[0-9a-f]{24}$/.test(id)) return undefined;
    try {
      return JSON.parse(await readFile(path.join(this.snaps, `${id}.json`), "utf8")) as SnapshotRecord;
    } catch {
      return undefined;
    }
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

  private async loadDirs(record: SnapshotRecord): Promise<Map<string, Map<string, SnapshotFile>>> {
    const out = new Map<string, Map<string, SnapshotFile>>();
    const cache = new Map<string, Promise<Map<string, SnapshotFile>>>();
    const limit = pLimit(16);
    await Promise.all(
      Object.entries(record.dirs).map(([rel, h]) =>
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
    const dirs = await this.loadDirs(record);
    const working = new Map<string, WorkingDir>();
    for (const [rel, files] of dirs) working.set(rel, new WorkingDir(new Map(files), record.dirs[rel]));
    return working;
  }

  private async loadHead(): Promise<Head | undefined> {
    if (!this.headLoaded) {
      try {
        this.head = JSON.parse(await readFile(path.join(this.storeDir, "HEAD.json"), "utf8")) as Head;
      } catch {
        this.head = undefined;
      }
      this.headLoaded = true;
    }
    return this.head;
  }

  private async saveHead(head: Head): Promise<void> {
    await this.mkdirOnce(this.storeDir);
    const p = path.join(this.storeDir, "HEAD.json");
    const tmp = `${p}.tmp-${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, JSON.stringify(head), { mode: 0o600 });
    await rename(tmp, p);
    this.head = head;
    this.headLoaded = true;
  }

  // ---- restore ---------------------------------------------------------------------------

  private get journalPath(): string {
    return path.join(this.storeDir, "restore.json");
  }

  /**
   * Builds `target` in a staging directory next to the workspace (same file system), carries
   * excluded entries over, then swaps: workspace → trash, staging → workspace.
   */
  private async swapIn(target: SnapshotRecord): Promise<void> {
    const suffix = randomBytes(6).toString("hex");
    const staging = path.join(this.storeDir, `staging-${suffix}`);
    const trash = path.join(this.storeDir, `trash-${suffix}`);
    const dirs = await this.loadDirs(target);
    const current = this.working!;
    const limit = pLimit(16);
    await mkdir(staging, { recursive: true });
    const nativeRel = (rel: string) => (rel === "" ? "" : path.join(...rel.split("/")));
    await Promise.all([...dirs.keys()].map((rel) => limit(() => mkdir(path.join(staging, nativeRel(rel)), { recursive: true }))));
    const tasks: Promise<void>[] = [];
    for (const [rel, files] of dirs) {
      const have = current.get(rel)?.files;
      for (const [name, f] of files) {
        tasks.push(
          limit(async () => {
            const dest = path.join(staging, nativeRel(rel), name);
            if (f.l) {
              await symlink((await this.readBlob(f.h)).toString(), dest);
              return;
            }
            const mine = have?.get(name);
            // Unchanged content: share the workspace's inode (the old tree is discarded after the swap).
            if (mine && !mine.l && mine.h === f.h && mine.m === f.m) {
              try {
                await link(path.join(this.dir, nativeRel(rel), name), dest);
                return;
              } catch {
                // Changed under us or not linkable: copy from the store instead.
              }
            }
            await copyFile(this.blobPath(f.h), dest);
            await chmod(dest, f.m);
            await utimes(dest, f.t / 1000, f.t / 1000);
          }),
        );
      }
    }
    await Promise.all(tasks);
    // Excluded files are hard-linked over; excluded directories are moved at swap time (journaled).
    const moved: string[] = [];
    for (const [rel, isDir] of this.excluded) {
      const src = path.join(this.dir, nativeRel(rel));
      const dest = path.join(staging, nativeRel(rel));
      await mkdir(path.dirname(dest), { recursive: true });
      if (isDir) moved.push(rel);
      else await link(src, dest).catch(async () => copyFile(src, dest).catch(() => undefined));
    }
    const journal: Journal = { target: target.id, staging, trash, moved };
    await writeFile(this.journalPath, JSON.stringify(journal), { mode: 0o600 });
    for (const rel of moved) await rename(path.join(this.dir, nativeRel(rel)), path.join(staging, nativeRel(rel))).catch(() => undefined);
    await rename(this.dir, trash);
    await rename(staging, this.dir);
    await this.saveHead({ ...(await this.loadHead())!, id: target.id });
    await rm(this.journalPath, { force: true });
    this.working = new Map([...dirs].map(([rel, files]) => [rel, new WorkingDir(new Map(files), target.dirs[rel])]));
    for (const d of this.working.values()) d.pack();
    // The old tree is garbage now (recorded before the swap): removed in the background.
    void rm(trash, { recursive: true, force: true }).catch(() => undefined);
  }

  /**
   * Finishes or undoes a restore a crash interrupted: staging still beside an intact workspace
   * → undo (move excluded folders back, drop staging); workspace gone or swapped → finish.
   */
  private async recover(): Promise<void> {
    if (this.recovered) return;
    this.recovered = true;
    let journal: Journal | undefined;
    try {
      journal = JSON.parse(await readFile(this.journalPath, "utf8")) as Journal;
    } catch {
      journal = undefined;
    }
    if (journal) {
      const stagingThere = await exists(journal.staging);
      const wsThere = await exists(this.dir);
      if (stagingThere && wsThere) {
        for (const rel of journal.moved) {
          const from = path.join(journal.staging, ...rel.split("/"));
          const to = path.join(this.dir, ...rel.split("/"));
          if ((await exists(from)) && !(await exists(to))) await rename(from, to).catch(() => undefined);
        }
      } else {
        if (stagingThere) await rename(journal.staging, this.dir);
        await this.saveHead({ ...(await this.loadHead()), id: journal.target });
      }
      await rm(this.journalPath, { force: true });
    }
    // Leftovers of interrupted restores (never the workspace itself).
    let names: string[] = [];
    try {
      names = await readdir(this.storeDir);
    } catch {
      return;
    }
    await Promise.all(
      names.filter((n) => /^(staging|trash)-[0-9a-f]+$/.test(n)).map((n) => rm(path.join(this.storeDir, n), { recursive: true, force: true })),
    );
  }

  // ---- retention -------------------------------------------------------------------------

  private async pruneNow(): Promise<{ removed: string[] }> {
    const head = await this.loadHead();
    const records = await this.allRecords(); // newest first
    const now = Date.now();
    const keep: SnapshotRecord[] = [];
    const removed: string[] = [];
    for (const r of records) {
      const isHead = r.id === head?.id;
      const tooMany = keep.length >= this.retention.maxSnapshots;
      const tooOld = now - r.createdAt > this.retention.maxAgeMs;
      if (!isHead && (tooMany || tooOld)) removed.push(r.id);
      else keep.push(r);
    }
    // Bytes: drop the oldest until the live objects fit (estimated per snapshot as unique blob bytes).
    let live = await this.liveSet(keep);
    while (live.bytes > this.retention.maxBytes && keep.length > 1) {
      const victim = keep.findLast((r) => r.id !== head?.id);
      if (!victim) break;
      keep.splice(keep.indexOf(victim), 1);
      removed.push(victim.id);
      live = await this.liveSet(keep);
    }
    if (removed.length === 0) return { removed };
    for (const id of removed) await rm(path.join(this.snaps, `${id}.json`), { force: true });
    await this.sweep(this.trees, live.trees, false);
    await this.sweep(this.blobs, live.blobs, true);
    this.knownBlobs.clear();
    return { removed };
  }

  private async liveSet(records: SnapshotRecord[]): Promise<{ trees: Set<string>; blobs: Set<string>; bytes: number }> {
    const trees = new Set<string>();
    const blobs = new Set<string>();
    let bytes = 0;
    for (const r of records) {
      for (const h of Object.values(r.dirs)) {
        if (trees.has(h)) continue;
        trees.add(h);
        const files = await this.readTree(h).catch(() => new Map<string, SnapshotFile>());
        for (const f of files.values()) {
          if (blobs.has(f.h)) continue;
          blobs.add(f.h);
          bytes += f.l ? 0 : f.s;
        }
      }
    }
    return { trees, blobs, bytes };
  }

  private async sweep(base: string, live: Set<string>, fanout: boolean): Promise<void> {
    let names: string[];
    try {
      names = await readdir(base);
    } catch {
      return;
    }
    for (const n of names) {
      if (fanout) {
        const sub = path.join(base, n);
        const inner = await readdir(sub).catch(() => [] as string[]);
        for (const m of inner) if (!live.has(n + m) && !m.includes(".tmp-")) await rm(path.join(sub, m), { force: true });
      } else if (!live.has(n) && !n.includes(".tmp-")) await rm(path.join(base, n), { force: true });
    }
  }
}

function sameEntry(a: SnapshotFile | undefined, b: SnapshotFile): boolean {
  return a !== undefined && a.h === b.h && a.s === b.s && a.m === b.m && a.t === b.t && Boolean(a.l) === Boolean(b.l);
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}
