/** What changed between two snapshots: a file list with sizes, and a unified diff of the text files. */
import { createTwoFilesPatch } from "diff";
import type { SnapshotStore } from "./store.js";

type Readable = Pick<SnapshotStore, "manifest" | "readBlob">;

/** One changed file. Sizes in bytes; a binary (or very large) file has no diff text. */
export interface FileChange {
  path: string;
  change: "added" | "modified" | "deleted";
  binary: boolean;
  sizeBefore?: number;
  sizeAfter?: number;
}

/** The result of `workbench.changes()`. */
export interface ChangeSet {
  from: string;
  to: string;
  files: FileChange[];
  /** Unified diff (`a/…`, `b/…` headers) of the text files, in path order. */
  diff: string;
}

/** Text files larger than this are listed without a diff. */
export const MAX_DIFF_FILE_BYTES = 1024 * 1024;

function looksBinary(buf: Buffer): boolean {
  const head = buf.subarray(0, 8192);
  if (head.includes(0)) return true;
  return !isUtf8(head);
}

function isUtf8(buf: Buffer): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(buf);
    return true;
  } catch {
    // A multi-byte character cut at the 8 KiB boundary is still text.
    return buf.length === 8192;
  }
}

/** Compares two snapshots of one store (only the paths under `only`, when given). */
export async function diffSnapshots(store: Readable, from: string, to: string, only?: readonly string[]): Promise<ChangeSet> {
  const [a, b] = await Promise.all([store.manifest(from), store.manifest(to)]);
  // `only`: workspace-relative files or directories (everything below them).
  const wanted = only?.map((p) => p.split(/[\\/]+/).filter((x) => x !== "" && x !== ".").join("/"));
  const inScope = (p: string) => !wanted || wanted.some((w) => w === "" || p === w || p.startsWith(`${w}/`));
  const paths = [...new Set([...a.files.keys(), ...b.files.keys()])].filter(inScope).sort();
  const files: FileChange[] = [];
  const parts: string[] = [];
  for (const p of paths) {
    const before = a.files.get(p);
    const after = b.files.get(p);
    if (before && after && before.h === after.h && Boolean(before.l) === Boolean(after.l)) continue;
    const change: FileChange["change"] = !before ? "added" : !after ? "deleted" : "modified";
    const tooBig = (before?.s ?? 0) > MAX_DIFF_FILE_BYTES || (after?.s ?? 0) > MAX_DIFF_FILE_BYTES;
    let binary = tooBig;
    let oldText = "";
    let newText = "";
    if (!tooBig) {
      const [ob, nb] = await Promise.all([before ? store.readBlob(before.h) : Buffer.alloc(0), after ? store.readBlob(after.h) : Buffer.alloc(0)]);
      binary = looksBinary(ob) || looksBinary(nb);
      if (!binary) {
        oldText = (before?.l ? "symlink → " : "") + ob.toString("utf8");
        newText = (after?.l ? "symlink → " : "") + nb.toString("utf8");
      }
    }
    files.push({ path: p, change, binary, ...(before ? { sizeBefore: before.s } : {}), ...(after ? { sizeAfter: after.s } : {}) });
    if (!binary) {
      parts.push(createTwoFilesPatch(before ? `a/${p}` : "/dev/null", after ? `b/${p}` : "/dev/null", oldText, newText, undefined, undefined, { context: 3 }).replace(/^=+\n/, ""));
    }
  }
  return { from, to, files, diff: parts.join("") };
}
