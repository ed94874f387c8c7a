import type { AsyncSubscription, Event } from "@parcel/watcher";
import path from "node:path";
import { ignoredPathMatcher } from "./ignore-names.js";
import { WatchingTracker } from "./watching.js";

/**
 * Tracker on `@parcel/watcher` (native, recursive: inotify on Linux, FSEvents on macOS,
 * ReadDirectoryChangesW on Windows). `create`/`delete` events (renames arrive as a pair) bump
 * `generation`; `update` events only advance `newestMtimeMs`.
 */
export class ParcelTracker extends WatchingTracker {
  readonly kind = "parcel" as const;
  private subscription: AsyncSubscription | undefined;

  protected async openWatcher(): Promise<void> {
    // Loaded on first use: the native addon costs nothing for users who never track changes.
    const watcher = await import("@parcel/watcher");
    const isIgnored = ignoredPathMatcher(this.dir, this.options.ignoreNames);
    this.subscription = await watcher.subscribe(
      this.dir,
      (err, events) => {
        if (err) {
          this.watcherFailed(err);
          return;
        }
        this.onEvents(events, isIgnored);
      },
      // Exact paths, not `**/name` globs: parcel matches globs against every path it crawls,
      // which tripled its ready time at 100k files. Deeper matches are filtered above.
      { ignore: this.options.ignoreNames.map((n) => path.join(this.dir, n)) },
    );
  }

  protected async closeWatcher(): Promise<void> {
    const sub = this.subscription;
    this.subscription = undefined;
    await sub?.unsubscribe();
  }

  private onEvents(events: Event[], isIgnored: (p: string) => boolean): void {
    const now = Date.now();
    let structural = false;
    let touched = false;
    for (const e of events) {
      if (isIgnored(e.path)) continue;
      if (e.type === "update") touched = true;
      else structural = true;
    }
    if (structural) this.bump(now);
    else if (touched) this.noteTime(now);
  }
}
