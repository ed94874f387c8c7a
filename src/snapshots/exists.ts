import { lstat } from "node:fs/promises";

/** True when something is at `p` (a link counts as itself: never followed). */
export async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}
