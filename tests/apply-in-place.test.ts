// applyInPlace on its own (src/snapshots/applyInPlace.ts), with a real directory held by
// descriptor and a recording writer: top-level directories are applied a few at a time, deeper
// ones one at a time (a wide, deep tree the agent made must not open descriptors without bound),
// and a failing write stops the apply cleanly: every write it started has ended when it rejects,
// and none starts after.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DirHandle } from "../src/environment/dirHandle.js";
import { applyInPlace, dirsToVisit, type AppliedEntry, type EntryWriter } from "../src/snapshots/applyInPlace.js";

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-apply-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const file: AppliedEntry = { h: "0".repeat(64), s: 1, m: 0o644, t: 0 };

/** A writer that records which directory each write is in, how many run at once, and fails in `failIn`. */
function recordingWriter(root: string, failIn?: string) {
  const log = { started: [] as string[], ended: 0, inFlight: 0, maxInFlight: 0, byTop: new Map<string, number>(), maxNested: 0 };
  const nested = new Map<string, number>();
  const writer: EntryWriter = {
    async put(dir, name) {
      // The held directory's path (dir.at names it by descriptor, /proc/self/fd/N).
      const where = path.join(await realpath(dir.via), name);
      log.started.push(where);
      log.inFlight++;
      log.maxInFlight = Math.max(log.maxInFlight, log.inFlight);
      // Writes below a top-level directory, counted per top-level directory.
      const parts = path.relative(await realpath(root), where).split(path.sep);
      const top = parts.length > 2 ? parts[0]! : `(top) ${parts[0]}`;
      nested.set(top, (nested.get(top) ?? 0) + 1);
      log.maxNested = Math.max(log.maxNested, ...[...nested.values()]);
      try {
        await new Promise((r) => setTimeout(r, 15));
        if (failIn && where.includes(`${path.sep}${failIn}${path.sep}`)) throw new Error(`write failed in ${failIn}`);
      } finally {
        log.inFlight--;
        log.ended++;
        nested.set(top, nested.get(top)! - 1);
      }
    },
  };
  return { writer, log };
}

/** Current: the directories, empty. Target: the same directories, each with one file `f`. */
async function workspace(name: string, dirs: string[]) {
  const root = path.join(tmp, name);
  for (const d of dirs) await mkdir(path.join(root, d), { recursive: true });
  const current = new Map<string, Map<string, AppliedEntry>>([["", new Map()], ...dirs.map((d) => [d, new Map()] as const)]);
  const target = new Map<string, Map<string, AppliedEntry>>([["", new Map()], ...dirs.map((d) => [d, new Map([["f", file]])] as const)]);
  const visit = dirsToVisit(current.keys(), target.keys(), (rel) => rel !== "");
  return { root, current, target, visit };
}

describe("applyInPlace", () => {
  test("top-level directories a few at a time; below them one at a time", async () => {
    const dirs = ["a", "b", "c", "d", "e", "f"].flatMap((t) => [t, ...[0, 1, 2, 3].map((i) => `${t}/x${i}`)]);
    const { root, current, target, visit } = await workspace("bounded", dirs);
    const { writer, log } = recordingWriter(root);
    const held = await DirHandle.open(root);
    try {
      await applyInPlace(held, current, target, visit, writer);
    } finally {
      await held.close();
    }
    assert.equal(log.started.length, dirs.length, "one write per directory");
    assert.ok(log.maxInFlight >= 2, `top-level directories overlap (${log.maxInFlight} at once)`);
    assert.ok(log.maxInFlight <= 4, `at most four at once (${log.maxInFlight})`);
    assert.equal(log.maxNested, 1, "the subdirectories of one top-level directory are applied one at a time");
  });

  test("a failing write stops the apply: what started has ended when it rejects, nothing starts after", async () => {
    const dirs = ["p", "q", "r", "s", "t", "u", "v", "w"];
    const { root, current, target, visit } = await workspace("failing", dirs);
    const { writer, log } = recordingWriter(root, "q");
    const held = await DirHandle.open(root);
    try {
      await assert.rejects(applyInPlace(held, current, target, visit, writer), /write failed in q/);
      assert.equal(log.ended, log.started.length, "every write started had ended when the apply rejected");
      const startedAtReject = log.started.length;
      assert.ok(startedAtReject < dirs.length, `the apply stopped early (${startedAtReject} of ${dirs.length} started)`);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(log.started.length, startedAtReject, "no write started after the apply rejected");
    } finally {
      await held.close();
    }
  });
});
