/** Writes of a snapshot store's own files: directories made once, objects written once, atomically. */
import { randomBytes } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { exists } from "./exists.js";

export class StoreFiles {
  /** Directories of the store known to exist (saves a syscall each). */
  private readonly madeDirs = new Set<string>();

  async mkdirOnce(dir: string): Promise<void> {
    if (this.madeDirs.has(dir)) return;
    await mkdir(dir, { recursive: true });
    this.madeDirs.add(dir);
  }

  /** Atomic write: temporary file + rename, so a reader never sees half an object. */
  async writeObject(p: string, data: string | Buffer): Promise<void> {
    if (await exists(p)) return;
    await this.writeAtomic(p, data);
  }

  async writeAtomic(p: string, data: string | Buffer): Promise<void> {
    await this.mkdirOnce(path.dirname(p));
    const tmp = `${p}.tmp-${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, data, { mode: 0o600 });
    await rename(tmp, p);
  }
}
