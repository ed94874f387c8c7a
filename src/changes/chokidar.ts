import type { FSWatcher } from "chokidar";
import { ignoredPathMatcher } from "./ignore-names.js";
import { WatchingTracker } from "./watching.js";

const STRUCTURAL = new Set(["add", "addDir", "unlink", "unlinkDir"]);

/**
 * Tracker on chokidar 4 (one `fs.watch` per directory plus an initial stat of every entry).
 * Non-persistent, so it never keeps the process alive.
 * `add`/`addDir`/`unlink`/`unlinkDir` bump `generation`; `change` only advances `newestMtimeMs`.
 */
export class ChokidarTracker extends WatchingTracker {
  readonly kind = "chokidar" as const;
  private watcher: FSWatcher | undefined;

  protected async openWatcher(): Promise<void> {
    const { watch } = await import("chokidar");
    const isIgnored = ignoredPathMatcher(this.dir, this.options.ignoreNames);
    const watcher = watch(this.dir, {
      ignoreInitial: true,
      // Unreferenced fs.watch handles: a process that forgets close() still exits.
      persistent: false,
      followSymlinks: false,
      ignorePermissionErrors: true,
      ignored: (p: string) => isIgnored(p),
    });
    this.watcher = watcher;
    // chokidar 4 reports symlinks found by its initial scan as "add" despite ignoreInitial;
    // anything before "ready" is part of the baseline, not a change.
    let ready = false;
    watcher.on("all", (event) => {
      if (!ready) return;
      if (STRUCTURAL.has(event)) this.bump();
      else if (event === "change") this.noteTime(Date.now());
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: unknown) => reject(err instanceof Error ? err : new Error(String(err)));
      watcher.once("error", onError);
      watcher.once("ready", () => {
        ready = true;
        watcher.off("error", onError);
        watcher.on("error", (err) => this.watcherFailed(err));
        resolve();
      });
    });
  }

  protected async closeWatcher(): Promise<void> {
    const w = this.watcher;
    this.watcher = undefined;
    await w?.close();
  }
}
