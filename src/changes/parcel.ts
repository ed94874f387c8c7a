import path from "node:path";
import { ignoredPathMatcher } from "./ignore-names.js";
import { parcelHost, type ParcelEvent } from "./parcelHost.js";
import { WatchingTracker } from "./watching.js";

/**
 * Tracker on `@parcel/watcher` (native, recursive: inotify on Linux, FSEvents on macOS,
 * ReadDirectoryChangesW on Windows), run in the process's unreferenced watcher thread
 * ({@link parcelHost}) so a live watcher never keeps the process alive. `create`/`delete` events
 * (renames arrive as a pair) bump `generation`; `update` events only advance `newestMtimeMs`.
 * Every event's path goes to the change record (`changesSince`). `newestMtimeMs` is the time a
 * batch *arrived* (parcel debounces 50-500 ms), an upper bound of when the change happened.
 *
 * Known limits of parcel's inotify backend (Linux), for `generation` and `changesSince` alike: a
 * queue overflow (`IN_Q_OVERFLOW`) is dropped silently, and a directory moved in (or created with
 * subdirectories faster than parcel adds its watch) is reported alone: its contents are not
 * listed and its subdirectories are not watched, so later changes inside them go unseen — such
 * directories are therefore listed by every later `changesSince` (`noteCreated`).
 */
export class ParcelTracker extends WatchingTracker {
  readonly kind = "parcel" as const;
  private unsubscribe: (() => Promise<void>) | undefined;

  protected async openWatcher(): Promise<void> {
    const isIgnored = ignoredPathMatcher(this.dir, this.options.ignoreNames);
    this.unsubscribe = await parcelHost().subscribe(
      this.dir,
      // Exact paths, not `**/name` globs: parcel matches globs against every path it crawls,
      // which tripled its ready time at 100k files. Deeper matches are filtered below.
      this.options.ignoreNames.map((n) => path.join(this.dir, n)),
      { onEvents: (events) => this.onEvents(events, isIgnored), onError: (err) => this.watcherFailed(err) },
    );
  }

  protected async closeWatcher(): Promise<void> {
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.();
  }

  private onEvents(events: ParcelEvent[], isIgnored: (p: string) => boolean): void {
    const now = Date.now();
    let structural = false;
    let touched = false;
    for (const e of events) {
      if (this.settledBy(e.path) || isIgnored(e.path)) continue;
      this.notePath(e.path);
      if (e.type === "create") this.noteCreated(e.path);
      if (e.type === "update") touched = true;
      else structural = true;
    }
    if (structural) this.bump(now);
    else if (touched) this.noteTime(now);
  }
}
