import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { brotliDecompressSync } from "node:zlib";

/** Every file under `dir` (skipping `skip` names) → content, as base64 so bytes compare exactly. */
export async function contents(dir: string, skip: readonly string[] = []): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (skip.includes(e.name)) continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        out[`${r}/`] = "";
        await walk(path.join(d, e.name), r);
      } else out[r] = (await readFile(path.join(d, e.name))).toString("base64");
    }
  };
  await walk(dir, "");
  return out;
}

/** Everything a snapshot store (or any directory) holds, as text: compressed blobs (zblobs/) as what they hold. */
export async function collectText(dir: string): Promise<string> {
  let out = "";
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        const content = await readFile(p);
        out += (p.includes(`${path.sep}zblobs${path.sep}`) ? brotliDecompressSync(content) : content).toString("latin1");
      }
    }
  };
  await walk(dir);
  return out;
}
