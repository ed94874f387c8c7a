import { parseTree, treeText, type SnapshotFile } from "./format.js";

/**
 * One directory of the working set. Between snapshots its entries stay packed as their tree text,
 * as bytes outside the JavaScript heap: a full garbage collection of the agent's heap marks one
 * object per directory instead of three per file (100k files: about 24 MB of small objects,
 * marked again by every full collection of the agent's process), and V8, which sizes its heap at
 * about twice what it found live, does not grow it for them (100k files: ~10 MB of texts); a
 * snapshot that reads or edits the directory unpacks it.
 */
export class WorkingDir {
  private map: Map<string, SnapshotFile> | undefined;
  private packed: Buffer | undefined;
  private count = 0;
  /** Tree hash of the entries, undefined while dirty. */
  hash?: string;
  /** Sum of the file sizes, computed with `hash`. */
  bytes?: number;
  /**
   * The listing these entries were last checked against (names, sizes, mtimes, modes): a scan
   * that lists the same leaves the directory alone without unpacking it. Unset when unknown, or
   * when the directory holds skipped entries (which a scan must list again).
   */
  sig?: string;

  constructor(files: Map<string, SnapshotFile> = new Map(), hash?: string) {
    this.map = files;
    this.hash = hash;
  }

  /** A clean directory from its stored tree text (as bytes, kept as they are), unparsed (count and bytes from the working-set cache). */
  static packed(text: Buffer, hash: string, count: number, bytes: number, sig: string | undefined): WorkingDir {
    const d = new WorkingDir(undefined, hash);
    d.map = undefined;
    d.packed = text;
    d.count = count;
    d.bytes = bytes;
    d.sig = sig;
    return d;
  }

  /** The entries, unpacked on first use after {@link pack}. */
  get files(): Map<string, SnapshotFile> {
    // The packed text stays valid while `hash` is set (every edit clears it): packing again reuses it.
    this.map ??= parseTree(this.packed!.toString("utf8"));
    return this.map;
  }

  get size(): number {
    return this.map === undefined ? this.count : this.map.size;
  }

  /** Packs the entries; `text` is their {@link treeText} when the caller has it already. */
  pack(text?: string): void {
    if (this.map === undefined) return;
    if (text !== undefined) this.packed = Buffer.from(text, "utf8");
    else if (this.hash === undefined || this.packed === undefined) this.packed = Buffer.from(treeText(this.map).text, "utf8");
    this.count = this.map.size;
    this.map = undefined;
  }
}

