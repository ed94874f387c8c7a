/**
 * What a thread's snapshot store keeps on the agent's heap between snapshots, and what that
 * costs every full garbage collection of the agent's process. Ours: the working set packed as
 * tree text (one string per directory). Anchor, same store, same run: the same working set
 * unpacked into one object per file (how it was kept before, and what a snapshot unpacks).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { SnapshotStore } from "../src/snapshots/store.js";
import { benchWorkspace, fmt, median } from "./fixtures.js";

setFlagsFromString("--expose_gc");
const collect = runInNewContext("gc") as () => void;

/** Heap used after full collections (bytes). */
function settledHeap(): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

/** Median ms of one full collection with everything alive. */
function fullGcMs(runs: number): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    collect();
    times.push(performance.now() - t0);
  }
  return median(times);
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const files = quick ? 10_000 : 100_000;
  const dir = await benchWorkspace(files);
  const storeDir = await mkdtemp(path.join(os.tmpdir(), "wb-bench-snapheap-"));
  try {
    const before = settledHeap();
    const baseGc = fullGcMs(9);
    const store = new SnapshotStore(dir, storeDir, { ignoreNames: [], excludePath: () => false }, { maxSnapshots: 100, maxAgeMs: 1e12, maxBytes: 1e13 });
    await store.snapshot();
    const packedHeap = settledHeap() - before;
    const packedGc = fullGcMs(9);
    // The anchor: every directory unpacked (the working set is private; a snapshot reading a
    // directory does exactly this through `files`).
    const working = (store as unknown as { working: Map<string, { files: Map<string, unknown> }> }).working;
    let entries = 0;
    for (const d of working.values()) entries += d.files.size;
    if (entries !== files) throw new Error(`expected ${files} entries in the working set, found ${entries}`);
    const unpackedHeap = settledHeap() - before;
    const unpackedGc = fullGcMs(9);
    return [
      "## Snapshot store on the heap",
      "",
      `One snapshot of the ${files.toLocaleString("en-US")}-file workspace, then: heap the store keeps (after full collections) and the`,
      `median time of one full collection with it alive (9 runs; ${fmt(baseGc)} ms before the store existed). Anchor, same run: the same`,
      "working set unpacked into one object per file, as it was kept before.",
      "",
      "| working set | heap kept | full GC | vs unpacked (heap, GC) |",
      "|---|---|---|---|",
      `| packed (tree text per directory) | ${fmt(packedHeap / 1024 / 1024)} MB | ${fmt(packedGc)} ms | ${fmt(packedHeap / unpackedHeap)}×, ${fmt(packedGc / unpackedGc)}× |`,
      `| unpacked (anchor) | ${fmt(unpackedHeap / 1024 / 1024)} MB | ${fmt(unpackedGc)} ms | 1× |`,
    ].join("\n");
  } finally {
    await rm(storeDir, { recursive: true, force: true });
  }
}
