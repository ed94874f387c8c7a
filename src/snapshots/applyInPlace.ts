/**
 * Brings a workspace from what it holds (`current`, the entries a scan just recorded) to a stored
 * snapshot (`target`) in place, touching only the directories whose trees differ and, in them,
 * only the entries that differ. Every operation is relative to a directory held by descriptor
 * ({@link DirHandle}), so nothing the agent made — a symlink where a directory was, a directory
 * swapped for a link between two steps — can steer a write or a delete outside the workspace.
 *
 * Edge cases, each decided here once:
 * - Entries the snapshot does not record (excluded names, credential files, over-cap or sparse
 *   files, names that are not UTF-8, FIFOs and sockets) are never touched: they are not in
 *   `current`, so nothing deletes them.
 * - A recorded directory the target lacks is emptied of recorded entries and removed only if
 *   that leaves it empty; one that still holds unrecorded entries stays.
 * - A name the target wants as a file or link but where such a directory stays, or where an
 *   unrecorded entry of another type sits, is left alone and reported in `kept`.
 * - A symlink, file or missing entry where the target wants a directory: the recorded entry is
 *   removed and a real directory made; the apply descends only through directories it opened
 *   with `O_NOFOLLOW`, so it never writes through a link.
 * - File content comes only from the store (never from the workspace), written to a temporary
 *   name and renamed to the target name (`unlink` and `rename` replace a link, never follow it)
 *   when what is there was recorded, or linked to a free name otherwise (`link` fails on any existing entry,
 *   so an unrecorded file — over the size cap, say — is never overwritten). Modes are restored
 *   without setuid, setgid or sticky bits.
 */
import { mkdir, rmdir, unlink } from "node:fs/promises";
import pLimit from "p-limit";
import { DirHandle } from "../environment/dirHandle.js";

/** One recorded entry as the store keeps it. */
export interface AppliedEntry {
  h: string;
  s: number;
  m: number;
  t: number;
  l?: 1;
}

/**
 * Directory (relative, "" = root) → name → entry. `get` is asked only for the directories the
 * apply visits (so a caller can load just those trees).
 */
export interface TreeMap {
  keys(): IterableIterator<string>;
  get(rel: string): ReadonlyMap<string, AppliedEntry> | undefined;
  has(rel: string): boolean;
}

/** How the apply writes one entry (the store knows where blobs live). */
export interface EntryWriter {
  /**
   * Puts `entry` (a file or a symlink) at `name` in `dir` atomically. `replace`: what is there is
   * a recorded entry and may be replaced; otherwise the name must be free (fails with `EEXIST`).
   */
  put(dir: DirHandle, name: string, entry: AppliedEntry, replace: boolean): Promise<void>;
  /**
   * The same for many entries of one directory (`rel`) at once: per entry `"ok"`, or `"kept"`
   * when an unrecorded entry holds the name. Optional; without it, `put` one by one.
   */
  putAll?(dir: DirHandle, rel: string, items: { name: string; entry: AppliedEntry; replace: boolean }[]): Promise<("ok" | "kept")[]>;
}

export interface ApplyResult {
  /** Relative paths the target could not take because an unrecorded entry holds the name. */
  kept: string[];
  /** Directories whose entries were rewritten (the caller refreshes its working set there). */
  visited: string[];
}

export const sameContent = (a: AppliedEntry | undefined, b: AppliedEntry | undefined): boolean =>
  a !== undefined && b !== undefined && a.h === b.h && (a.m & 0o777) === (b.m & 0o777) && Boolean(a.l) === Boolean(b.l);

const childOf = (rel: string, name: string) => (rel === "" ? name : `${rel}/${name}`);
const parentOf = (rel: string) => {
  const i = rel.lastIndexOf("/");
  return i === -1 ? "" : rel.slice(0, i);
};

/**
 * The directories an apply enters: every target directory whose tree `differs` from the current
 * one (or that the current side lacks), and their ancestors.
 */
export function dirsToVisit(current: Iterable<string>, target: Iterable<string>, differs: (rel: string) => boolean): Set<string> {
  const visit = new Set<string>(["" ]);
  const add = (rel: string) => {
    for (let r = rel; !visit.has(r); r = parentOf(r)) visit.add(r);
  };
  const inCurrent = new Set(current);
  const inTarget = new Set(target);
  for (const rel of inTarget) if (!inCurrent.has(rel) || differs(rel)) add(rel);
  // A directory only the current side has is removed from its parent's listing (a tree object
  // lists files only, so the parent's own tree may be unchanged).
  for (const rel of inCurrent) if (!inTarget.has(rel)) add(parentOf(rel));
  return visit;
}

function childDirs(tree: TreeMap): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const rel of tree.keys()) {
    if (rel === "") continue;
    const p = parentOf(rel);
    let s = out.get(p);
    if (!s) out.set(p, (s = new Set()));
    s.add(rel.slice(p === "" ? 0 : p.length + 1));
  }
  return out;
}

