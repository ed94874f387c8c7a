// Change tracking: one interface, three implementations, a pool. See ./types.ts for the contract.
export type { ChangeTracker, TrackerKind } from "./types.js";
export { BaseTracker, type TrackerOptions } from "./base.js";
export { ChangeRecord, MAX_RECORDED_PATHS, MAX_RECORDED_PATH_CHARS, type ChangeRecordOptions, type ChangesSince } from "./changeRecord.js";
export { DEFAULT_IGNORED_NAMES } from "./ignore-names.js";
export { PollingTracker, DEFAULT_POLL_INTERVAL_MS, type PollingTrackerOptions } from "./polling.js";
export { WatchingTracker, type WatchingTrackerOptions } from "./watching.js";
export { ParcelTracker } from "./parcel.js";
export { ChokidarTracker } from "./chokidar.js";
export { createChangeTracker, DEFAULT_TRACKER_KIND, TRACKER_KINDS, type CreateChangeTrackerOptions } from "./create.js";
export { TrackerPool, DEFAULT_MAX_LIVE_TRACKERS, DEFAULT_TRACKER_IDLE_MS, type TrackerPoolOptions } from "./pool.js";
