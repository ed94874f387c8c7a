import path from "node:path";
import type { FSWatcher } from "chokidar";
import { ignoredPathMatcher } from "./ignore-names.js";
import { WatchingTracker } from "./watching.js";

const STRUCTURAL = new Set(["add", "addDir", "unlink", "unlinkDir"]);

/**
 * Tracker on chokidar 4 (one `fs.watch` per directory plus an initial stat of every entry).
 * Non-persistent, so it never keeps the process alive.
 * `add`/`addDir`/`unlink`/`unlinkDir` bump `generation`; `change` only advances `newestMtimeMs`
 * (stamped with the event's arrival time). Every event's path goes to the change record, and so
 * does every raw `fs.watch` event's, which chokidar would otherwise throttle away.
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
    watcher.on("all", (event, p) => {
      if (!ready) return;
      this.notePath(p);
      if (STRUCTURAL.has(event)) this.bump();
      else if (event === "change") this.noteTime(Date.now());
    });
    // chokidar drops a file's fs event arriving within 5 ms of the previous one (and a change
    // that leaves the mtime equal), so the record also takes the raw events, which come before
    // that filter. A directory's fs.watch names the entry; a file's names the file itself.
    watcher.on("raw", (_event: string, name: unknown, details: unknown) => {
      if (!ready) return;
      const watched = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
      if (typeof watched !== "string") return;
      const p = typeof name !== "string" || name === "" || name === path.basename(watched) ? watched : path.join(watched, name);
      if (!this.settledBy(p) && !isIgnored(p)) this.notePath(p);
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
