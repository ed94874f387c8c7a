/**
 * What a consumer installs: the package is built and packed, then installed into an empty project
 * with `npm install --omit=dev` (the npm registry, as a user would). Anchor, in the same run: the
 * same tarball with the optional peer dependencies moved back into `dependencies`, as they were
 * before they became optional.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const exec = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

interface Manifest {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

async function du(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await du(full);
    else if (entry.isFile()) total += (await stat(full)).size;
  }
  return total;
}

async function install(tarball: string, into: string): Promise<{ bytes: number; packages: number; warnings: string[] }> {
  await mkdir(into, { recursive: true });
  await writeFile(path.join(into, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }));
  const { stderr } = await exec("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", tarball], { cwd: into, timeout: 600_000, maxBuffer: 64 << 20 });
  const lock = JSON.parse(await readFile(path.join(into, "node_modules", ".package-lock.json"), "utf8")) as { packages: Record<string, unknown> };
  const warnings = [...new Set([...stderr.matchAll(/EBADENGINE[^\n]*\n[^\n]*package: '([^']+)'/g)].map((m) => m[1]!))];
  return { bytes: await du(path.join(into, "node_modules")), packages: Object.keys(lock.packages).filter(Boolean).length, warnings };
}

export async function run(): Promise<string> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "wb-install-size-"));
  try {
    await exec("npm", ["run", "build"], { cwd: repo, timeout: 600_000, maxBuffer: 64 << 20 });
    const { stdout } = await exec("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: repo, timeout: 300_000, maxBuffer: 64 << 20 });
    const tarball = path.join(tmp, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
    // The anchor: unpack, move the optional peers into dependencies, pack again.
    const unpacked = path.join(tmp, "anchor");
    await mkdir(unpacked);
    await exec("tar", ["-xzf", tarball, "-C", unpacked]);
    const pkgDir = path.join(unpacked, "package");
    const manifest = JSON.parse(await readFile(path.join(pkgDir, "package.json"), "utf8")) as Manifest;
    const optional = Object.keys(manifest.peerDependenciesMeta ?? {}).filter(
      (name) => manifest.peerDependenciesMeta![name]!.optional && name !== "deepagents",
    );
    for (const name of optional) {
      manifest.dependencies = { ...manifest.dependencies, [name]: manifest.peerDependencies![name]! };
      delete manifest.peerDependencies![name];
      delete manifest.peerDependenciesMeta![name];
    }
    await writeFile(path.join(pkgDir, "package.json"), JSON.stringify(manifest, null, 2));
    const { stdout: anchorOut } = await exec("npm", ["pack", "--json", "--pack-destination", unpacked], { cwd: pkgDir, timeout: 300_000 });
    const anchorTarball = path.join(unpacked, (JSON.parse(anchorOut) as Array<{ filename: string }>)[0]!.filename);

    const before = await install(anchorTarball, path.join(tmp, "before"));
    const after = await install(tarball, path.join(tmp, "after"));
    const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
    const row = (label: string, r: typeof before) =>
      `| ${label} | ${mb(r.bytes)} MB | ${r.packages} | ${r.warnings.length ? r.warnings.map((w) => `\`${w}\``).join(", ") : "none"} |`;
    return [
      "## Install size",
      "",
      "A consumer's `npm install --omit=dev` of the packed tarball into an empty project (required peers `langchain`,",
      "`@langchain/core`, `@langchain/langgraph` included, as npm installs them). Anchor: the same tarball with the",
      `optional peers (${optional.map((n) => `\`${n}\``).join(", ")}) as plain dependencies, installed in the same run.`,
      "",
      "| install | node_modules | packages | EBADENGINE warnings |",
      "|---|---:|---:|---|",
      row("optional peers as dependencies (anchor)", before),
      row("optional peers (now)", after),
      "",
      `Saved: ${mb(before.bytes - after.bytes)} MB (${((100 * (before.bytes - after.bytes)) / before.bytes).toFixed(0)}%), ${before.packages - after.packages} packages.`,
      "Every `@mendable/firecrawl-js` v4 release declares Node ≥ 22 (checked: all 87 with `npm view`); the Node-20 releases",
      "are the v1 SDK for the retired v1 API. The warning now reaches only those who install Firecrawl's SDK.",
    ].join("\n");
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
