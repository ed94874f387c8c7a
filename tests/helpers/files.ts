import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

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
