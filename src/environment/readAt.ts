import type { FileHandle } from "node:fs/promises";

/**
 * Reads up to `length` bytes at `start` through an open descriptor, looping over short reads;
 * fewer only at the end of the file. The one positional read of a whole window (local file
 * operations, media, descriptor-verified workspace reads).
 */
export async function readAt(fh: FileHandle, start: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(Math.max(0, length));
  let filled = 0;
  while (filled < buf.length) {
    const { bytesRead } = await fh.read(buf, filled, buf.length - filled, start + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buf.subarray(0, filled);
}