const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * Applies `target` over `current` in the workspace held by `root`, entering the directories in
 * `visit` ({@link dirsToVisit}).
 */
export async function applyInPlace(root: DirHandle, current: TreeMap, target: TreeMap, visit: ReadonlySet<string>, writer: EntryWriter): Promise<ApplyResult> {
  const kept: string[] = [];
  const visited: string[] = [];
  const curSubs = childDirs(current);
  const tgtSubs = childDirs(target);
  const limit = pLimit(16);
  const none = new Map<string, AppliedEntry>();

  const removeRecorded = async (parent: DirHandle, rel: string): Promise<boolean> => {
    const name = rel.slice(rel.lastIndexOf("/") + 1);
    const dir = await parent.openDir(name);
    if (dir) {
      try {
        await Promise.all([...(current.get(rel) ?? none).keys()].map((n) => limit(() => unlinkQuietly(dir.at(n) as string))));
        for (const sub of curSubs.get(rel) ?? []) await removeRecorded(dir, childOf(rel, sub));
      } finally {
        await dir.close();
      }
    }
    try {
      await rmdir(parent.at(name));
      return true;
    } catch (err) {
      return errCode(err) === "ENOENT";
    }
  };

  const applyDir = async (dir: DirHandle, rel: string): Promise<void> => {
    visited.push(rel);
    const have = current.get(rel) ?? none;
    const want = target.get(rel) ?? none;
    const wantSubs = tgtSubs.get(rel) ?? new Set<string>();
    const haveSubs = curSubs.get(rel) ?? new Set<string>();
    // 1. Recorded files and links the target does not have at that name (as a file or link).
    await Promise.all([...have].filter(([n]) => !want.has(n)).map(([n]) => limit(() => unlinkQuietly(dir.at(n) as string))));
    // 2. Recorded directories the target does not have.
    const blocked = new Set<string>();
    for (const n of haveSubs) {
      if (wantSubs.has(n)) continue;
      if (!(await removeRecorded(dir, childOf(rel, n)))) blocked.add(n);
    }
    // 3. Directories of the target: made where missing, entered where something differs below.
    const enter = async (n: string): Promise<void> => {
      const childRel = childOf(rel, n);
      if (!haveSubs.has(n)) {
        try {
          await mkdir(dir.at(n), 0o755);
        } catch (err) {
          if (errCode(err) !== "EEXIST") throw err;
        }
      }
      if (!visit.has(childRel)) return;
      const child = await dir.openDir(n);
      if (!child) {
        kept.push(childRel); // An unrecorded non-directory holds the name.
        return;
      }
      try {
        await applyDir(child, childRel);
      } finally {
        await child.close();
      }
    };
    await eachBounded([...wantSubs], rel === "" ? SIBLINGS_AT_ONCE : 1, enter);
    // 4. Files and links that differ (in one batch where the writer takes batches).
    const changed = [...want].filter(([n, entry]) => !sameContent(have.get(n), entry));
    for (const [n] of changed) if (blocked.has(n)) kept.push(childOf(rel, n));
    const todo = changed.filter(([n]) => !blocked.has(n));
    if (writer.putAll && todo.length > 0) {
      const items = todo.map(([name, entry]) => ({ name, entry, replace: have.has(name) }));
      const results = await writer.putAll(dir, rel, items);
      items.forEach((item, i) => {
        if (results[i] === "kept") kept.push(childOf(rel, item.name));
      });
      return;
    }
    await Promise.all(
      todo.map(([n, entry]) =>
        limit(async () => {
          try {
            await writer.put(dir, n, entry, have.has(n));
          } catch (err) {
            // A directory the snapshot does not record sits at the name.
            if (errCode(err) === "EISDIR" || errCode(err) === "ENOTEMPTY" || errCode(err) === "EEXIST") kept.push(childOf(rel, n));
            else throw err;
          }
        }),
      ),
    );
  };

  await applyDir(root, "");
  return { kept, visited };
}

/**
 * Top-level directories entered at once: the writer's batches queue up behind each other (its
 * worker never waits for the next directory to be opened and compared). Only at the top: lanes
 * at every level would multiply (4^depth directories held open in a wide, deep tree the agent
 * made), so below it one directory at a time: at most 4 + depth descriptors.
 */
const SIBLINGS_AT_ONCE = 4;

/**
 * Runs `fn` over `items`, `width` at a time; settles every started call before it throws the
 * first error (nothing still writes once the apply has failed), and starts no more after one.
 */
async function eachBounded<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (!failed && next < items.length) {
      try {
        await fn(items[next++]!);
      } catch (err) {
        failed ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  if (failed) throw failed.err;
}

async function unlinkQuietly(p: string): Promise<void> {
  try {
    await unlink(p);
  } catch (err) {
    // Gone already, or a directory now (left alone: it is not what was recorded).
    if (!["ENOENT", "EISDIR", "EPERM", "ENOTDIR"].includes(errCode(err) ?? "")) throw err;
  }
}
