/**
 * The application of a restore to the workspace: the target (a whole stored snapshot, or the
 * files as they are with some paths taken from one), its rewrite in place through
 * {@link applyInPlace} (only what differs, through directories held by descriptor), and the
 * working set afterwards. Entries come out of the object store into a temporary file in the store
 * directory, then are renamed (or linked) into place.
 */
import { randomBytes } from "node:crypto";
import { chmod, link, rename, rm, symlink, unlink, utimes } from "node:fs/promises";
import path from "node:path";
import pLimit from "p-limit";
import type { DirHandle } from "../environment/dirHandle.js";
import { applyInPlace, dirsToVisit, sameContent, type TreeMap } from "./applyInPlace.js";
import { isUnder, parentOf, type SnapshotFile, type SnapshotRecord } from "./format.js";
import type { ObjectStore } from "./objects.js";
import type { SnapshotRecords } from "./snapshotRecords.js";
import { WorkingDir } from "./workingDir.js";
import { STREAM_ABOVE } from "./workspaceScan.js";

/**
 * What a restore brings the workspace to: directories `keys`, the entries of the visited ones in
 * `trees` (the others as they are), their tree hashes when it is a stored snapshot.
 */
export interface RestoreTarget {
  keys: ReadonlySet<string>;
  visit: ReadonlySet<string>;
  trees: ReadonlyMap<string, ReadonlyMap<string, SnapshotFile>>;
  hashes: Record<string, string> | undefined;
}

/** The target of a whole restore to `target`: only the directories that differ are visited. */
export async function recordTarget(working: ReadonlyMap<string, WorkingDir>, target: SnapshotRecord, records: SnapshotRecords): Promise<RestoreTarget> {
  const differs = (rel: string) => working.get(rel)?.hash !== target.dirs[rel];
  const visit = dirsToVisit(working.keys(), Object.keys(target.dirs), differs);
  const trees = await records.loadDirs(target, visit);
  return { keys: new Set(Object.keys(target.dirs)), visit, trees, hashes: target.dirs };
}

/**
 * The target of a per-path restore: the files as they are, with `rels` (files, or directories
 * with everything below) replaced by what `record` has there (nothing, where it has nothing).
 */
export async function pathsTarget(working: ReadonlyMap<string, WorkingDir>, record: SnapshotRecord, rels: readonly string[], records: SnapshotRecords): Promise<RestoreTarget> {
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
    const entry = record.dirs[parent] !== undefined ? (await records.readTree(record.dirs[parent]!)).get(name) : undefined;
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
      trees.set(k, await records.readTree(h));
    }
  }
  const visit = dirsToVisit(working.keys(), keys, (rel) => trees.has(rel));
  return { keys, visit, trees, hashes: undefined };
}

/**
 * After a rewrite: the working set follows the target — directories it does not have go, the
 * visited ones take its entries.
 */
export function adoptTarget(working: Map<string, WorkingDir>, target: RestoreTarget, visited: Iterable<string>): void {
  const { keys, trees, hashes } = target;
  for (const rel of [...working.keys()]) if (!keys.has(rel)) working.delete(rel);
  for (const rel of visited) {
    const tree = trees.get(rel);
    if (!tree) continue;
    const before = working.get(rel)?.files;
    const files = new Map(tree);
    // Untouched files keep the mtimes they have on disk (the stat cache stays exact).
    if (before) for (const [n, f] of files) if (sameContent(before.get(n), f)) files.set(n, before.get(n)!);
    const d = new WorkingDir(files, hashes?.[rel]);
    if (hashes) {
      // Sealed as the stored tree it is (hash and bytes both set): the next look that finds it
      // as listed does not make and hash its tree text again.
      let bytes = 0;
      for (const f of files.values()) bytes += f.s;
      d.bytes = bytes;
      d.pack();
    }
    working.set(rel, d);
  }
}

/** Writes the entries of a restore into the workspace from the object store. */
export class RestoreWriter {
  private readonly io = pLimit(16);

  constructor(
    /** The store directory (temporary copies are made there, outside the workspace). */
    private readonly storeDir: string,
    private readonly objects: ObjectStore,
  ) {}

  /** Rewrites the workspace under `root` from `working` (what it holds now) into `target`, in place where it differs. */
  apply(root: DirHandle, working: ReadonlyMap<string, WorkingDir>, target: RestoreTarget): ReturnType<typeof applyInPlace> {
    const { keys, visit, trees } = target;
    const current: TreeMap = { keys: () => working.keys(), get: (rel) => working.get(rel)?.files, has: (rel) => working.has(rel) };
    const wanted: TreeMap = { keys: () => keys.values(), get: (rel) => trees.get(rel) ?? working.get(rel)?.files, has: (rel) => keys.has(rel) };
    return applyInPlace(root, current, wanted, visit, {
      put: (dir, name, entry, replace) => this.putEntry(dir, name, entry, replace),
      putAll: (dir, _rel, items) => this.putEntries(dir, items),
    });
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
      if (f.l) await symlink(await this.objects.get(f.h), tmp);
      else {
        await this.extractBlob(f, tmp);
        await chmod(tmp, f.m & 0o777);
        await utimes(tmp, f.t / 1000, f.t / 1000);
      }
      // `rename` replaces what is at the name (never following a link there); `link` takes a free
      // name only. A file is unlinked first: ext4 flushes a file renamed over another at once
      // (auto_da_alloc; ~1 ms a file, see blobWorker.ts's putOne).
      if (replace && !f.l) await unlink(dir.at(name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
      });
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
}
