/**
 * The media route's open of a workspace file on this machine's disk (the file may have been
 * planted by the agent's shell): the real path is `lstat`ed and must be a regular file; it is
 * then opened `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` (a symlink swapped in fails, a FIFO never
 * blocks the thread pool), the descriptor is verified against the open guard (confinement and
 * access policy on what was really opened, as LocalFileOperations does), and its `fstat` must be
 * that same regular file (device and inode), as `DirHandle.openFile` checks a listed entry.
 */
import { constants } from "node:fs";
import { lstat, realpath, type FileHandle } from "node:fs/promises";
import { nonRegularFileReason } from "../guards/devices.js";
import { openChecked } from "../environment/localFileOperations.js";
import type { FileStat, OpenGuard } from "../environment/fileOperations.js";

const FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);
const CHANGED = "was replaced while it was being read. Try again.";

function typeOf(s: { isFile(): boolean; isDirectory(): boolean }): FileStat["type"] {
  return s.isFile() ? "file" : s.isDirectory() ? "directory" : "other";
}

/**
 * Opens `systemPath` for reading, or says why not (a guiding message naming `shown`). Missing
 * files and guard refusals reject as the FileOperations' reads do (ENOENT, OpenRefusedError).
 */
export async function openWorkspaceFile(systemPath: string, shown: string, guard: OpenGuard | undefined): Promise<{ fh: FileHandle } | { refused: string }> {
  const real = await realpath(systemPath);
  const listed = await lstat(real);
  const type = typeOf(listed);
  if (type !== "file") return { refused: nonRegularFileReason(shown, { type, size: listed.size, mtimeMs: listed.mtimeMs, mode: listed.mode & 0o7777 })! };
  let fh: FileHandle;
  try {
    fh = await openChecked(real, FLAGS, guard);
  } catch (err) {
    // A symlink swapped in at the last component since the realpath.
    if ((err as NodeJS.ErrnoException).code === "ELOOP") return { refused: `"${shown}" ${CHANGED}` };
    throw err;
  }
  try {
    const s = await fh.stat();
    if (!s.isFile() || s.ino !== listed.ino || s.dev !== listed.dev) {
      await fh.close().catch(() => undefined);
      return { refused: s.isFile() ? `"${shown}" ${CHANGED}` : nonRegularFileReason(shown, { type: typeOf(s), size: s.size, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 })! };
    }
    return { fh };
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}
