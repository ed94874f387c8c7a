import { mkdir } from "node:fs/promises";
import path from "node:path";

/** A workspace root `<parent>/<name>` with one thread's directory in it, created. */
export async function threadDir(parent: string, name: string, threadId = `t-${name}`): Promise<{ root: string; threadId: string; dir: string }> {
  const root = path.join(parent, name);
  const dir = path.join(root, threadId);
  await mkdir(dir, { recursive: true });
  return { root, threadId, dir };
}
