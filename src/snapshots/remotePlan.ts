/**
 * What a restore on a remote workspace must do, decided from two manifests of the local store —
 * what the remote holds now (`before`, recorded right before) and what it should hold (`after`) —
 * and the remote listing taken with `before`. Pure: the same rules as the local in-place apply
 * (applyInPlace.ts), for a side that can only be reached through a script.
 *
 * Edge cases, each decided here once:
 * - Only entries `before` records are removed; a recorded directory the target lacks is removed
 *   only if that leaves it empty (the script's `rmdir`), so unrecorded content keeps it.
 * - A name the target wants where the listing shows an entry `before` does not record (a FIFO,
 *   an over-cap or sparse file, something made since) is kept, never replaced, and reported.
 * - Entries whose content and mode bits equal are not sent; a mode change alone resends the file.
 * - Removals run deepest first, new directories parents first, then the files and links.
 */
import { sameContent } from "./applyInPlace.js";
import type { RemoteEntry } from "./remoteListing.js";
import type { SnapshotFile } from "./store.js";

export interface Manifest {
  files: ReadonlyMap<string, SnapshotFile>;
  dirs: Iterable<string>;
}

export interface RestorePlan {
  remove: { rel: string; dir: boolean }[];
  mkdir: string[];
  /** Entries to write, with the store entry that has their content. */
  put: { rel: string; entry: SnapshotFile }[];
  /** Names left as they are (an unrecorded entry holds them). */
  kept: string[];
}

const depth = (rel: string) => rel.split("/").length;

export function planRestore(before: Manifest, after: Manifest, listing: ReadonlyMap<string, RemoteEntry>): RestorePlan {
  const beforeDirs = new Set([...before.dirs].filter((d) => d !== ""));
  const afterDirs = new Set([...after.dirs].filter((d) => d !== ""));
  const recorded = (rel: string) => before.files.has(rel) || beforeDirs.has(rel);
  const remove: RestorePlan["remove"] = [];
  for (const rel of before.files.keys()) if (!after.files.has(rel)) remove.push({ rel, dir: false });
  for (const rel of beforeDirs) if (!afterDirs.has(rel)) remove.push({ rel, dir: true });
  remove.sort((a, b) => depth(b.rel) - depth(a.rel) || (a.dir === b.dir ? 0 : a.dir ? 1 : -1));
  const kept: string[] = [];
  const keptDirs = new Set<string>();
  const underKept = (rel: string) => {
    for (let i = rel.indexOf("/"); i !== -1; i = rel.indexOf("/", i + 1)) if (keptDirs.has(rel.slice(0, i))) return true;
    return false;
  };
  const mkdir: string[] = [];
  for (const rel of [...afterDirs].sort((a, b) => depth(a) - depth(b))) {
    if (beforeDirs.has(rel) || underKept(rel)) continue;
    if (listing.has(rel) && !recorded(rel)) {
      kept.push(rel);
      keptDirs.add(rel);
      continue;
    }
    mkdir.push(rel);
  }
  const put: RestorePlan["put"] = [];
  for (const [rel, entry] of after.files) {
    if (sameContent(before.files.get(rel), entry)) continue;
    if (underKept(rel) || (listing.has(rel) && !recorded(rel))) {
      kept.push(rel);
      continue;
    }
    put.push({ rel, entry });
  }
  return { remove, mkdir, put, kept };
}
