/**
 * Snapshot I/O with a workspace on another machine, through the thread's {@link Environment}
 * only (`exec`): one `find -printf` lists metadata where the files are, one `tar -c` brings the
 * bytes of just the files that changed, and one `tar -x` plus a small POSIX script puts a restore
 * back. Nothing here needs a native file API, so SSH hosts, containers and any `Environment`
 * (deepagents sandbox providers included) get time travel with a few round trips per snapshot.
 *
 * Trust: the scripts run with the same identity as the agent's own commands (the same `exec`),
 * so reading or writing through a link the agent made on that machine gives it nothing its shell
 * could not do already; the host side is where privilege differs, and there every byte the
 * remote prints is parsed as hostile (remoteListing.ts) and written only into the mirror
 * (mirror.ts). The scripts still never follow a link on purpose: `find` runs physical, the
 * restore checks every parent of a name is a real directory right before it writes.
 *
 * Needs GNU find, tar and coreutils on the remote (`find -printf`, `tar --null -T`, `mv -T`); a
 * probe says so once, and the thread is then not snapshotted (reported once).
 */
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import tar from "tar-stream";
import type { Environment } from "../environment/environment.js";
import { shellQuote, withArgs } from "../environment/shellQuote.js";
import { SHELL_TEMP_TEMPLATE } from "../environment/tempFiles.js";
import { REMOTE_LISTING_MAX_BYTES, REMOTE_PUSH_BATCH_BYTES } from "../guards/limits.js";
import { findExpression, ListingFormatError, parseListing, type ListingPolicy, type RemoteListing } from "./remoteListing.js";
import { WorkbenchError } from "../workbenchError.js";

/** Why a remote workspace cannot be snapshotted (tools missing, root gone): reported once per thread. */
export class RemoteSnapshotError extends WorkbenchError {
  readonly code = "REMOTE_SNAPSHOT";
  override readonly name = "RemoteSnapshotError";
}

/** One file or link a restore writes. */
export interface PushEntry {
  rel: string;
  kind: "file" | "symlink";
  /** File bytes, or the link's target. */
  data: Buffer;
  mode: number;
  mtimeMs: number;
}

/** A restore for the remote side, in the order it is applied: removals, new directories, entries. */
export interface PushPlan {
  /** Files, links or directories (removed only when empty) to delete, deepest first. */
  remove: { rel: string; dir: boolean }[];
  /** Directories to create, parents first. */
  mkdir: string[];
  put: PushEntry[];
}

const PROBE = 'find . -maxdepth 0 -printf "wb-find\\n" && tar --version | head -n 1 && mv --version | head -n 1';
const EXEC_TIMEOUT_MS = 10 * 60_000;

/**
 * The restore script: `$1` is the workspace root. stdin is a tar of `plan` (one line per
 * operation: `R|D|M|P <index> <path as printf %b escapes>`) and the payload members `0`, `1`, …;
 * it is unpacked into a fresh atomic-temp directory inside the root (a name snapshots skip), then
 * each operation checks that every parent of the path is a real directory (not a link) right
 * before it acts. Prints `K <index>` for each operation it left undone (an entry it must not
 * replace holds the name).
 */
const PUSH_SCRIPT = `set -u
cd -P -- "$1" || exit 90
S=$(mktemp -d ./${SHELL_TEMP_TEMPLATE}) || exit 91
trap 'rm -rf -- "$S"' EXIT HUP INT TERM
tar -x -p -f - -C "$S" --no-same-owner || exit 92
ok() {
  p=$1
  while :; do
    case $p in */*) p=\${p%/*} ;; *) return 0 ;; esac
    if [ -L "$p" ] || [ ! -d "$p" ]; then return 1; fi
  done
}
while IFS=' ' read -r op idx enc; do
  rel=$(printf '%bx' "$enc"); rel=\${rel%x}
  case $op in
    R) if ok "$rel" && { [ -L "$rel" ] || [ -f "$rel" ]; }; then rm -f -- "$rel"; fi ;;
    D) if ok "$rel" && [ ! -L "$rel" ] && [ -d "$rel" ]; then rmdir -- "$rel" 2>/dev/null || echo "K $idx"; fi ;;
    M) if ! ok "$rel"; then echo "K $idx"
       elif [ -L "$rel" ] || { [ -e "$rel" ] && [ ! -d "$rel" ]; }; then echo "K $idx"
       elif [ ! -d "$rel" ]; then mkdir -- "$rel" || echo "K $idx"; fi ;;
    P) if ok "$rel" && { [ -L "$rel" ] || [ ! -e "$rel" ] || [ -f "$rel" ]; }; then mv -f -T -- "$S/$idx" "$rel" 2>/dev/null || echo "K $idx"
       else echo "K $idx"; fi ;;
  esac
done < "$S/plan"
`;

/** `printf %b` escapes for every byte outside a safe set (newlines, spaces, quotes included). */
export function escapeForPrintf(rel: string): string {
  let out = "";
  for (const b of Buffer.from(rel, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9._/+-]/.test(c) ? c : `\\0${b.toString(8).padStart(3, "0")}`;
  }
  return out;
}

