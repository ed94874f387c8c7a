/**
 * Per-thread snapshot stores under one workspace root. Stores live in `rootDir/.workbench-snapshots/`
 * — a dot-name no thread directory can have (plain thread ids never start with a dot; encoded
 * ones contain `~`), so no thread can see or reach another thread's history.
 */
import { createHash } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import type { Environment } from "../environment/environment.js";
import { DEFAULT_IGNORED_NAMES } from "../changes/ignore-names.js";
import { isCredentialPath } from "../guards/credentials.js";
import { threadDirName } from "../workspace.js";
import { diffSnapshots, type ChangeSet } from "./changes.js";
import { RemoteSnapshotStore, type ThreadSnapshots } from "./remoteStore.js";
import { RemoteWorkspace } from "./remoteWorkspace.js";
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_SNAPSHOT_BYTES, SnapshotStore, type RetentionPolicy, type SnapshotPolicy } from "./store.js";

export {
  SnapshotStore,
  SnapshotNotFoundError,
  pendingSnapshotId,
  isPendingSnapshotId,
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_SNAPSHOT_BYTES,
  type SnapshotInfo,
  type SnapshotFile,
  type SnapshotPolicy,
  type RetentionPolicy,
  type RestoreResult,
  type SkippedEntry,
} from "./store.js";
export { RemoteSnapshotStore, type ThreadSnapshots } from "./remoteStore.js";
export { RemoteSnapshotError } from "./remoteWorkspace.js";
export { diffSnapshots, MAX_DIFF_FILE_BYTES, type ChangeSet, type FileChange } from "./changes.js";

/** Name of the directory under `rootDir` holding every thread's snapshot store. */
export const SNAPSHOT_DIR_NAME = ".workbench-snapshots";

export const DEFAULT_RETENTION: RetentionPolicy = Object.freeze({
  maxSnapshots: 200,
  maxAgeMs: 30 * 24 * 60 * 60 * 1000,
  maxBytes: 1024 * 1024 * 1024,
});

