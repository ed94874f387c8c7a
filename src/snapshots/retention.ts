/**
 * Retention of one snapshot store: which records go (count, age, then bytes, oldest first; the
 * head always stays) and the sweep of the objects no kept record uses. The choice of records is
 * pure ({@link chooseByCountAndAge}); the byte budget counts stored (compressed) blob bytes, read
 * only when the raw sizes from the trees already exceed it. Blobs are swept by the object layer
 * (objects.ts: loose files removed, packs with enough dead bytes rewritten).
 */
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import type { SnapshotFile, SnapshotRecord } from "./format.js";
import type { ObjectStore } from "./objects.js";

export interface RetentionPolicy {
  /** Most snapshots kept (oldest dropped first). */
  maxSnapshots: number;
  /** Snapshots older than this are dropped (ms). */
  maxAgeMs: number;
  /** Stored bytes of the blobs the kept snapshots use, at most (oldest dropped until they fit). */
  maxBytes: number;
}

/** Records (newest first) split into kept and removed by count and age; the head is always kept. */
export function chooseByCountAndAge(records: readonly SnapshotRecord[], head: string | undefined, retention: RetentionPolicy, now: number): { keep: SnapshotRecord[]; removed: string[] } {
  const keep: SnapshotRecord[] = [];
  const removed: string[] = [];
  for (const r of records) {
    const isHead = r.id === head;
    const tooMany = keep.length >= retention.maxSnapshots;
    const tooOld = now - r.createdAt > retention.maxAgeMs;
    if (!isHead && (tooMany || tooOld)) removed.push(r.id);
    else keep.push(r);
  }
  return { keep, removed };
}

export interface PruneDeps {
  head: string | undefined;
  /** Every record, newest first. */
  records: SnapshotRecord[];
  retention: RetentionPolicy;
  readTree(hash: string): Promise<Map<string, SnapshotFile>>;
  /** The blobs, loose and packed: their stored sizes, and their sweep. */
  objects: Pick<ObjectStore, "storedSizes" | "gc">;
  removeRecord(id: string): Promise<void>;
  dirs: { trees: string };
}

/** Applies the policy: removes records, then every tree, chunk and blob no kept record uses. Returns the removed ids. */
export async function pruneStore(deps: PruneDeps): Promise<string[]> {
  const { keep, removed } = chooseByCountAndAge(deps.records, deps.head, deps.retention, Date.now());
  // Bytes: drop the oldest until the live objects fit (the unique blobs' stored bytes). Their raw
  // sizes (from the trees) bound that from above: only past the bound are the blobs stat'ed.
  const stored = new Map<string, number>();
  const overBudget = async (l: { blobs: Map<string, number>; bytes: number }) =>
    l.bytes > deps.retention.maxBytes && (await storedBytes(l.blobs, stored, deps.objects)) > deps.retention.maxBytes;
  let live = await liveSet(keep, deps.readTree);
  while (keep.length > 1 && (await overBudget(live))) {
    const victim = keep.findLast((r) => r.id !== deps.head);
    if (!victim) break;
    keep.splice(keep.indexOf(victim), 1);
    removed.push(victim.id);
    live = await liveSet(keep, deps.readTree);
  }
  if (removed.length === 0) return removed;
  for (const id of removed) await deps.removeRecord(id);
  await sweep(deps.dirs.trees, live.trees);
  await deps.objects.gc(live.blobs);
  return removed;
}

/** Trees, chunks and blobs `records` use; `blobs` maps each to its raw size (0 for link targets), `bytes` sums those. */
export async function liveSet(records: readonly SnapshotRecord[], readTree: PruneDeps["readTree"]): Promise<{ trees: Set<string>; blobs: Map<string, number>; bytes: number }> {
  const trees = new Set<string>();
  const blobs = new Map<string, number>();
  let bytes = 0;
  for (const r of records) {
    for (const c of r.chunks ?? []) trees.add(c);
    for (const h of Object.values(r.dirs)) {
      if (trees.has(h)) continue;
      trees.add(h);
      const files = await readTree(h).catch(() => new Map<string, SnapshotFile>());
      for (const f of files.values()) {
        if (blobs.has(f.h)) continue;
        blobs.set(f.h, f.l ? 0 : f.s);
        bytes += f.l ? 0 : f.s;
      }
    }
  }
  return { trees, blobs, bytes };
}

/** What the blobs of `blobs` (link targets aside, as in the raw count) take in the store; `cache` spans one prune. */
async function storedBytes(blobs: Map<string, number>, cache: Map<string, number>, objects: PruneDeps["objects"]): Promise<number> {
  const ask = [...blobs].filter(([h]) => !cache.has(h));
  const sizes = await objects.storedSizes(ask);
  ask.forEach(([h], i) => cache.set(h, sizes[i] ?? 0));
  let total = 0;
  for (const [h, raw] of blobs) total += raw === 0 ? 0 : (cache.get(h) ?? 0);
  return total;
}

/** Removes the objects under `base` that `live` does not name; temp files stay. */
async function sweep(base: string, live: { has(name: string): boolean }): Promise<void> {
  let names: string[];
  try {
    names = await readdir(base);
  } catch {
    return;
  }
  for (const n of names) if (!live.has(n) && !n.includes(".tmp-")) await rm(path.join(base, n), { force: true });
}
