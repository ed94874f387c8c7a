/**
 * The listing half of snapshots on a remote environment (SSH host, container, any `Environment`):
 * one `find -printf` over `exec` prints every entry's metadata where the files are, and this pure
 * parser turns those bytes into entries the host may trust. The remote side is the agent's own
 * machine, so its output is hostile input: names are raw bytes, checked here and nowhere else.
 *
 * Edge cases, each decided here once:
 * - Names that are not UTF-8, contain a control byte the store cannot name, or have an empty,
 *   `.` or `..` component are never recorded (listed as skipped `not-utf8-name`); nothing below
 *   such a directory is recorded either.
 * - Entries deeper than {@link MAX_REMOTE_DEPTH} components are skipped (`too-deep`).
 * - FIFOs, sockets and devices are listed (`other`) so a restore knows the name is taken, never read.
 * - Sparse files (the store's rule: over 1 MiB with under 1/8 of their size on disk) and files over
 *   the per-file cap are listed but not fetched (`sparse`, `too-large`).
 * - Ignored names are pruned by `find` itself (never listed, never descended); excluded paths
 *   (credential files) and atomic-write temp files are dropped here.
 * - A record that does not parse ends the listing with an error: a truncated or forged stream
 *   never yields a partial listing that a restore would take for the whole tree.
 */
import { isAtomicTempName } from "../environment/tempFiles.js";
import { shellQuote } from "../environment/shellQuote.js";
import { printableBytes, type SkippedEntry } from "./format.js";

export { printableBytes };
import { WorkbenchError } from "../workbenchError.js";

/** Components below the workspace root a remote listing descends (the local store's bound). */
export const MAX_REMOTE_DEPTH = 512;

export type RemoteEntryType = "file" | "directory" | "symlink" | "other";

/** One entry of a remote workspace as `find` printed it. */
export interface RemoteEntry {
  type: RemoteEntryType;
  size: number;
  /** Modification time in milliseconds. */
  mtimeMs: number;
  /** Permission bits as listed (setuid/setgid/sticky included; the store drops them). */
  mode: number;
  /** Disk usage in 512-byte blocks (sparse-file detection). */
  blocks: number;
  /** The link's target (symlinks only). */
  target?: string;
}

/** A parsed listing: relative `/`-separated path → entry, and what was seen but cannot be recorded. */
export interface RemoteListing {
  entries: Map<string, RemoteEntry>;
  skipped: SkippedEntry[];
}

/** Which entries a listing keeps (the store's policy, applied where the listing is parsed). */
export interface ListingPolicy {
  ignoreNames: readonly string[];
  excludePath: (rel: string) => boolean;
  maxFileBytes: number;
}

/** The same sparse rule as the local store (src/snapshots/store.ts `isSparse`). */
export function isSparseListed(e: Pick<RemoteEntry, "size" | "blocks">): boolean {
  return e.size > 1024 * 1024 && e.blocks * 512 < e.size / 8;
}

/** Why a listed regular file is not fetched, or undefined when it is. */
export function fetchRefusal(e: RemoteEntry, maxFileBytes: number): "sparse" | "too-large" | undefined {
  if (e.type !== "file") return undefined;
  if (isSparseListed(e)) return "sparse";
  if (e.size > maxFileBytes) return "too-large";
  return undefined;
}

/** `find -name` takes a glob: ignored names are matched literally. */
function findNameLiteral(name: string): string {
  return name.replace(/[\\*?[\]]/g, (c) => `\\${c}`);
}

/** The `-printf` format: metadata, then the path and the link target, each NUL-terminated. */
export const LISTING_FORMAT = "%y %s %T@ %m %b\\0%p\\0%l\\0";

/**
 * The `find` expression (after `find <starts>`) that prints `LISTING_FORMAT` for every entry
 * except ignored names, which are pruned. `below`: what is below `.`; `starts`: the start points
 * and what is below them; `self`: the start points only.
 */
export function findExpression(ignoreNames: readonly string[], mode: "below" | "starts" | "self" = "below"): string {
  const depth = mode === "self" ? "-maxdepth 0" : `${mode === "below" ? "-mindepth 1 " : ""}-maxdepth ${MAX_REMOTE_DEPTH + 1}`;
  const printf = `-printf ${shellQuote(LISTING_FORMAT)}`;
  if (ignoreNames.length === 0 || mode === "self") return `${depth} ${printf}`;
  const names = ignoreNames.map((n) => `-name ${shellQuote(findNameLiteral(n))}`).join(" -o ");
  return `${depth} \\( ${names} \\) -prune -o ${printf}`;
}