/** The plan text of {@link PUSH_SCRIPT} and the index of each line's operation in `ops`. */
export function planText(plan: PushPlan): { text: string; ops: { op: "R" | "D" | "M" | "P"; rel: string }[] } {
  const ops: { op: "R" | "D" | "M" | "P"; rel: string }[] = [
    ...plan.remove.map((r) => ({ op: (r.dir ? "D" : "R") as "R" | "D", rel: r.rel })),
    ...plan.mkdir.map((rel) => ({ op: "M" as const, rel })),
    ...plan.put.map((p) => ({ op: "P" as const, rel: p.rel })),
  ];
  return { text: ops.map((o, i) => `${o.op} ${i} ${escapeForPrintf(o.rel)}\n`).join(""), ops };
}

export class RemoteWorkspace {
  private probed: Promise<void> | undefined;

  constructor(
    private readonly env: Environment,
    /** The workspace directory on the remote machine. */
    readonly root: string,
    private readonly policy: ListingPolicy,
  ) {}

  /** Checks once that the remote has the tools (and the root): rejects with {@link RemoteSnapshotError}. */
  probe(): Promise<void> {
    this.probed ??= (async () => {
      const r = await this.env.exec(PROBE, { cwd: this.root, timeoutMs: 60_000 });
      const out = r.stdout.toString("utf8");
      if (r.exitCode !== 0 || !out.includes("wb-find") || !/GNU tar/.test(out) || !/GNU coreutils/.test(out)) {
        throw new RemoteSnapshotError(
          `time travel on a ${this.env.kind} environment needs GNU find, tar and coreutils there (found: ${out.trim().split("\n").join("; ").slice(0, 200) || r.stderr.trim().slice(0, 200) || `exit ${r.exitCode}`}); this thread's files are not snapshotted`,
        );
      }
    })();
    this.probed.catch(() => undefined);
    return this.probed;
  }

  /**
   * Lists the whole workspace (no `paths`), or the given relative paths with everything below
   * them plus each of their ancestors (so an entry below a link is never taken for a file).
   */
  async list(paths?: readonly string[]): Promise<RemoteListing> {
    await this.probe();
    let script: string;
    if (!paths) script = `cd -P -- "$1" || exit 90\nfind . ${findExpression(this.policy.ignoreNames)}`;
    else {
      const starts = [...new Set(paths)].map((p) => `./${p}`);
      const ancestors = new Set<string>();
      for (const p of paths) for (let i = p.indexOf("/"); i !== -1; i = p.indexOf("/", i + 1)) ancestors.add(`./${p.slice(0, i)}`);
      const self = ancestors.size > 0 ? `find ${[...ancestors].map(shellQuote).join(" ")} ${findExpression([], "self")} 2>/dev/null\n` : "";
      script = `cd -P -- "$1" || exit 90\n${self}find ${starts.map(shellQuote).join(" ")} ${findExpression(this.policy.ignoreNames, "starts")} 2>/dev/null\nexit 0`;
    }
    const out = await this.collect(withArgs(script, [this.root]), REMOTE_LISTING_MAX_BYTES);
    const listing = parseListing(out, this.policy);
    if (paths) dropBelowNonDirectories(listing);
    return listing;
  }

