import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFile, mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  ChokidarTracker,
  createChangeTracker,
  DEFAULT_TRACKER_KIND,
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
