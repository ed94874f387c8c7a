/**
 * The host-side mirror of a remote workspace: a plain directory the local snapshot store records
 * and restores (so a remote thread gets the same store, caps and crash safety as a local one),
 * kept equal to the remote files by {@link RemoteSnapshotStore}. Names and bytes come from the
 * remote listing and fetch — hostile input — so every write here goes through directories held
 * by descriptor ({@link DirHandle}): a name is one component, a symlink the remote listed is
 * recreated as a link and never followed, and whatever stands where a directory must be is
 * removed first, never written through.
 */
import { constants } from "node:fs";
import { chmod, mkdir, open, rename, rm, symlink } from "node:fs/promises";
import path from "node:path";
import { DirHandle } from "../environment/dirHandle.js";
import { atomicTempName } from "../environment/tempFiles.js";

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

export class Mirror {
  /** The parent directory last held open (writes arrive grouped by directory). */
  private held: { rel: string; dir: DirHandle } | undefined;

  constructor(readonly dir: string) {}

  /** Creates the mirror's root if missing. */
  async ensureRoot(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  /** The absolute path of `rel` in the mirror (what the store is told changed). */
  abs(rel: string): string {
    return path.join(this.dir, ...rel.split("/"));
  }

  /** Writes a regular file (mode without setuid/setgid/sticky, mtime as the remote has it). */
  async putFile(rel: string, data: Uint8Array, mode: number, mtimeMs: number): Promise<void> {
    const { dir, name } = await this.parentOf(rel);
    const tmp = atomicTempName();
    const fh = await open(dir.at(tmp), CREATE_FLAGS, 0o600);
    try {
      await fh.writeFile(data);
      await fh.chmod(mode & 0o777);
      await fh.utimes(mtimeMs / 1000, mtimeMs / 1000);
    } finally {
      await fh.close();
    }
    await this.replace(dir, tmp, name);
  }

  /** Recreates a symlink (its target is only ever a string here). */
  async putLink(rel: string, target: string): Promise<void> {
    const { dir, name } = await this.parentOf(rel);
    const tmp = atomicTempName();
    await symlink(target, dir.at(tmp) as string);
    await this.replace(dir, tmp, name);
  }

  /** Makes `rel` a directory (whatever else stands there is removed first). */
  async ensureDir(rel: string): Promise<void> {
    await this.dirAt(rel, true);
  }

  /** Changes a file's mode bits (setuid/setgid/sticky never set). */
  async chmod(rel: string, mode: number): Promise<void> {
    const { dir, name } = await this.parentOf(rel);
    const st = await dir.lstat(name);
    if (st?.isFile()) await chmod(dir.at(name) as string, mode & 0o777);
  }

  /** Removes `rel` (a directory with everything below); a no-op when it is missing. */
  async remove(rel: string): Promise<void> {
    const i = rel.lastIndexOf("/");
    const dir = await this.dirAt(i === -1 ? "" : rel.slice(0, i), false);
    if (dir) await rm(dir.at(rel.slice(i + 1)) as string, { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await this.held?.dir.close();
    this.held = undefined;
  }

  private async replace(dir: DirHandle, tmp: string, name: string): Promise<void> {
    try {
      await rename(dir.at(tmp) as string, dir.at(name) as string);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "EISDIR" && code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "ENOTDIR") {
        await rm(dir.at(tmp) as string, { force: true });
        throw error;
      }
      // A directory holds the name: the remote replaced it with a file or a link.
      await rm(dir.at(name) as string, { recursive: true, force: true });
      await rename(dir.at(tmp) as string, dir.at(name) as string);
    }
  }

  /** The held parent directory of `rel` and its last component (made on the way: see {@link dirAt}). */
  private async parentOf(rel: string): Promise<{ dir: DirHandle; name: string }> {
    const i = rel.lastIndexOf("/");
    return { dir: (await this.dirAt(i === -1 ? "" : rel.slice(0, i), true))!, name: rel.slice(i + 1) };
  }

  /**
   * The directory `rel`, held open. `create`: made where missing, replacing a file or link in
   * the way; otherwise undefined when any component is not a directory.
   */
  private async dirAt(rel: string, create: boolean): Promise<DirHandle | undefined> {
    if (this.held?.rel === rel) return this.held.dir;
    await this.close();
    let dir = await DirHandle.open(this.dir);
    try {
      for (const seg of rel === "" ? [] : rel.split("/")) {
        let next = await dir.openDir(seg);
        if (!next && create) {
          if (await dir.lstat(seg)) await rm(dir.at(seg) as string, { recursive: true, force: true });
          await mkdir(dir.at(seg) as string, { mode: 0o755 });
          next = await dir.openDir(seg);
          if (!next) throw new Error(`could not create ${rel} in the snapshot mirror`);
        }
        await dir.close();
        if (!next) return undefined;
        dir = next;
      }
    } catch (error) {
      await dir.close();
      throw error;
    }
    this.held = { rel, dir };
    return dir;
  }
}