  /**
   * Streams the bytes of `rels` (regular files the listing admitted) through `onFile`, in the
   * order tar reads them. A member tar did not send (the file vanished) is simply missing; one
   * that is not what was asked (another name or type, over its listed cap) ends the fetch.
   */
  async fetch(rels: readonly string[], maxFileBytes: number, maxTotalBytes: number, onFile: (rel: string, data: Buffer, mode: number, mtimeMs: number) => Promise<void>): Promise<void> {
    if (rels.length === 0) return;
    await this.probe();
    const wanted = new Set(rels);
    const extract = tar.extract();
    const abort = new AbortController();
    let total = 0;
    let failure: Error | undefined;
    const fail = (e: Error) => {
      failure ??= e;
      abort.abort();
      extract.destroy(e);
    };
    extract.on("entry", (header, stream, next) => {
      const rel = header.name.replace(/^\.\//, "");
      const size = header.size ?? 0;
      total += size;
      if (header.type !== "file" || !wanted.has(rel) || size > maxFileBytes || total > maxTotalBytes) {
        stream.resume();
        fail(new RemoteSnapshotError(`the remote fetch sent an unexpected entry (${header.type} ${JSON.stringify(rel.slice(0, 80))}, ${size} bytes)`));
        return;
      }
      wanted.delete(rel);
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        // pax headers (--format=posix) carry the mtime to the nanosecond, as `find` lists it.
        const paxMtime = Number((header as { pax?: Record<string, string> }).pax?.mtime);
        const mtimeMs = Number.isFinite(paxMtime) ? paxMtime * 1000 : (header.mtime?.getTime() ?? 0);
        onFile(rel, Buffer.concat(chunks), header.mode ?? 0o644, mtimeMs)
          .then(() => next())
          .catch((e: unknown) => fail(e instanceof Error ? e : new Error(String(e))));
      });
    });
    const done = new Promise<void>((resolve, reject) => {
      extract.on("finish", resolve);
      extract.on("error", reject);
    });
    const input = Buffer.from(rels.map((r) => `./${r}\0`).join(""), "utf8");
    const script = withArgs(`cd -P -- "$1" || exit 90\nexec tar -c -f - --format=posix --null --no-recursion -T -`, [this.root]);
    const result = await this.env.exec(script, {
      stdin: input,
      timeoutMs: EXEC_TIMEOUT_MS,
      signal: abort.signal,
      onOutput: (chunk, stream) => {
        if (stream === "stdout" && !failure) extract.write(chunk);
      },
    });
    if (!failure) extract.end();
    await done.catch((e: unknown) => fail(e instanceof Error ? e : new Error(String(e))));
    if (failure) throw failure;
    // Exit 1: a file changed while read (re-read at the next snapshot, its mtime moved); 2: one vanished.
    if (result.timedOut || result.exitCode < 0 || result.exitCode > 2) throw new RemoteSnapshotError(`fetching changed files from the ${this.env.kind} environment failed (exit ${result.exitCode}${result.timedOut ? ", timed out" : ""})`);
  }

  /** Applies `plan` on the remote; returns the relative paths it left as they were (kept). */
  async push(plan: PushPlan): Promise<string[]> {
    await this.probe();
    const kept: string[] = [];
    for (const batch of batches(plan)) {
      const { text, ops } = planText(batch);
      const pack = tar.pack();
      pack.entry({ name: "plan", mode: 0o600 }, text);
      batch.put.forEach((p, i) => {
        const name = String(batch.remove.length + batch.mkdir.length + i);
        const mtime = new Date(p.mtimeMs);
        if (p.kind === "symlink") pack.entry({ name, type: "symlink", linkname: p.data.toString("utf8"), mode: 0o777, mtime });
        // The pax mtime keeps sub-second precision, so the next listing sees the file unchanged.
        else pack.entry({ name, mode: p.mode & 0o777, mtime, pax: { mtime: (p.mtimeMs / 1000).toFixed(6) } } as tar.Headers, p.data);
      });
      pack.finalize();
      const chunks: Buffer[] = [];
      await pipeline(pack, new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(c), cb()) }));
      const r = await this.env.exec(withArgs(PUSH_SCRIPT, [this.root]), { stdin: Buffer.concat(chunks), timeoutMs: EXEC_TIMEOUT_MS });
      if (r.exitCode !== 0) throw new RemoteSnapshotError(`restoring files on the ${this.env.kind} environment failed (exit ${r.exitCode}: ${r.stderr.trim().slice(0, 200)})`);
      for (const m of r.stdout.toString("utf8").matchAll(/^K (\d+)$/gm)) {
        const op = ops[Number(m[1])];
        if (op) kept.push(op.rel);
      }
    }
    return kept;
  }

  /** Runs `script`, collecting stdout up to `max` bytes (more ends the command: an error). */
  private async collect(script: string, max: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    const abort = new AbortController();
    const r = await this.env.exec(script, {
      timeoutMs: EXEC_TIMEOUT_MS,
      signal: abort.signal,
      onOutput: (chunk, stream) => {
        if (stream !== "stdout" || abort.signal.aborted) return;
        size += chunk.length;
        if (size > max) abort.abort();
        else chunks.push(chunk);
      },
    });
    if (abort.signal.aborted) throw new RemoteSnapshotError(`the workspace listing on the ${this.env.kind} environment is over ${max} bytes; it is not snapshotted`);
    // find exits 1 when it could not read a directory: what it could read is still the listing.
    if (r.timedOut || (r.exitCode !== 0 && r.exitCode !== 1)) {
      const why = r.exitCode === 90 ? "the workspace directory is missing" : `exit ${r.exitCode}${r.timedOut ? ", timed out" : ""}`;
      throw new RemoteSnapshotError(`listing the workspace on the ${this.env.kind} environment failed (${why})`);
    }
    return Buffer.concat(chunks);
  }
}

/** Drops entries listed below an ancestor that is not a directory (a link, say) or was not listed. */
function dropBelowNonDirectories(listing: RemoteListing): void {
  for (const rel of [...listing.entries.keys()]) {
    for (let i = rel.indexOf("/"); i !== -1; i = rel.indexOf("/", i + 1)) {
      const up = listing.entries.get(rel.slice(0, i));
      if (up?.type !== "directory") {
        listing.entries.delete(rel);
        break;
      }
    }
  }
}

/** Splits a plan so no one exec carries more than {@link REMOTE_PUSH_BATCH_BYTES} of payload. */
function batches(plan: PushPlan): PushPlan[] {
  const out: PushPlan[] = [{ remove: plan.remove, mkdir: plan.mkdir, put: [] }];
  let bytes = 0;
  for (const p of plan.put) {
    if (bytes > 0 && bytes + p.data.length > REMOTE_PUSH_BATCH_BYTES) {
      out.push({ remove: [], mkdir: [], put: [] });
      bytes = 0;
    }
    out.at(-1)!.put.push(p);
    bytes += p.data.length;
  }
  return out;
}

export { ListingFormatError };
