import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFile, mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  ChangeRecord,
  ChokidarTracker,
  createChangeTracker,
  DEFAULT_TRACKER_KIND,
  MAX_RECORDED_PATHS,
  ParcelTracker,
  PollingTracker,
  TrackerPool,
  type ChangeTracker,
  type TrackerKind,
} from "../src/changes/index.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WAIT_MS = 8000;

/** Polls `probe` (calling `refresh()` so pollers take a snapshot) until true or the timeout. */
async function waitFor(tracker: ChangeTracker, probe: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!probe()) {
    if (Date.now() > deadline) assert.fail(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await tracker.refresh();
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function waitUntilStructuralChange(tracker: ChangeTracker, action: () => Promise<unknown>, what: string) {
  const before = tracker.generation;
  await action();
  await waitFor(tracker, () => tracker.generation > before, `${what} to bump generation`);
}

/** Waits until the wall clock passes `ms`, so a later event time is strictly greater. */
async function clockPast(ms: number | undefined): Promise<void> {
  while (ms !== undefined && Date.now() <= ms) await new Promise((r) => setTimeout(r, 2));
}

let tmp: string;
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-changes-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function freshDir(name: string): Promise<string> {
  const dir = path.join(tmp, name);
  await mkdir(path.join(dir, "sub"), { recursive: true });
  await writeFile(path.join(dir, "a.txt"), "a");
  await writeFile(path.join(dir, "sub", "b.txt"), "b");
  // chokidar reports pre-existing symlinks as new unless the tracker ignores pre-ready events.
  await symlink("a.txt", path.join(dir, "link-to-a"));
  return dir;
}

for (const kind of ["parcel", "chokidar", "polling"] as TrackerKind[]) {
  describe(`${kind} tracker`, () => {
    let dir: string;
    let tracker: ChangeTracker;
    const errors: Error[] = [];
    before(async () => {
      dir = await freshDir(kind);
      tracker = createChangeTracker(dir, { kind, pollIntervalMs: 5000, onError: (e) => errors.push(e) });
      await tracker.start();
    });
    after(async () => {
      await tracker.close();
    });

    test("is live after start, with a newest mtime", () => {
      assert.equal(tracker.live, true);
      assert.equal(tracker.generation, 0, "nothing changed since start");
      assert.equal(typeof tracker.newestMtimeMs, "number");
    });

    test("a content-only edit does not bump generation (first, while no other events are in flight)", async () => {
      const target = path.join(dir, "a.txt");
      if (kind === "polling") {
        await tracker.refresh();
        const gen = tracker.generation;
        await appendFile(target, "more");
        assert.equal(await tracker.refresh(), gen);
        return;
      }
      // Watchers: wait until the edit's event was delivered (newestMtimeMs moves), then compare.
      await clockPast(tracker.newestMtimeMs);
      const seen = tracker.newestMtimeMs ?? 0;
      const gen = tracker.generation;
      await appendFile(target, "more");
      await waitFor(tracker, () => (tracker.newestMtimeMs ?? 0) > seen, "the edit's event");
      assert.equal(tracker.generation, gen);
    });

    test("file create bumps generation", async () => {
      await waitUntilStructuralChange(tracker, () => writeFile(path.join(dir, "sub", "new.txt"), "n"), "create");
    });

    test("rename bumps generation", async () => {
      await waitUntilStructuralChange(tracker, () => rename(path.join(dir, "sub", "new.txt"), path.join(dir, "sub", "renamed.txt")), "rename");
    });

    test("delete bumps generation", async () => {
      await waitUntilStructuralChange(tracker, () => rm(path.join(dir, "sub", "renamed.txt")), "delete");
    });

    test("mkdir and rmdir bump generation", async () => {
      await waitUntilStructuralChange(tracker, () => mkdir(path.join(dir, "made")), "mkdir");
      await waitUntilStructuralChange(tracker, () => mkdir(path.join(dir, "made", "deeper")), "nested mkdir");
      await waitUntilStructuralChange(tracker, () => writeFile(path.join(dir, "made", "deeper", "c.txt"), "c"), "create in new dir");
      await waitUntilStructuralChange(tracker, () => rm(path.join(dir, "made"), { recursive: true }), "rmdir");
    });

    test("changes under node_modules and .git are ignored", async () => {
      await mkdir(path.join(dir, "node_modules", "pkg"), { recursive: true });
      await waitFor(tracker, () => true, "");
      await tracker.refresh();
      const gen = tracker.generation;
      await writeFile(path.join(dir, "node_modules", "pkg", "index.js"), "x");
      await mkdir(path.join(dir, ".git"), { recursive: true });
      await writeFile(path.join(dir, ".git", "HEAD"), "x");
      // Sync point: a visible change after the ignored ones; its event arrives after theirs.
      await waitUntilStructuralChange(tracker, () => writeFile(path.join(dir, "visible.txt"), "v"), "visible create");
      if (kind === "polling") assert.equal(tracker.generation, gen + 1);
      assert.deepEqual(errors, []);
    });

    test("close is idempotent and leaves the tracker not live", async () => {
      const t = createChangeTracker(dir, { kind });
      await t.start();
      await t.close();
      await t.close();
      assert.equal(t.live, false);
      await assert.rejects(t.start(), /closed/);
    });
  });
}

describe("polling tracker details", () => {
  test("an atomic save (temp file renamed over the target) is not structural", async () => {
    const dir = await freshDir("atomic");
    const t = new PollingTracker(dir, { intervalMs: 5000 });
    await t.start();
    const gen = await t.refresh();
    await writeFile(path.join(dir, ".a.txt.tmp"), "new content");
    await rename(path.join(dir, ".a.txt.tmp"), path.join(dir, "a.txt"));
    assert.equal(await t.refresh(), gen);
    await t.close();
  });

  test("a change in the same clock tick as the previous poll is still seen", async () => {
    const dir = await freshDir("racy");
    const t = new PollingTracker(dir, { intervalMs: 5000 });
    await t.start();
    // Back-to-back changes and polls: directory mtimes may not move between them.
    for (let i = 0; i < 5; i++) {
      const gen = t.generation;
      await writeFile(path.join(dir, `quick${i}.txt`), "q");
      assert.ok((await t.refresh()) > gen, `change ${i} seen`);
    }
    await t.close();
  });

  test("the root directory removed and recreated is a change each time", async () => {
    const dir = await freshDir("vanish");
    const t = new PollingTracker(dir, { intervalMs: 5000 });
    await t.start();
    const g0 = t.generation;
    await rm(dir, { recursive: true });
    const g1 = await t.refresh();
    assert.ok(g1 > g0);
    await mkdir(dir);
    await writeFile(path.join(dir, "back.txt"), "b");
    assert.ok((await t.refresh()) > g1);
    await t.close();
  });

  test("refresh calls made during a poll each see a poll that started after them", async () => {
    const dir = await freshDir("overlap");
    const t = new PollingTracker(dir, { intervalMs: 5000 });
    await t.start();
    const gen = t.generation;
    const first = t.refresh();
    await writeFile(path.join(dir, "during.txt"), "d");
    const second = t.refresh();
    await first;
    assert.ok((await second) > gen);
    await t.close();
  });

  test("rejects a bad interval", () => {
    assert.throws(() => new PollingTracker(tmp, { intervalMs: 0 }), /intervalMs/);
  });
});

describe("watcher fallback", () => {
  test("parcel on a missing directory falls back to polling, says so, and sees the directory appear", async () => {
    const dir = path.join(tmp, "not-yet");
    const errors: string[] = [];
    const t = new ParcelTracker(dir, { pollIntervalMs: 5000, onError: (e, ctx) => errors.push(`${ctx.kind}->${ctx.fallback}: ${e.message}`) });
    await t.start();
    assert.equal(t.fellBack, true);
    assert.equal(t.live, true);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /^parcel->polling/);
    const gen = t.generation;
    await mkdir(dir);
    await writeFile(path.join(dir, "x.txt"), "x");
    assert.ok((await t.refresh()) > gen);
    await t.close();
    assert.equal(t.live, false);
  });

  test("a throwing onError hook does not break the fallback", async () => {
    const t = new ParcelTracker(path.join(tmp, "never"), {
      onError: () => {
        throw new Error("hook bug");
      },
    });
    await t.start();
    assert.equal(t.fellBack, true);
    await t.close();
  });
});

/** Polls `changesSince(cursor)` every 20 ms (up to 5 s) until it lists `p`; fails on `undefined`. */
async function waitUntilListed(tracker: ChangeTracker, cursor: number, p: string): Promise<{ cursor: number; paths: string[] }> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const answer = tracker.changesSince(cursor);
    assert.ok(answer, `changesSince(${cursor}) could not tell while waiting for ${p}`);
    if (answer.paths.includes(p)) return answer;
    if (Date.now() > deadline) assert.fail(`timed out after 5000 ms waiting for ${p} in ${JSON.stringify(answer.paths)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A cursor after which nothing arrived for 600 ms (longer than parcel's 500 ms debounce cap). */
async function quietCursor(tracker: ChangeTracker): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const cursor = tracker.cursor;
    await new Promise((r) => setTimeout(r, 600));
    const answer = tracker.changesSince(cursor);
    assert.ok(answer, "changesSince could not tell while waiting for quiet");
    if (answer.paths.length === 0) return cursor;
    if (Date.now() > deadline) assert.fail(`events kept arriving: ${JSON.stringify(answer.paths)}`);
  }
}

for (const kind of ["parcel", "chokidar"] as const) {
  describe(`${kind} tracker: changesSince`, () => {
    let dir: string;
    let tracker: ChangeTracker;
    before(async () => {
      dir = await freshDir(`since-${kind}`);
      tracker = createChangeTracker(dir, { kind, pollIntervalMs: 5000 });
      await tracker.start();
    });
    after(async () => {
      await tracker.close();
    });

    test("lists a content-only overwrite of an existing file (which does not bump generation)", async () => {
      const c0 = tracker.cursor;
      const gen = tracker.generation;
      const target = path.join(dir, "sub", "b.txt");
      await writeFile(target, "overwritten");
      const answer = await waitUntilListed(tracker, c0, target);
      assert.deepEqual(answer.paths, [target]);
      assert.equal(tracker.generation, gen, "an update event is not structural");
      assert.ok(answer.cursor >= c0);
    });

    test("lists a created file; a cursor taken after the events lists nothing, later changes only", async () => {
      const c0 = tracker.cursor;
      const created = path.join(dir, "sub", "created.txt");
      await writeFile(created, "c");
      await waitUntilListed(tracker, c0, created);
      const quiet = await quietCursor(tracker);
      assert.deepEqual(tracker.changesSince(quiet)?.paths, []);
      assert.ok(tracker.changesSince(c0)!.paths.includes(created), "an older cursor still answers");
      const next = path.join(dir, "a.txt");
      await appendFile(next, "more");
      const answer = await waitUntilListed(tracker, quiet, next);
      assert.deepEqual(answer.paths, [next], "only what changed after the cursor");
      // Deduplicated: the same path changed again is listed once.
      await appendFile(next, "again");
      await waitFor(tracker, () => tracker.changesSince(answer.cursor)!.paths.includes(next), "the second append");
      assert.deepEqual(tracker.changesSince(quiet)?.paths, [next]);
    });

    test("paths under ignored names and atomic-save temp files are not listed", async () => {
      await mkdir(path.join(dir, "node_modules", "pkg"), { recursive: true });
      await mkdir(path.join(dir, "sub", "node_modules"), { recursive: true });
      await mkdir(path.join(dir, ".git"), { recursive: true });
      const c0 = tracker.cursor;
      await writeFile(path.join(dir, "node_modules", "pkg", "index.js"), "x");
      await writeFile(path.join(dir, "sub", "node_modules", "deep.js"), "x");
      await writeFile(path.join(dir, ".git", "HEAD"), "x");
      await writeFile(path.join(dir, ".wb-write.1.abcdefabcdef"), "x");
      await rm(path.join(dir, ".wb-write.1.abcdefabcdef"));
      // Sync point: a visible change after the ignored ones; its event arrives with or after theirs.
      const visible = path.join(dir, "visible-after-ignored.txt");
      await writeFile(visible, "v");
      await waitUntilListed(tracker, c0, visible);
      await quietCursor(tracker);
      const listed = tracker.changesSince(c0)!.paths.map((p) => path.relative(dir, p));
      assert.deepEqual(listed, ["visible-after-ignored.txt"]);
    });

    test("settle: once it resolves true, every change made before the call is listed (no polling); its marker is never a change", async () => {
      await quietCursor(tracker);
      for (let round = 0; round < 5; round++) {
        const c0 = tracker.cursor;
        const gen = tracker.generation;
        const made = [path.join(dir, `settle-${round}.txt`), path.join(dir, "sub", `settle-${round}.txt`)];
        for (const f of made) await writeFile(f, `round ${round}`);
        assert.equal(await tracker.settle!(5_000), true, "a live watcher settles");
        // Read at once, no waiting: what settle promised.
        const listed = tracker.changesSince(c0)!.paths;
        for (const f of made) assert.ok(listed.includes(f), `${path.relative(dir, f)} is listed right after settle (${JSON.stringify(listed)})`);
        assert.ok(listed.every((p) => !path.basename(p).startsWith(".wb-write.")), "the marker is not listed");
        // Two creates: the generation moved by them, not by the marker's create and delete.
        await quietCursor(tracker);
        assert.ok(tracker.generation - gen <= made.length, `generation moved ${tracker.generation - gen} for ${made.length} creates`);
      }
      assert.deepEqual((await readdir(dir)).filter((n) => n.startsWith(".wb-write.")), [], "no marker is left in the directory");
    });

    test("a change inside a directory made (or moved in) moments before is listed, as itself or a directory above it", async () => {
      const covered = (listed: string[], p: string) => listed.some((q) => q === p || p.startsWith(q + path.sep));
      for (let round = 0; round < 3; round++) {
        const top = path.join(dir, `fresh-${round}`);
        await mkdir(path.join(top, "b", "c", "d"), { recursive: true });
        await writeFile(path.join(top, "b", "c", "d", "f.txt"), "1");
        const outside = await mkdtemp(path.join(os.tmpdir(), "wb-moved-"));
        await mkdir(path.join(outside, "x", "y"), { recursive: true });
        await writeFile(path.join(outside, "x", "y", "g.txt"), "1");
        await rename(path.join(outside, "x"), path.join(dir, `moved-${round}`));
        assert.equal(await tracker.settle!(5_000), true);
        const c = tracker.cursor;
        const inside = [path.join(top, "b", "c", "d", "f.txt"), path.join(dir, `moved-${round}`, "y", "g.txt")];
        for (const f of inside) await writeFile(f, "2");
        assert.equal(await tracker.settle!(5_000), true);
        const listed = tracker.changesSince(c)!.paths;
        for (const f of inside) assert.ok(covered(listed, f), `${path.relative(dir, f)} is covered by ${JSON.stringify(listed.map((p) => path.relative(dir, p)))}`);
        await rm(outside, { recursive: true, force: true });
      }
    });

    test("settle answers false when it cannot tell: not started, closed", async () => {
      const t = createChangeTracker(await freshDir(`settle-closed-${kind}`), { kind });
      assert.equal(await t.settle!(200), false, "not started");
      await t.start();
      assert.equal(await t.settle!(5_000), true);
      await t.close();
      assert.equal(await t.settle!(200), false, "closed");
    });

    test("a closed tracker cannot tell, for cursors read before or after close", async () => {
      const t = createChangeTracker(await freshDir(`since-closed-${kind}`), { kind });
      const beforeStart = t.cursor;
      assert.equal(t.changesSince(beforeStart), undefined, "not started");
      await t.start();
      assert.equal(t.changesSince(beforeStart), undefined, "changes before start were not watched");
      const c0 = t.cursor;
      assert.deepEqual(t.changesSince(c0)?.paths, []);
      await t.close();
      assert.equal(t.changesSince(c0), undefined);
      assert.equal(t.changesSince(t.cursor), undefined);
    });

    test("a cursor of an earlier tracker of the same directory is not answered by a new one", async () => {
      const old = createChangeTracker(dir, { kind });
      await old.start();
      const c0 = old.cursor;
      await old.close();
      const fresh = createChangeTracker(dir, { kind });
      await fresh.start();
      assert.equal(fresh.changesSince(c0), undefined, "the new tracker did not watch between c0 and its start");
      await fresh.close();
    });
  });
}

describe("changesSince on polling and fallbacks", () => {
  test("a polling tracker cannot list paths", async () => {
    const dir = await freshDir("since-polling");
    const t = new PollingTracker(dir, { intervalMs: 5000 });
    await t.start();
    const c0 = t.cursor;
    assert.equal(t.changesSince(c0), undefined);
    const gen = t.generation;
    await writeFile(path.join(dir, "new.txt"), "n");
    assert.ok((await t.refresh()) > gen);
    assert.equal(t.changesSince(c0), undefined);
    assert.equal(t.changesSince(t.cursor), undefined);
    assert.equal("settle" in t, false, "a poller has no settle: callers stat instead");
    await t.close();
  });

  test("a watcher that fell back to polling at start cannot tell", async () => {
    const t = new ParcelTracker(path.join(tmp, "since-not-yet"), { pollIntervalMs: 5000, onError: () => undefined });
    await t.start();
    assert.equal(t.fellBack, true);
    assert.equal(t.live, true);
    assert.equal(t.changesSince(t.cursor), undefined);
    assert.equal(await t.settle(200), false, "a poller cannot settle");
    await t.close();
  });

  // Real trackers; the subclasses only expose the hook the watchers' "error" event calls.
  const failing = {
    parcel: class extends ParcelTracker {
      fail(err: Error): void {
        this.watcherFailed(err);
      }
    },
    chokidar: class extends ChokidarTracker {
      fail(err: Error): void {
        this.watcherFailed(err);
      }
    },
  };
  for (const [kind, Failing] of Object.entries(failing)) {
    test(`${kind}: a watcher error makes older cursors unanswerable, and the fallback cannot tell`, async () => {
      const dir = await freshDir(`since-fail-${kind}`);
      const errors: string[] = [];
      const t = new Failing(dir, { pollIntervalMs: 5000, onError: (e, ctx) => errors.push(`${ctx.fallback}: ${e.message}`) });
      await t.start();
      const c0 = t.cursor;
      const target = path.join(dir, "a.txt");
      await appendFile(target, "x");
      await waitUntilListed(t, c0, target);
      t.fail(new Error("ENOSPC (simulated)"));
      assert.equal(t.changesSince(c0), undefined, "not live any more");
      await waitFor(t, () => t.fellBack && t.live, "the polling fallback");
      assert.deepEqual(errors, ["polling: ENOSPC (simulated)"]);
      assert.equal(t.changesSince(c0), undefined, "events may have been lost before the fallback");
      assert.equal(t.changesSince(t.cursor), undefined, "the fallback does not know paths");
      await t.close();
    });
  }
});

describe("ChangeRecord", () => {
  test("lists paths noted after a cursor, deduplicated, oldest change first", () => {
    const r = new ChangeRecord();
    const c0 = r.cursor;
    assert.deepEqual(r.since(c0), { cursor: c0, paths: [] });
    r.note("/w/a");
    r.note("/w/b");
    r.note("/w/a");
    const first = r.since(c0)!;
    assert.deepEqual(first.paths, ["/w/b", "/w/a"]);
    assert.ok(first.cursor > c0);
    assert.deepEqual(r.since(first.cursor)?.paths, []);
    r.note("/w/c");
    assert.deepEqual(r.since(first.cursor)?.paths, ["/w/c"]);
    assert.equal(r.size, 3);
  });

  test("overflow: an old cursor gets undefined, a newer one keeps working", () => {
    const r = new ChangeRecord({ maxPaths: 3 });
    const c0 = r.cursor;
    r.note("/w/1");
    const c1 = r.cursor;
    r.note("/w/2");
    r.note("/w/3");
    assert.deepEqual(r.since(c0)?.paths, ["/w/1", "/w/2", "/w/3"], "at the bound, nothing lost yet");
    r.note("/w/2"); // already held: no growth
    assert.deepEqual(r.since(c0)?.paths, ["/w/1", "/w/3", "/w/2"]);
    r.note("/w/4"); // drops /w/1, noted after c0
    assert.equal(r.size, 3);
    assert.equal(r.since(c0), undefined, "/w/1 was dropped");
    assert.deepEqual(r.since(c1)?.paths, ["/w/3", "/w/2", "/w/4"], "c1 was read after /w/1 changed");
    const c2 = r.cursor;
    for (let i = 5; i < 20; i++) r.note(`/w/${i}`);
    assert.equal(r.size, 3);
    assert.equal(r.since(c1), undefined);
    assert.equal(r.since(c2), undefined);
    const c3 = r.cursor;
    r.note("/w/last");
    assert.deepEqual(r.since(c3)?.paths, ["/w/last"]);
  });

  test("the character bound drops the least recently changed paths too", () => {
    const r = new ChangeRecord({ maxChars: 10 });
    const c0 = r.cursor;
    r.note("/aaaa");
    r.note("/bbbb");
    assert.deepEqual(r.since(c0)?.paths, ["/aaaa", "/bbbb"]);
    r.note("/c");
    assert.equal(r.since(c0), undefined);
    const c1 = r.cursor;
    r.note("/" + "x".repeat(20)); // longer than the whole bound: kept nowhere, so c1 cannot be answered
    assert.equal(r.size, 0);
    assert.equal(r.since(c1), undefined);
    const c2 = r.cursor;
    assert.deepEqual(r.since(c2)?.paths, []);
  });

  test("the default bound holds at most MAX_RECORDED_PATHS paths", () => {
    const r = new ChangeRecord();
    const c0 = r.cursor;
    for (let i = 0; i < MAX_RECORDED_PATHS; i++) r.note(`/w/${i}`);
    assert.equal(r.since(c0)?.paths.length, MAX_RECORDED_PATHS);
    const c1 = r.cursor;
    for (let i = 0; i < MAX_RECORDED_PATHS * 2; i++) r.note(`/w/more/${i}`);
    assert.equal(r.size, MAX_RECORDED_PATHS);
    assert.equal(r.since(c0), undefined);
    assert.equal(r.since(c1), undefined);
  });

  test("invalidate: older cursors get undefined, newer ones work; foreign and bad cursors", () => {
    const r = new ChangeRecord();
    const c0 = r.cursor;
    r.note("/w/a");
    r.invalidate();
    assert.equal(r.size, 0);
    assert.equal(r.since(c0), undefined);
    const c1 = r.cursor;
    r.note("/w/b");
    assert.deepEqual(r.since(c1)?.paths, ["/w/b"]);
    assert.equal(new ChangeRecord().since(c1), undefined, "a cursor read before a record existed");
    assert.equal(r.since(r.cursor + 1000), undefined, "a cursor from the future");
    assert.throws(() => r.since(-1), /cursor/);
    assert.throws(() => r.since(1.5), /cursor/);
    assert.throws(() => r.since("3" as unknown as number), /cursor/);
    assert.throws(() => new ChangeRecord({ maxPaths: 0 }), /maxPaths/);
  });
});

describe("createChangeTracker", () => {
  test("builds each kind and validates options", () => {
    assert.ok(createChangeTracker(tmp, { kind: "parcel" }) instanceof ParcelTracker);
    assert.ok(createChangeTracker(tmp, { kind: "chokidar" }) instanceof ChokidarTracker);
    assert.ok(createChangeTracker(tmp, { kind: "polling" }) instanceof PollingTracker);
    assert.equal(DEFAULT_TRACKER_KIND, "parcel");
    assert.throws(() => createChangeTracker(tmp, { kind: "inotify" as TrackerKind }), /kind must be one of/);
    assert.throws(() => createChangeTracker("", {}), /non-empty/);
    assert.throws(() => createChangeTracker(tmp, { ignoreNames: ["a/b"] }), /ignoreNames/);
  });
});

describe("TrackerPool", () => {
  test("get() starts lazily, returns the same tracker per directory, and evicts the least recently used", async () => {
    const dirs = await Promise.all(["p1", "p2", "p3"].map(freshDir));
    const pool = new TrackerPool({ kind: "polling", maxLive: 2, pollIntervalMs: 5000 });
    const t1 = pool.get(dirs[0]!);
    assert.equal(pool.get(dirs[0]!), t1);
    assert.equal(pool.get(`${dirs[0]!}/sub/..`), t1, "keys are resolved paths");
    const t2 = pool.get(dirs[1]!);
    pool.get(dirs[0]!); // t1 becomes most recently used
    await waitFor(t1, () => t1.live && t2.live, "both trackers live");
    const t3 = pool.get(dirs[2]!);
    assert.equal(pool.size, 2);
    assert.equal(pool.has(dirs[1]!), false, "the LRU tracker was evicted");
    assert.equal(pool.has(dirs[0]!), true);
    await waitFor(t3, () => !t2.live, "the evicted tracker to close");
    assert.notEqual(pool.get(dirs[1]!), t2, "an evicted directory gets a new tracker");
    await pool.close();
    assert.equal(t1.live, false);
    assert.equal(t3.live, false);
    assert.throws(() => pool.get(dirs[0]!), /closed/);
  });

  test("idle trackers are closed", async () => {
    const dir = await freshDir("idle");
    const pool = new TrackerPool({ kind: "polling", idleMs: 30, pollIntervalMs: 5000 });
    const t = pool.get(dir);
    await t.start();
    await waitFor(t, () => pool.size === 0 && !t.live, "idle close");
    await pool.close();
  });

  test("validates options", () => {
    assert.throws(() => new TrackerPool({ maxLive: 0 }), /maxLive/);
    assert.throws(() => new TrackerPool({ idleMs: -1 }), /idleMs/);
    assert.throws(() => new TrackerPool({ kind: "x" as TrackerKind }), /kind/);
    assert.throws(() => new TrackerPool({ pollIntervalMs: 1 }), /intervalMs/);
  });

  test("a process exits on its own after close(), for every kind", async () => {
    const dir = await freshDir("exit");
    const script = path.join(tmp, "exit-script.mts");
    const modulePath = path.join(repoRoot, "src", "changes", "index.ts");
    await writeFile(
      script,
      `import { TrackerPool } from ${JSON.stringify(modulePath)};
import { writeFile } from "node:fs/promises";
const dir = ${JSON.stringify(dir)};
for (const kind of ["parcel", "chokidar", "polling"] as const) {
  const pool = new TrackerPool({ kind, idleMs: 3_600_000, pollIntervalMs: 50 });
  const t = pool.get(dir);
  pool.get(dir + "/sub");
  await t.start();
  await writeFile(dir + "/touched-" + kind + ".txt", "x");
  await pool.close();
}
console.log("closed");
`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", script], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | string>((resolve) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve("did not exit within 20 s");
      }, 20_000);
      child.on("exit", (c) => {
        clearTimeout(timer);
        resolve(c ?? -1);
      });
    });
    assert.equal(code, 0, err);
    assert.match(out, /closed/);
  });
});

describe("a process that forgets close()", () => {
  test("parcel is unsubscribed before it exits (a watcher torn down at exit crashes the process), and it exits 0", async () => {
    const child = path.join(repoRoot, "tests", "fixtures", "parcel-exit-child.ts");
    for (let run = 0; run < 3; run++) {
      const { code, signal, out } = await new Promise<{ code: number | null; signal: string | null; out: string }>((resolve) => {
        const p = spawn(process.execPath, ["--import", "tsx", child], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        p.stdout.on("data", (d: Buffer) => (out += d.toString()));
        p.stderr.on("data", (d: Buffer) => (out += d.toString()));
        const timer = setTimeout(() => p.kill("SIGKILL"), 30_000);
        p.on("exit", (code, signal) => {
          clearTimeout(timer);
          resolve({ code, signal, out });
        });
      });
      assert.match(out, /^live 4\n/, out);
      assert.match(out, /watching at exit 0\n/, `the exit hook unsubscribed every watcher (${out})`);
      assert.equal(signal, null, `no crash at exit (${out})`);
      assert.equal(code, 0, out);
    }
  });
});
