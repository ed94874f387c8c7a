/**
 * Time travel for a workspace on another machine (SSH, a container, any `Environment`): the
 * local {@link SnapshotStore} records and restores a host-side mirror of the remote files, and
 * this façade keeps the mirror equal to the remote — a pull (listing, then the bytes of what
 * changed) before every snapshot, a push of just the entries that differ after every restore.
 *
 * Round trips per operation: a snapshot after a tool wrote known paths, 2 (`find` of those paths,
 * `tar` of the changed files; 1 when nothing changed); after `run_command`, the same over the whole
 * workspace; a restore, a full pull plus one push per 64 MiB of content. The mirror costs one
 * uncompressed copy of the recorded files on the host (next to the store).
 */
import path from "node:path";
import { sha256 } from "./format.js";
import { Mirror } from "./mirror.js";
import { fetchRefusal, type ListingPolicy, type RemoteListing } from "./remoteListing.js";
import { planRestore } from "./remotePlan.js";
import type { PushEntry, RemoteWorkspace } from "./remoteWorkspace.js";
import type { RestoreResult, SnapshotFile, SnapshotHead, SnapshotInfo, SnapshotStore } from "./store.js";

/** Past this many changed paths the mirror is re-read whole by the store (one local stat pass). */
const MAX_PULLED_PATHS = 2000;

/** The store operations time travel uses; the local store and the remote façade both have them. */
export type ThreadSnapshots = Pick<
  SnapshotStore,
  "peekHead" | "headId" | "headInfo" | "assign" | "resolve" | "list" | "has" | "manifest" | "readBlob" | "warm" | "matchesDisk" | "capture" | "openLook" | "protectBaseline" | "flagChangesFrom" | "commitCaptured" | "snapshot" | "restore" | "restorePaths" | "prune" | "storeBytes"
>;

export class RemoteSnapshotStore implements ThreadSnapshots {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly mirror: Mirror;

