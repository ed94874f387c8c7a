import type { TrackerOptions } from "./base.js";
import type { FileOperations } from "../environment/fileOperations.js";
import { ChokidarTracker } from "./chokidar.js";
import { isLocalFileOperations } from "../environment/locality.js";
import { ParcelTracker } from "./parcel.js";
import { PollingTracker } from "./polling.js";
import type { ChangeTracker, TrackerKind } from "./types.js";

/**
 * The tracker used when none is named. `@parcel/watcher` won the benchmark in
 * `docs/benchmarks.md` (ready time and RSS at 100k files); it falls back to polling by itself
 * when it cannot watch.
 */
export const DEFAULT_TRACKER_KIND: TrackerKind = "parcel";

export const TRACKER_KINDS: readonly TrackerKind[] = Object.freeze(["parcel", "chokidar", "polling"]);

/** Options of {@link createChangeTracker}. */
export interface CreateChangeTrackerOptions extends TrackerOptions {
  /** Implementation (default {@link DEFAULT_TRACKER_KIND}). */
  kind?: TrackerKind;
  /** Poll interval in ms for `polling`, and for the watchers' polling fallback (default 1000). */
  pollIntervalMs?: number;
  /**
   * Where `dir` lives (default: this machine). Watchers only see the local disk, so for any
   * other backend (every one for which `isLocalFileOperations(ops)` is false: SSH, docker) a {@link PollingTracker} polls
   * through `fileOps`, whatever `kind` says.
   */
  fileOps?: FileOperations;
}

/** A tracker for `dir`, not started: call `start()` (idempotent) to begin watching. */
export function createChangeTracker(dir: string, options: CreateChangeTrackerOptions = {}): ChangeTracker {
  const { kind = DEFAULT_TRACKER_KIND, pollIntervalMs, fileOps, ...common } = options ?? {};
  if (!TRACKER_KINDS.includes(kind)) {
    throw new TypeError(`kind must be one of ${TRACKER_KINDS.join(", ")}; got ${JSON.stringify(kind)}`);
  }
  if (!isLocalFileOperations(fileOps)) return new PollingTracker(dir, { ...common, intervalMs: pollIntervalMs, fileOps });
  switch (kind) {
    case "parcel":
      return new ParcelTracker(dir, { ...common, pollIntervalMs });
    case "chokidar":
      return new ChokidarTracker(dir, { ...common, pollIntervalMs });
    case "polling":
      return new PollingTracker(dir, { ...common, intervalMs: pollIntervalMs });
    default:
      throw new TypeError(`kind must be one of ${TRACKER_KINDS.join(", ")}; got ${JSON.stringify(kind)}`);
  }
}
