/**
 * A snapshot store's HEAD.json: where the workspace stands (docs/snapshot-format.md). Several
 * processes (workers on one root) serve a thread in turn, so the file's identity is kept to
 * notice another process's write.
 */
import { randomBytes } from "node:crypto";
import { readFile, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { StoreFiles } from "./storeFiles.js";

/** Where the workspace stands. */
export interface SnapshotHead {
  /** The snapshot the workspace was last recorded as or restored to. */
  id: string;
  /** The snapshot last handed to a checkpoint (a run's state); a checkpoint naming another one was rewound to. */
  assigned?: string;
  /** The thread's first snapshot: the workspace before any checkpoint named one. */
  baseline?: string;
  /** Set by an explicit restore: the next run adopts the workspace instead of restoring its checkpoint. */
  pinned?: boolean;
}

/** What {@link HeadFile.load} found. */
export interface LoadedHead {
  head: SnapshotHead | undefined;
  /** The file was read now and parsed (it is not the copy this process held). */
  parsed: boolean;
  /** Read again after an earlier read or write: another process may have moved the head. */
  moved: boolean;
}

export class HeadFile {
  private readonly path: string;
  private head: SnapshotHead | undefined;
  private loaded = false;
  /**
   * HEAD.json's identity (inode, mtime, size) when this process last read or wrote it. Several
   * processes (workers on one root) serve a thread in turn: a head another one moved must be
   * read again, or its checkpoint's snapshot looks like a rewind and a restore undoes newer files.
   */
  private stamp: string | undefined;

  constructor(
    private readonly storeDir: string,
    private readonly files: StoreFiles,
  ) {
    this.path = path.join(storeDir, "HEAD.json");
  }

  /** The head as last read or written by this process (undefined if not read yet). */
  peek(): SnapshotHead | undefined {
    return this.loaded ? this.head : undefined;
  }

  async load(): Promise<LoadedHead> {
    const p = this.path;
    // Stat before reading: a write racing the pair leaves a stamp older than the text, read again next time.
    const stamp = await headStampOf(p);
    if (this.loaded && stamp === this.stamp) return { head: this.head, parsed: false, moved: false };
    const moved = this.loaded;
    let parsed = false;
    try {
      this.head = JSON.parse(await readFile(p, "utf8")) as SnapshotHead;
      parsed = true;
    } catch {
      this.head = undefined;
    }
    this.loaded = true;
    this.stamp = stamp;
    return { head: this.head, parsed, moved };
  }

  async save(head: SnapshotHead): Promise<void> {
    await this.files.mkdirOnce(this.storeDir);
    const p = this.path;
    const tmp = `${p}.tmp-${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, JSON.stringify(head), { mode: 0o600 });
    // A rename keeps inode and mtime: the temp file's stamp is the head's.
    const stamp = await headStampOf(tmp);
    await rename(tmp, p);
    this.head = head;
    this.loaded = true;
    this.stamp = stamp;
  }
}

/** HEAD.json's identity, to notice another process's write (undefined when there is none). */
async function headStampOf(p: string): Promise<string | undefined> {
  try {
    const s = await stat(p, { bigint: true });
    return `${s.ino}:${s.mtimeNs}:${s.size}`;
  } catch {
    return undefined;
  }
}