  constructor(
    /** The workspace directory on the remote machine (the thread's `ws.dir`). */
    readonly dir: string,
    /** The local store of the mirror. */
    readonly inner: SnapshotStore,
    private readonly remote: RemoteWorkspace,
    private readonly policy: ListingPolicy & { maxSnapshotBytes: number },
  ) {
    this.mirror = new Mirror(inner.dir);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Checks once that the remote side can be snapshotted (GNU tools there); rejects with the reason. */
  ready(): Promise<void> {
    return this.remote.probe();
  }

  peekHead(): Readonly<SnapshotHead> | undefined {
    return this.inner.peekHead();
  }
  headId(): Promise<string | undefined> {
    return this.inner.headId();
  }
  headInfo(): ReturnType<SnapshotStore["headInfo"]> {
    return this.inner.headInfo();
  }
  assign(id: string): Promise<void> {
    return this.inner.assign(id);
  }
  resolve(id: string): Promise<string | undefined> {
    return this.inner.resolve(id);
  }
  list(): Promise<SnapshotInfo[]> {
    return this.inner.list();
  }
  has(id: string): Promise<boolean> {
    return this.inner.has(id);
  }
  manifest(id: string): ReturnType<SnapshotStore["manifest"]> {
    return this.inner.manifest(id);
  }
  readBlob(hash: string): Promise<Buffer> {
    return this.inner.readBlob(hash);
  }
  warm(): Promise<number | undefined> {
    return this.inner.warm();
  }
  /** The mirror is not the remote workspace: a listing here proves nothing there. */
  matchesDisk(): Promise<boolean> {
    return Promise.resolve(false);
  }
  prune(): ReturnType<SnapshotStore["prune"]> {
    return this.inner.prune();
  }
  storeBytes(): Promise<number> {
    return this.inner.storeBytes();
  }
  /** A remote file cannot be read before the queue: callers wait for the baseline instead. */
  capture(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  openLook(): void {}
  protectBaseline(): void {}
  /** A remote look cannot tell what a command changed under it (tools wait for it instead). */
  flagChangesFrom(at: number | undefined): boolean {
    return at === undefined;
  }
  commitCaptured(captured: ReadonlyMap<string, SnapshotFile | null>, alias: string): Promise<string> {
    return this.inner.commitCaptured(captured, alias);
  }

  /** Pulls what may have changed (`paths`: absolute remote paths; else everything), then records the mirror. */
  snapshot(options: Parameters<SnapshotStore["snapshot"]>[0] = {}): Promise<string> {
    return this.serial(async () => {
      const rels = options.paths ? this.relsOf(options.paths) : undefined;
      const hadHead = (await this.inner.headId()) !== undefined;
      const { changed } = await this.pull(rels);
      const reason = options.reason ?? (options.paths ? "tool" : "scan");
      const assign = options.assign ? { assign: true } : {};
      if (!hadHead || changed.length > MAX_PULLED_PATHS) return this.inner.snapshot({ reason, ...assign });
      return this.inner.snapshot({ paths: changed.map((r) => this.mirror.abs(r)), reason, ...assign });
    });
  }

  restore(id: string, options: { pin?: boolean; changed?: readonly string[] } = {}): Promise<RestoreResult> {
    return this.serial(async () => {
      const { changed, listing } = await this.pull(undefined);
      const result = await this.inner.restore(id, { ...(options.pin ? { pin: true } : {}), changed: changed.map((r) => this.mirror.abs(r)) });
      return this.pushed(result, result.restored, listing);
    });
  }

  restorePaths(id: string, paths: readonly string[]): Promise<RestoreResult> {
    return this.serial(async () => {
      const { listing } = await this.pull(undefined);
      const result = await this.inner.restorePaths(id, paths);
      return this.pushed(result, result.restored, listing);
    });
  }

  /** Writes on the remote what the mirror's restore changed; entries it had to keep are read back. */
  private async pushed(result: RestoreResult, restored: string, listing: RemoteListing): Promise<RestoreResult> {
    if (result.previous === restored) return result;
    const [before, after] = await Promise.all([this.inner.manifest(result.previous), this.inner.manifest(restored)]);
    const plan = planRestore(before, after, listing.entries);
    const put: PushEntry[] = [];
    for (const { rel, entry } of plan.put) {
      put.push({ rel, kind: entry.l ? "symlink" : "file", data: await this.inner.readBlob(entry.h), mode: entry.m, mtimeMs: entry.t });
    }
    const kept = [...plan.kept, ...(await this.remote.push({ remove: plan.remove, mkdir: plan.mkdir, put }))];
    const all = [...new Set([...(result.kept ?? []), ...kept])];
    if (kept.length > 0) {
      // The mirror took the target there; the remote kept what it had: read that back.
      const { changed } = await this.pull(kept);
      await this.inner.snapshot({ paths: changed.map((r) => this.mirror.abs(r)), reason: "scan" });
    }
    return { ...result, ...(all.length > 0 ? { kept: all } : {}) };
  }

  /** Relative paths of absolute remote paths inside the workspace ("" for the root itself). */
  private relsOf(paths: readonly string[]): string[] | undefined {
    const rels: string[] = [];
    for (const p of paths) {
      const rel = path.posix.relative(this.dir, p);
      if (rel === "") return undefined;
      if (rel.startsWith("..") || path.posix.isAbsolute(rel)) continue;
      rels.push(rel);
    }
    return rels;
  }

  /**
   * Brings the mirror in line with the remote for `rels` (with everything below them), or for the
   * whole workspace. Returns the mirror paths that changed and the listing it compared against.
   */
  private async pull(rels: readonly string[] | undefined): Promise<{ changed: string[]; listing: RemoteListing }> {
    await this.mirror.ensureRoot();
    if (rels && rels.length === 0) return { changed: [], listing: { entries: new Map(), skipped: [] } };
    const [listing, current] = await Promise.all([this.remote.list(rels), this.inner.current()]);
    const scope = rels ? new Set(rels) : undefined;
    const inScope = (rel: string) => {
      if (!scope) return true;
      for (let i = rel.length; i !== -1; i = rel.lastIndexOf("/", i - 1)) if (scope.has(rel.slice(0, i))) return true;
      return false;
    };
    const changed = new Set<string>();
    try {
      await this.removeGone(current, listing, inScope, changed);
      const fetch = await this.applyListing(current, listing, changed);
      const missing = new Set(fetch);
      await this.remote.fetch(fetch, this.policy.maxFileBytes, this.policy.maxSnapshotBytes, async (rel, data, mode, mtimeMs) => {
        missing.delete(rel);
        await this.mirror.putFile(rel, data, mode, mtimeMs);
        changed.add(rel);
      });
      // Gone between the listing and the fetch.
      for (const rel of missing) {
        await this.mirror.remove(rel);
        changed.add(rel);
      }
    } finally {
      await this.mirror.close();
    }
    this.inner.noteSkipped(listing.skipped, rels);
    return { changed: [...changed], listing };
  }

  /** Removes from the mirror what the remote no longer has (or has as another kind of entry). */
  private async removeGone(current: { files: Map<string, SnapshotFile>; dirs: Set<string> }, listing: RemoteListing, inScope: (rel: string) => boolean, changed: Set<string>): Promise<void> {
    const gone = (rel: string, kind: "file" | "symlink" | "directory") => {
      const e = listing.entries.get(rel);
      return !e || e.type !== kind || (kind === "file" && fetchRefusal(e, this.policy.maxFileBytes) !== undefined);
    };
    for (const [rel, f] of current.files) if (inScope(rel) && gone(rel, f.l ? "symlink" : "file")) changed.add(rel);
    for (const rel of current.dirs) if (rel !== "" && inScope(rel) && gone(rel, "directory")) changed.add(rel);
    // Outermost first: removing a directory removes what is below it.
    for (const rel of [...changed].sort((a, b) => a.split("/").length - b.split("/").length)) await this.mirror.remove(rel);
  }

  /** Makes new directories and links in the mirror, fixes modes; returns the files to fetch. */
  private async applyListing(current: { files: Map<string, SnapshotFile>; dirs: Set<string> }, listing: RemoteListing, changed: Set<string>): Promise<string[]> {
    const fetch: string[] = [];
    for (const [rel, e] of listing.entries) {
      const was = changed.has(rel) ? undefined : current.files.get(rel);
      if (e.type === "directory") {
        if (!current.dirs.has(rel) || changed.has(rel)) {
          await this.mirror.ensureDir(rel);
          changed.add(rel);
        }
      } else if (e.type === "symlink") {
        if (!was?.l || was.h !== sha256(Buffer.from(e.target!, "utf8"))) {
          await this.mirror.putLink(rel, e.target!);
          changed.add(rel);
        }
      } else if (e.type === "file" && fetchRefusal(e, this.policy.maxFileBytes) === undefined) {
        if (!was || was.l || was.s !== e.size || Math.abs(was.t - e.mtimeMs) >= 1) fetch.push(rel);
        else if ((was.m & 0o777) !== (e.mode & 0o777)) {
          await this.mirror.chmod(rel, e.mode);
          changed.add(rel);
        }
      }
    }
    return fetch;
  }
}