const TYPES: Record<string, RemoteEntryType> = { f: "file", d: "directory", l: "symlink" };
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A relative path the store can record: UTF-8, no control bytes, no empty/`.`/`..` component. */
export function recordablePath(raw: Uint8Array): string | undefined {
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    return undefined;
  }
  if (text === "" || /[\u0000-\u001f\u007f]/.test(text)) return undefined;
  const parts = text.split("/");
  if (parts.some((p) => p === "" || p === "." || p === "..")) return undefined;
  return text;
}

/** Thrown when a listing stream is not what `find` prints (truncated, forged, another tool). */
export class ListingFormatError extends WorkbenchError {
  readonly code = "LISTING_FORMAT";
  override readonly name = "ListingFormatError";
}

function parseMeta(meta: string): Omit<RemoteEntry, "target"> {
  const m = /^([a-zA-Z]) (\d+) (\d+(?:\.\d+)?) ([0-7]+) (\d+)$/.exec(meta);
  if (!m) throw new ListingFormatError(`unexpected listing record ${JSON.stringify(meta.slice(0, 80))}`);
  const [, y, size, mtime, mode, blocks] = m as unknown as [string, string, string, string, string, string];
  return { type: TYPES[y] ?? "other", size: Number(size), mtimeMs: Number(mtime) * 1000, mode: parseInt(mode, 8), blocks: Number(blocks) };
}

/**
 * Parses `find ./… -printf LISTING_FORMAT` output (every `%p` starts with `./`, whether it is the
 * whole tree below `.` or given start points with `-maxdepth 0`). The caller has already checked
 * the stream's end marker, so a record cut short is an error here, never a shorter listing.
 */
export function parseListing(out: Buffer, policy: ListingPolicy): RemoteListing {
  const entries = new Map<string, RemoteEntry>();
  const skipped: SkippedEntry[] = [];
  const refusedDirs = new Set<string>();
  const fields = splitNul(out);
  if (fields.length % 3 !== 0) throw new ListingFormatError("listing ended inside a record (truncated output)");
  for (let i = 0; i < fields.length; i += 3) {
    const meta = parseMeta(fields[i]!.toString("latin1"));
    const printed = fields[i + 1]!;
    if (printed[0] !== 0x2e || printed[1] !== 0x2f) throw new ListingFormatError("listing record names a path outside ./");
    const raw = printed.subarray(2);
    const shown = printableBytes(raw);
    if (refusedDirs.size > 0 && underAny(shown, refusedDirs)) continue;
    const rel = recordablePath(raw);
    if (rel === undefined) {
      skipped.push({ path: shown, reason: "not-utf8-name" });
      if (meta.type === "directory") refusedDirs.add(shown);
      continue;
    }
    addEntry(entries, skipped, rel, meta, fields[i + 2]!, policy);
  }
  return { entries, skipped };
}

/** True when an ancestor of `shown` is in `dirs` (one lookup per component). */
function underAny(shown: string, dirs: ReadonlySet<string>): boolean {
  for (let i = shown.indexOf("/"); i !== -1; i = shown.indexOf("/", i + 1)) if (dirs.has(shown.slice(0, i))) return true;
  return false;
}

function addEntry(entries: Map<string, RemoteEntry>, skipped: SkippedEntry[], rel: string, meta: Omit<RemoteEntry, "target">, target: Buffer, policy: ListingPolicy): void {
  const parts = rel.split("/");
  if (parts.some((p) => policy.ignoreNames.includes(p))) return;
  if (policy.excludePath(rel) || isAtomicTempName(parts.at(-1)!)) return;
  if (parts.length > MAX_REMOTE_DEPTH) {
    if (parts.length === MAX_REMOTE_DEPTH + 1) skipped.push({ path: rel, reason: "too-deep" });
    return;
  }
  const entry: RemoteEntry = meta;
  if (meta.type === "symlink") {
    const t = recordableTarget(target);
    if (t === undefined) {
      skipped.push({ path: rel, reason: "unreadable" });
      return;
    }
    entry.target = t;
  }
  if (meta.type === "other") skipped.push({ path: rel, reason: "not-regular" });
  const refused = fetchRefusal(entry, policy.maxFileBytes);
  if (refused) skipped.push({ path: rel, reason: refused, size: entry.size });
  entries.set(rel, entry);
}

function recordableTarget(raw: Buffer): string | undefined {
  try {
    const t = strictUtf8.decode(raw);
    return t === "" || t.includes("\0") ? undefined : t;
  } catch {
    return undefined;
  }
}

/** Splits NUL-terminated fields (a trailing partial field is an error the callers detect by count). */
function splitNul(out: Buffer): Buffer[] {
  const fields: Buffer[] = [];
  let start = 0;
  for (let i = out.indexOf(0, start); i !== -1; i = out.indexOf(0, start)) {
    fields.push(out.subarray(start, i));
    start = i + 1;
  }
  if (start < out.length) fields.push(out.subarray(start));
  return fields;
}