/** Options of time travel (the FileManager's `timeTravel`). */
export const timeTravelOptionsSchema = z
  .object({
    /** On a rewind or fork: `"auto"` (default) restores the checkpoint's files, `"ask"` interrupts the run for the app to decide, `"off"` leaves the files. */
    restore: z.enum(["auto", "ask", "off"]).optional(),
    /** Names never snapshotted and left as they are on restore (default `[".git", "node_modules"]`). */
    ignoreNames: z.array(z.string().min(1).regex(/^[^\\/]+$/, "plain entry names, no slashes")).optional(),
    /** Extra globs (base name, or a trailing path with `/`) never snapshotted. */
    exclude: z.array(z.string().min(1)).optional(),
    /** Files larger than this are not snapshotted (listed as skipped in `snapshots()`, left as they are on restore). Default 64 MiB. */
    maxFileBytes: z.number().int().positive().optional(),
    /** Bytes one snapshot reads at most (new or changed files); files past it are skipped. Default 1 GiB. */
    maxSnapshotBytes: z.number().int().positive().optional(),
    /**
     * Also snapshot threads whose files are on another machine (SSH, Docker container mode, any
     * Environment without local files), through the environment's exec: a listing plus the
     * changed files per snapshot, a host-side mirror of the recorded files. Default false (the
     * first snapshot copies the whole workspace to this host).
     */
    remote: z.boolean().optional(),
    /**
     * Host directory for the snapshot stores. Default: `<rootDir>/.workbench-snapshots` for local
     * workspaces; for threads on another machine (SSH, containers)
     * `~/.cache/langgraph-workbench/snapshots/<hash of environment kind and rootDir>`, with a
     * mirror of the recorded files beside each store.
     */
    storeDir: z.string().min(1).optional(),
    /**
     * Which snapshots are kept, oldest dropped first (the one the workspace is at always stays):
     * `maxSnapshots` (default 200), `maxAgeMs` (default 30 days), `maxBytes` of stored
     * (compressed) blobs (default 1 GiB).
     */
    retention: z
      .object({
        /** Most snapshots kept (default 200). */
        maxSnapshots: z.number().int().positive().optional(),
        /** Snapshots older than this are dropped, in ms (default 30 days). */
        maxAgeMs: z.number().positive().optional(),
        /** Stored bytes of the blobs the kept snapshots use, at most (default 1 GiB). */
        maxBytes: z.number().positive().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** Options of time travel: what callers write, the schema's input (it applies no defaults, so input and output agree). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface TimeTravelOptions extends z.input<typeof timeTravelOptionsSchema> {}

/** One store per thread, created on first use and kept (LRU-bounded; stores hold no handles). */
export class SnapshotStores {
  readonly baseDir: string;
  private readonly stores = new Map<string, SnapshotStore>();
  /** Threads on other machines: one façade per thread and environment object. */
  private readonly remote = new Map<string, { env: Environment; store: RemoteSnapshotStore }>();
  private readonly retention: RetentionPolicy;
  private readonly ignoreNames: readonly string[];
  private readonly exclude: readonly string[];
  private readonly caps: Pick<SnapshotPolicy, "maxFileBytes" | "maxSnapshotBytes">;
  private readonly storeDirOption: string | undefined;

  constructor(
    readonly rootDir: string,
    options: TimeTravelOptions = {},
  ) {
    this.storeDirOption = options.storeDir !== undefined ? path.resolve(options.storeDir) : undefined;
    this.baseDir = this.storeDirOption ?? path.join(rootDir, SNAPSHOT_DIR_NAME);
    this.retention = { ...DEFAULT_RETENTION, ...options.retention };
    this.ignoreNames = options.ignoreNames ?? DEFAULT_IGNORED_NAMES;
    this.exclude = options.exclude ?? [];
    this.caps = {
      ...(options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {}),
      ...(options.maxSnapshotBytes !== undefined ? { maxSnapshotBytes: options.maxSnapshotBytes } : {}),
    };
  }

  private policy(): SnapshotPolicy {
    return { ignoreNames: this.ignoreNames, excludePath: (rel) => isCredentialPath(rel, this.exclude), ...this.caps };
  }

  /** The store of the workspace directory `dir` of `threadId`. */
  storeFor(threadId: string, dir: string): SnapshotStore {
    return this.cached(threadId, dir, path.join(this.baseDir, threadDirName(threadId)));
  }

  private cached(threadId: string, dir: string, storeDir: string): SnapshotStore {
    const key = storeDir;
    let store = this.stores.get(key);
    if (store && store.dir !== dir) store = undefined;
    if (store) this.stores.delete(key);
    else store = new SnapshotStore(dir, storeDir, this.policy(), this.retention);
    this.stores.set(key, store);
    if (this.stores.size > 1024) this.stores.delete(this.stores.keys().next().value as string);
    return store;
  }

  /**
   * The store of a thread whose files are on another machine, reached through `env`: the local
   * store of a host-side mirror (`<store>/mirror`), kept equal to `dir` on the remote.
   */
  remoteStoreFor(threadId: string, dir: string, env: Environment): RemoteSnapshotStore {
    const base = this.storeDirOption ?? path.join(os.homedir(), ".cache", "langgraph-workbench", "snapshots", createHash("sha256").update(`${env.kind}:${this.rootDir}`).digest("hex").slice(0, 16));
    const storeDir = path.join(base, threadDirName(threadId));
    const key = `${storeDir}\0${dir}`;
    const hit = this.remote.get(key);
    if (hit?.env === env) {
      this.remote.delete(key);
      this.remote.set(key, hit);
      return hit.store;
    }
    const policy = this.policy();
    const caps = { maxFileBytes: policy.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, maxSnapshotBytes: policy.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES };
    const workspace = new RemoteWorkspace(env, dir, { ignoreNames: policy.ignoreNames, excludePath: policy.excludePath, maxFileBytes: caps.maxFileBytes });
    const store = new RemoteSnapshotStore(dir, this.cached(threadId, path.join(storeDir, "mirror"), storeDir), workspace, { ...policy, ...caps });
    this.remote.set(key, { env, store });
    if (this.remote.size > 1024) this.remote.delete(this.remote.keys().next().value as string);
    return store;
  }

  /** Unified diff and file list between two snapshots of a thread. */
  changes(store: ThreadSnapshots, from: string, to: string, paths?: readonly string[]): Promise<ChangeSet> {
    return diffSnapshots(store, from, to, paths);
  }
}
