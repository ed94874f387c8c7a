// Snapshot-store tests: a temporary directory for the file (made before, removed after), and a
// fresh workspace + store directory per case, with the policy time travel uses by default.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import { isCredentialPath } from "../../src/guards/credentials.js";
import { SnapshotStore, type RetentionPolicy } from "../../src/snapshots/store.js";

export const policy = { ignoreNames: [".git", "node_modules"], excludePath: (rel: string) => isCredentialPath(rel) };
export const lots: RetentionPolicy = { maxSnapshots: 1000, maxAgeMs: 1e12, maxBytes: 1e12 };

/** Registers the file's temporary directory (`<tmpdir>/<prefix>…`); `tmp()` is its path once made. */
export function snapshotCases(prefix: string) {
  let tmp = "";
  let n = 0;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), prefix));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  return {
    tmp: () => tmp,
    /** A new case: an empty workspace `dir`, its `storeDir` and a store over them. */
    async fresh(retention: RetentionPolicy = lots) {
      const base = path.join(tmp, `case-${++n}`);
      const dir = path.join(base, "ws");
      const storeDir = path.join(base, "store");
      await mkdir(dir, { recursive: true });
      return { dir, storeDir, store: new SnapshotStore(dir, storeDir, policy, retention) };
    },
  };
}
