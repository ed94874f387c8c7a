/**
 * Picks and runs the search engine for a thread: where the files are decides.
 * - Files on this machine's disk: a local ripgrep when `rg` runs here, else the JS walk.
 * - Files in another environment (SSH host, container): `rg` run *inside* that environment when
 *   `command -v rg` finds it there (probed once per Environment), else the JS walk over the
 *   environment's FileOperations. Same request, same outcome shape, whichever engine answers.
 */
import path from "node:path";
import type { Environment } from "../environment/environment.js";
import { isLocalFileOperations } from "../environment/locality.js";
import { shellQuote } from "../environment/shellQuote.js";
import type { FileOperations } from "../environment/fileOperations.js";
import { FALLBACK_MAX_FILE_BYTES, runJsSearch, type WalkFiles } from "./fallback.js";
import { detectRipgrep, runRipgrep } from "./ripgrep.js";
import type { SearchOutcome, SearchRequest } from "./types.js";

/** How {@link runSearch} chooses and finds its engine. */
export interface SearchEngineOptions {
  /** `"auto"` (default): ripgrep when available, else JS; `"ripgrep"` or `"js"` to force one. */
  engine?: "auto" | "ripgrep" | "js";
  /** ripgrep executable (default `rg`, looked up on the PATH of wherever the search runs). */
  ripgrepPath?: string;
  /** Where the files are. */
  fileOps: FileOperations;
  /**
   * The environment holding those files, which can run commands next to them (absent: files
   * reached only through `fileOps`, searched with the JS walk).
   */
  environment?: Environment;
}

/** Per Environment: the ripgrep binary found there, or undefined (probed once). */
const remoteRipgrep = new WeakMap<Environment, Promise<string | undefined>>();

const PROBE_TIMEOUT_MS = 10_000;

/** The ripgrep command usable inside `env`, if any (one `command -v` per Environment object). */
export function ripgrepIn(env: Environment, binary = "rg"): Promise<string | undefined> {
  let found = remoteRipgrep.get(env);
  if (!found) {
    found = env
      .exec(`command -v ${shellQuote(binary)} >/dev/null 2>&1`, { timeoutMs: PROBE_TIMEOUT_MS })
      .then((r) => (r.exitCode === 0 ? binary : undefined));
    // A failed probe (connection down) is not remembered: the next search asks again.
    found.catch(() => remoteRipgrep.delete(env));
    remoteRipgrep.set(env, found);
  }
  return found;
}

/** Runs `req` with the engine the options call for. Never rejects: failures come back in `error`. */
export async function runSearch(req: SearchRequest, options: SearchEngineOptions): Promise<SearchOutcome> {
  const engine = options.engine ?? "auto";
  if (isLocalFileOperations(options.fileOps)) {
    if (engine === "js") return runJsSearch(req);
    const rg = options.ripgrepPath ?? (await detectRipgrep());
    if (rg !== undefined) return runRipgrep(req, rg);
    if (engine === "ripgrep") return notInstalled("ripgrep (rg) is not installed");
    return runJsSearch(req);
  }
  const env = options.environment;
  if (engine !== "js" && env) {
    const rg = await ripgrepIn(env, options.ripgrepPath).catch(() => undefined);
    if (rg !== undefined) return runRipgrep(req, rg, { environment: env, fileOps: options.fileOps });
  }
  if (engine === "ripgrep") return notInstalled("ripgrep (rg) is not installed where this thread's files are");
  return runJsSearch(req, walkFilesOver(options.fileOps));
}

function notInstalled(error: string): SearchOutcome {
  return { engine: "ripgrep", lines: [], files: [], counts: [], complete: true, error };
}

/** The JS walk's file access over a FileOperations (an SSH host, a container…). */
export function walkFilesOver(ops: FileOperations): WalkFiles {
  return {
    async stat(p) {
      const s = await ops.stat(p);
      if (!s) throw Object.assign(new Error(`ENOENT: no such file or directory, stat '${p}'`), { code: "ENOENT" });
      return { size: s.size, isFile: () => s.type === "file", isDirectory: () => s.type === "directory" };
    },
    realpath: (p) => ops.realpath(p),
    async readdir(p) {
      return (await ops.readdir(p)).map((e) => ({
        name: e.name,
        isFile: () => e.type === "file",
        isDirectory: () => e.type === "directory",
        isSymbolicLink: () => e.type === "symlink",
      }));
    },
    async readIgnoreFile(p) {
      const s = await ops.lstat(p).catch(() => null);
      return s?.type === "file" ? ops.readText(p).catch(() => undefined) : undefined;
    },
    async readContent(p, { within }) {
      const s = await ops.stat(p);
      if (s?.type !== "file" || s.size > FALLBACK_MAX_FILE_BYTES) return undefined;
      // No descriptor to verify on a remote backend: re-check the real path after the read.
      // One call (the size is checked): NUL bytes survive the UTF-8 round trip, so binary files
      // are still recognised; invalid sequences are decoded as the walk would.
      const data = Buffer.from(await ops.readText(p), "utf8");
      const real = await ops.realpath(p);
      const rel = path.relative(within, real);
      return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel)) ? data : undefined;
    },
  };
}
