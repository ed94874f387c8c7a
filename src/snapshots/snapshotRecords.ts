/**
 * The records and trees of a snapshot store (docs/snapshot-format.md): a commit writes the tree
 * of each directory that changed, the chunks of the directory map that changed and one small
 * record; reads expand a record's chunks back into its directory map and parse trees.
 */
import { readdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import pLimit from "p-limit";
import { readStoreFiles } from "./blobWorker.js";
import { exists } from "./exists.js";
import { chunkDirMap, parseTree, sha256, treeText, type DirChunk, type SkippedEntry, type SnapshotFile, type SnapshotRecord, type StoredRecordV3 } from "./format.js";
import type { StoreFiles } from "./storeFiles.js";
import type { WorkingDir } from "./workingDir.js";

/** Tree texts a request to the blob worker reads at most (a few MiB in its capped heap). */
const TEXT_BATCH = 250;

/** How many skipped entries a record lists by name. */
export const MAX_LISTED_SKIPS = 200;

export class SnapshotRecords {
  readonly trees: string;
  readonly snaps: string;
  /** Directory-map chunks known to be stored, and parsed ones (bounded: consecutive records share most). */
  private readonly knownChunks = new Set<string>();
  private readonly chunkCache = new Map<string, DirChunk>();

  constructor(
    storeDir: string,
    private readonly files: StoreFiles,
  ) {
    this.trees = path.join(storeDir, "trees");
    this.snaps = path.join(storeDir, "snaps");
  }

  /**
   * Writes the dirty trees of `working` and the record; the id is the hash of the directory map.
   * `skips` (asked only when a new record is written): the entries seen but not recorded.
   */
  async commit(working: Map<string, WorkingDir>, parent: string | undefined, reason: string, skips: () => SkippedEntry[], changed: readonly string[] = []): Promise<string> {
    const dirs: Record<string, string> = {};
    let files = 0;
    let bytes = 0;
    for (const rel of [...working.keys()].sort()) {
      const d = working.get(rel)!;
      await this.seal(d);
      dirs[rel] = d.hash!;
      files += d.size;
      bytes += d.bytes!;
    }
    const id = sha256(JSON.stringify(dirs)).slice(0, 24);
    const file = path.join(this.snaps, `${id}.json`);
    if (id !== parent && !(await exists(file))) {
      const all = skips();
      const listed = {
        ...(all.length > 0 ? { skipped: all.slice(0, MAX_LISTED_SKIPS), skippedCount: all.length } : {}),
        ...(changed.length > 0 ? { changedWhileTaken: changed.slice(0, MAX_LISTED_SKIPS), changedWhileTakenCount: changed.length } : {}),
      };
      const { root, chunks } = chunkDirMap(Object.entries(dirs));
      for (const [h, text] of chunks) {
        if (this.knownChunks.has(h)) continue;
        await this.files.writeObject(path.join(this.trees, h), text);
        this.rememberChunk(h);
      }
      const record: StoredRecordV3 = { v: 3, id, ...(parent && parent !== id ? { parent } : {}), createdAt: Date.now(), files, bytes, reason, ...listed, root };
      await this.files.writeObject(file, JSON.stringify(record));
    }
    return id;
  }

  async readRecord(id: string): Promise<SnapshotRecord | undefined> {
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

  /** After a prune: a chunk known before may be gone. */
  forgetChunks(): void {
    this.knownChunks.clear();
  }

  /**
   * Writes the tree of `d` when it is dirty (setting its hash and bytes), and packs it: a full
   * look seals each directory as it records it, so the working set of a baseline is held as tree
   * texts (~110 bytes a file), not as objects (~250), until the commit.
   */
  async seal(d: WorkingDir): Promise<void> {
    if (d.hash === undefined || d.bytes === undefined) {
      const { text, named } = treeText(d.files);
      // Named by content, size and mode only: mtimes (kept in the object as a stat cache, and to
      // set on restore) never make the same files a different snapshot.
      const hash = sha256(named);
      await this.files.writeObject(path.join(this.trees, hash), text);
      let bytes = 0;
      for (const f of d.files.values()) bytes += f.s;
      d.hash = hash;
      d.bytes = bytes;
      d.pack(text);
    } else d.pack();
  }

  /** Every readable record, newest first. */
  async allRecords(): Promise<SnapshotRecord[]> {
    let names: string[];
    try {
      names = await readdir(this.snaps);
    } catch {
      return [];
    }
    const records = await Promise.all(names.filter((n) => n.endsWith(".json")).map((n) => this.readRecord(n.slice(0, -5))));
    return records.filter((r): r is SnapshotRecord => r !== undefined).sort((a, b) => b.createdAt - a.createdAt);
  }

  /** How many records there are (one readdir; 0 when none). */
  async count(): Promise<number> {
    return (await readdir(this.snaps).catch(() => [])).length;
  }

  removeRecord(id: string): Promise<void> {
    return rm(path.join(this.snaps, `${id}.json`), { force: true });
  }

  /** The stored texts of trees `hashes` as bytes, in order, read in the blob worker in batches (one that cannot be read throws). */
  async readTreeTexts(hashes: readonly string[]): Promise<Buffer[]> {
    const batches: string[][] = [];
    for (let i = 0; i < hashes.length; i += TEXT_BATCH) batches.push(hashes.slice(i, i + TEXT_BATCH).map((h) => path.join(this.trees, h)));
    const texts = (await Promise.all(batches.map((b) => readStoreFiles(b)))).flat();
    return texts.map((t, i) => {
      if (t === null) throw new Error(`snapshot tree ${hashes[i]} could not be read`);
      return t;
    });
  }

  async readTree(hash: string): Promise<Map<string, SnapshotFile>> {
    return parseTree(await readFile(path.join(this.trees, hash), "utf8"));
  }

  /** The trees of `record` (only the directories `only` names, when given). */
  async loadDirs(record: SnapshotRecord, only?: ReadonlySet<string>): Promise<Map<string, Map<string, SnapshotFile>>> {
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

  /** Bytes the trees, chunks and records take. */
  async storedBytes(): Promise<number> {
    let total = 0;
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
}
