import { createHash } from "node:crypto";
import type { Dirent } from "node:fs";
import { readlink, realpath } from "node:fs/promises";
import { isAtomicTempName, removeStaleTempFiles } from "./environment/tempFiles.js";
import path from "node:path";
import pLimit from "p-limit";
import { DEFAULT_IGNORED_NAMES } from "./changes/ignore-names.js";
import { assertFileOperations } from "./environment/assertFileOperations.js";
import { DirHandle } from "./environment/dirHandle.js";
import { Gitignore, IgnoreWalk, workspaceIgnoreRules } from "./search/gitignoreMatch.js";
import { LIMITS } from "./guards/limits.js";
import { isLocalFileOperations } from "./environment/locality.js";
import type { FileOperations } from "./environment/fileOperations.js";
import { parseOptions } from "./options.js";
import { z } from "zod";

/** Options of {@link renderDirectoryTree}. */
export interface TreeOptions {
  /** First line of the output (default `"."`). Must be a single line. */
  rootLabel?: string;
  /**
   * Most entries shown (default 200). What does not fit is summarised per directory as
   * `... N more entries in dir/`, never dropped silently. `Infinity` shows everything.
   */
  maxEntries?: number;
  /**
   * Deepest level listed (default unlimited): 1 lists the root's entries only, and each directory
   * at that level is summarised by its entry count.
   */
  maxDepth?: number;
  /**
   * Most characters in the output (default 8,000), besides `maxEntries`. A tree over it is
   * compacted in steps until it fits: chains of single directories on one line (`a/b/c/`),
   * then long names and paths shortened in the middle with `...(+N chars)...`, then the last lines
   * replaced by `... N more lines not shown (character budget)`. Nothing is dropped silently.
   * `Infinity` turns the budget off.
   */
  maxChars?: number;
  /** Extra gitignore-style patterns, relative to the root (e.g. `["*.log", "dist/"]`). */
  ignore?: readonly string[];
  /** Honour `.gitignore` files of the listed directories (default true). */
  useGitignore?: boolean;
  /** Entry names hidden wherever they occur (default `[".git", "node_modules"]`; `[]` shows them). */
  defaultIgnores?: readonly string[];
  /** Directories read at once (default 16). */
  concurrency?: number;
  /**
   * Where the directory lives (default: this machine, read with native `fs`). A remote backend
   * (e.g. `ShellFileOperations` over SSH) is listed with `readdir`, `.gitignore` files are read
   * with `readText`, and symlink targets come from `realpath` (a dangling link shows
   * `[unreadable link]`, a chain of links its final target).
   */
  fileOps?: FileOperations;
}

export const DEFAULT_TREE_MAX_ENTRIES = 200;
export const DEFAULT_TREE_MAX_CHARS = 8_000;
/** Labels longer than this are shortened in the middle once a tree is over its character budget. */
const MAX_LABEL_CHARS = 120;
/** Marks a label shortened to fit the character budget; `(+N chars)` tells how much is missing. */
export const TREE_SHORTENED_MARK = "...(+";
/**
 * The drawing, in ASCII (`tree --charset=ascii`). Box-drawing characters cost more tokens, and one
 * non-ASCII character in the history makes every later checkpoint serialise as two-byte text:
 * measured as most of the FileManager's per-step cost over a no-op middleware.
 */
export const TREE_BRANCH = "|-- ";
export const TREE_LAST = "`-- ";
export const TREE_PIPE = "|   ";
export const TREE_INDENT = "    ";
/** Starts a line that counts entries not shown instead of naming one. */
export const TREE_SUMMARY = "... ";

type Kind = "dir" | "file" | "link";

interface Entry {
  name: string;
  kind: Kind;
  node?: DirNode;
  linkTarget?: string;
}

interface DirNode {
  /** Path relative to the root, `/`-separated; `""` for the root. */
  rel: string;
  abs: string;
  depth: number;
  /** The `.gitignore` files in effect here, positioned at this directory. */
  ignore: IgnoreWalk;
  /** The `ignore` option's patterns, positioned here (they apply whatever the files say). */
  extra: IgnoreWalk;
  entries: Entry[];
  shown: number;
  error?: string;
}

interface Resolved {
  rootLabel: string;
  maxEntries: number;
  maxDepth: number;
  maxChars: number;
  useGitignore: boolean;
  defaultNames: Set<string>;
  extra: Gitignore | undefined;
  concurrency: number;
  source: TreeSource;
}

/** What one directory read gives: its entries, and its `.gitignore`'s text when asked for and readable. */
interface Listing {
  dirents: Listed[];
  ignoreText?: string;
}

/** The few reads a render needs, from the local disk or through a FileOperations. */
interface TreeSource {
  /**
   * The directory `rel` (below the root; `abs` is the same place). With `withIgnore`, also its
   * `.gitignore` when that is a regular file — never a symlink (a planted `.gitignore ->
   * /outside/file` would turn that file's lines into rules whose effect on the listing tells
   * what they say), never a FIFO or socket (opening one blocks).
   */
  list(abs: string, rel: string, withIgnore: boolean): Promise<Listing>;
  /** Where the link at `linkPath` points, in the coordinates of `rootAbs`; `undefined` when unreadable. */
  linkTarget(linkPath: string, rootAbs: string): Promise<string | undefined>;
  /** Removes the stale atomic-write temp files among `names` in `dir` (never throws). */
  sweep(dir: string, names: string[]): Promise<unknown>;
}

/** The part of a `Dirent` the render uses (native Dirents are used as they are). */
type Listed = Pick<Dirent, "name" | "isDirectory" | "isSymbolicLink">;

/**
 * This machine's disk, read by descriptor: each directory is opened `O_NOFOLLOW` and must really
 * be the root's real path plus `rel` (a directory swapped for a symlink after its parent was
 * listed is reported unreadable, never followed out of the tree); its entries and `.gitignore`
 * are read through that one descriptor (see `DirHandle.readRegular`: regular files only, bounded).
 */
function localSource(rootAbs: string): TreeSource {
  let realRoot: Promise<string> | undefined;
  return {
    async list(_abs, rel, withIgnore) {
      realRoot ??= realpath(rootAbs);
      const real = await realRoot;
      const expected = rel === "" ? real : path.join(real, ...rel.split("/"));
      const dir = await DirHandle.openVerified(expected, expected);
      if (!dir) throw Object.assign(new Error("moved"), { code: "ECHANGED" });
      try {
        // One readdir call per directory: measured 3-5x faster than iterating an opendir handle.
        const dirents = await dir.list();
        if (!withIgnore || !dirents.some((d) => d.name === ".gitignore" && d.isFile())) return { dirents };
        const read = await dir.readRegular(".gitignore", LIMITS.ignoreFileMaxBytes).catch(() => undefined);
        return read?.kind === "file" ? { dirents, ignoreText: read.data.toString("utf8") } : { dirents };
      } finally {
        await dir.close();
      }
    },
    async linkTarget(linkPath) {
      try {
        return path.resolve(path.dirname(linkPath), await readlink(linkPath));
      } catch {
        return undefined;
      }
    },
    sweep: (dir, names) => removeStaleTempFiles(dir, names),
  };
}

/**
 * FileOperations has no readlink: the link's real path, mapped from the real root back under
 * `rootAbs` (the tree never follows links, so every listed directory is the real root plus its
 * relative path). The real root is looked up once per render.
 */
function sourceOver(ops: FileOperations): TreeSource {
  let realRoot: Promise<string> | undefined;
  return {
    async list(dir, _rel, withIgnore) {
      const entries = await ops.readdir(dir);
      const dirents = entries.map((e) => ({
        name: e.name,
        isDirectory: () => e.type === "directory",
        isSymbolicLink: () => e.type === "symlink",
      }));
      // Only a regular file ("file"; a FIFO or socket is "other") is read, within the size bound.
      if (!withIgnore || !entries.some((e) => e.name === ".gitignore" && e.type === "file")) return { dirents };
      const file = path.join(dir, ".gitignore");
      const s = await ops.lstat(file).catch(() => null);
      if (s?.type !== "file" || s.size > LIMITS.ignoreFileMaxBytes) return { dirents };
      const ignoreText = await ops.readText(file).catch(() => undefined);
      return ignoreText === undefined ? { dirents } : { dirents, ignoreText };
    },
    sweep: async (dir, names) => {
      if (typeof ops.lstat === "function" && typeof ops.remove === "function") await removeStaleTempFiles(dir, names, { ops });
    },
    async linkTarget(linkPath, rootAbs) {
      try {
        realRoot ??= ops.realpath(rootAbs).catch(() => rootAbs);
        const real = await ops.realpath(linkPath);
        return path.join(rootAbs, path.relative(await realRoot, real));
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * Renders `dir` as a tree (`|-- `, `` `-- ``, `|   `): directories first, then files, each sorted
 * by a locale-independent comparison; `/` after directory names; symlinks as `name -> target`
 * and never followed. Breadth-first under a budget: every level gets a fair share of the
 * remaining `maxEntries`, directories shown but not expanded are counted from their own listing
 * only, so the cost is bounded by the budget, not by the size of the tree. Unreadable
 * directories are marked `[unreadable: CODE]`. The same tree always renders the same text.
 */
export async function renderDirectoryTree(dir: string, options: TreeOptions = {}): Promise<string> {
  if (typeof dir !== "string" || dir === "") throw new TypeError("dir must be a non-empty path string");
  const opts = resolveOptions(dir, options);
  const limit = pLimit(opts.concurrency);
  const root: DirNode = newNode("", path.resolve(dir), 0, IgnoreWalk.EMPTY, opts.extra ? IgnoreWalk.EMPTY.with(opts.extra) : IgnoreWalk.EMPTY);
  let budget = opts.maxEntries;
  let level: DirNode[] = [root];
  const links: { entry: Entry; abs: string }[] = [];
  while (level.length > 0) {
    await Promise.all(level.map((node) => limit(() => listDir(node, opts))));
    const expandable = level.map((n) => (n.depth < opts.maxDepth ? n.entries.length : 0));
    const alloc = fairShare(expandable, budget);
    const next: DirNode[] = [];
    level.forEach((node, i) => {
      node.shown = alloc[i]!;
      budget -= node.shown;
      // Directories that only get counted need no order.
      if (node.shown > 0) node.entries.sort(compareEntries);
      for (const entry of node.entries.slice(0, node.shown)) {
        if (entry.kind === "link") links.push({ entry, abs: path.join(node.abs, entry.name) });
        if (entry.kind !== "dir") continue;
        const rel = node.rel === "" ? entry.name : `${node.rel}/${entry.name}`;
        entry.node = newNode(rel, path.join(node.abs, entry.name), node.depth + 1, node.ignore.enter(entry.name), node.extra.enter(entry.name));
        next.push(entry.node);
      }
    });
    level = next;
  }
  await Promise.all(links.map((l) => limit(() => describeLink(l.entry, l.abs, root.abs, opts.source))));
  const head = root.error ? `${opts.rootLabel} [unreadable: ${root.error}]` : opts.rootLabel;
  const lines = [head];
  renderChildren(root, "", lines, false);
  if (textLength(lines) <= opts.maxChars) return lines.join("\n");
  return fitCharBudget(root, head, opts.maxChars);
}

function textLength(lines: readonly string[]): number {
  let n = lines.length - 1;
  for (const line of lines) n += line.length;
  return n;
}

/**
 * Compacts an over-budget tree, cheapest loss first: single-directory chains on one line, then
 * long labels shortened in the middle, then the trailing lines replaced by a count.
 */
function fitCharBudget(root: DirNode, head: string, maxChars: number): string {
  const lines = [head];
  renderChildren(root, "", lines, true);
  if (textLength(lines) <= maxChars) return lines.join("\n");
  for (let i = 1; i < lines.length; i++) lines[i] = shortenLine(lines[i]!);
  if (textLength(lines) <= maxChars) return lines.join("\n");
  // Keep whole lines while the rest plus the count line fits.
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    const omitted = lines.length - kept.length - 1;
    const tail = `${TREE_LAST}${TREE_SUMMARY}${formatCount(omitted)} more lines not shown (character budget)`;
    if (used + line.length + 1 + tail.length > maxChars && kept.length > 0) break;
    kept.push(line);
    used += line.length + 1;
  }
  const omitted = lines.length - kept.length;
  if (omitted > 0) kept.push(`${TREE_LAST}${TREE_SUMMARY}${formatCount(omitted)} more ${omitted === 1 ? "line" : "lines"} not shown (character budget)`);
  return kept.join("\n");
}

/** Shortens the label of a rendered line (after its connector) in the middle. */
function shortenLine(line: string): string {
  const at = Math.max(line.indexOf(TREE_BRANCH), line.indexOf(TREE_LAST));
  const start = at === -1 ? 0 : at + 4;
  const label = line.slice(start);
  if (label.length <= MAX_LABEL_CHARS) return line;
  const headChars = 60;
  const tailChars = 45;
  const cut = label.length - headChars - tailChars;
  return `${line.slice(0, start)}${label.slice(0, headChars)}${TREE_SHORTENED_MARK}${formatCount(cut)} chars)...${label.slice(-tailChars)}`;
}

/** Short, stable fingerprint of a rendered tree (16 hex chars of its SHA-256). */
export function treeFingerprint(text: string): string {
  if (typeof text !== "string") throw new TypeError("treeFingerprint expects the rendered tree text");
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

const count = (message: string) => z.custom<number>(isCount, message).optional();
const names = (message: string) => z.array(z.string(message), message).readonly().optional();

/**
 * The tree's budget (size and what is hidden): the one rule for it, used by the tree options
 * below and by the FileManager's `tree` option, so both accept the same values.
 */
export const treeBudgetShape = {
  maxEntries: count("maxEntries must be a non-negative integer or Infinity (default 200)"),
  maxChars: z.custom<number>((n) => isCount(n) && n >= 200, "maxChars must be an integer ≥ 200 or Infinity (default 8,000)").optional(),
  maxDepth: count("maxDepth must be a non-negative integer or Infinity (default unlimited)"),
  ignore: names('ignore must be an array of gitignore-style pattern strings, e.g. ["*.log", "dist/"]'),
};

/**
 * The checks on {@link TreeOptions} (kept as an interface for its documentation; a type test
 * asserts the two agree). `fileOps` is checked by `assertFileOperations`, which names the
 * missing methods.
 */
export const treeOptionsSchema = z.object(
  {
    rootLabel: z.string("rootLabel must be a single-line string").refine((l) => !/[\r\n]/.test(l), "rootLabel must be a single-line string").optional(),
    maxEntries: treeBudgetShape.maxEntries,
    maxDepth: treeBudgetShape.maxDepth,
    maxChars: treeBudgetShape.maxChars,
    ignore: treeBudgetShape.ignore,
    useGitignore: z.boolean("useGitignore must be a boolean").optional(),
    defaultIgnores: names('defaultIgnores must be an array of entry names, e.g. [".git", "node_modules"]'),
    concurrency: z.number("concurrency must be a positive integer").int("concurrency must be a positive integer").min(1, "concurrency must be a positive integer").optional(),
    fileOps: z.custom<FileOperations>(() => true).optional(),
  },
  "tree options must be an object",
).strict();

function resolveOptions(dir: string, options: TreeOptions): Resolved {
  parseOptions(treeOptionsSchema, options, "Invalid tree options");
  const {
    rootLabel = ".",
    maxEntries = DEFAULT_TREE_MAX_ENTRIES,
    maxDepth = Infinity,
    maxChars = DEFAULT_TREE_MAX_CHARS,
    ignore: extra = [],
    useGitignore = true,
    defaultIgnores = DEFAULT_IGNORED_NAMES,
    concurrency = 16,
    fileOps,
  } = options;
  assertFileOperations(fileOps, ["readdir", "readText", "realpath"]);
  return {
    rootLabel,
    maxEntries,
    maxDepth,
    maxChars,
    useGitignore,
    defaultNames: new Set(defaultIgnores),
    // Case-insensitive, as the `ignore` package read these options before.
    extra: extra.length > 0 ? new Gitignore(extra, { ignoreCase: true }) : undefined,
    concurrency,
    source: isLocalFileOperations(fileOps) ? localSource(path.resolve(dir)) : sourceOver(fileOps!),
  };
}

function isCount(n: unknown): n is number {
  return n === Infinity || (Number.isInteger(n) && (n as number) >= 0);
}

function newNode(rel: string, abs: string, depth: number, ignore: IgnoreWalk, extra: IgnoreWalk): DirNode {
  return { rel, abs, depth, ignore, extra, entries: [], shown: 0 };
}

/** Reads, filters and sorts one directory's entries; errors are recorded on the node. */
async function listDir(node: DirNode, opts: Resolved): Promise<void> {
  let listing: Listing;
  try {
    listing = await opts.source.list(node.abs, node.rel, opts.useGitignore);
  } catch (err) {
    node.error = (err as NodeJS.ErrnoException).code ?? "ERROR";
    return;
  }
  const { dirents, ignoreText } = listing;
  // Workspace rules pass the one complexity gate before they are compiled (guards/ignoreRules.ts).
  if (ignoreText !== undefined) node.ignore = node.ignore.with(workspaceIgnoreRules(ignoreText));
  const entries: Entry[] = [];
  const temps: string[] = [];
  for (const d of dirents) {
    if (opts.defaultNames.has(d.name)) continue;
    // Temp files of atomic writes are never shown; the ones a killed writer left are removed.
    if (isAtomicTempName(d.name)) {
      if (!d.isDirectory()) temps.push(d.name);
      continue;
    }
    const kind: Kind = d.isDirectory() ? "dir" : d.isSymbolicLink() ? "link" : "file";
    // Only the entry itself is tested: the walk never enters an ignored directory.
    if (node.extra.ignores(d.name, kind === "dir") || node.ignore.ignores(d.name, kind === "dir")) continue;
    entries.push({ name: d.name, kind });
  }
  node.entries = entries;
  if (temps.length > 0) await opts.source.sweep(node.abs, temps);
}

function compareEntries(a: Entry, b: Entry): number {
  const ad = a.kind === "dir" ? 0 : 1;
  const bd = b.kind === "dir" ? 0 : 1;
  if (ad !== bd) return ad - bd;
  const al = a.name.toLowerCase();
  const bl = b.name.toLowerCase();
  if (al !== bl) return al < bl ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Max-min fair split of `budget` over directories wanting `sizes[i]` entries: every directory
 * gets an equal share, capped by its size, with leftovers shared again; when the budget is
 * smaller than the number of directories the first ones (display order) get one entry each.
 */
export function fairShare(sizes: readonly number[], budget: number): number[] {
  const alloc = sizes.map(() => 0);
  let remaining = budget;
  let active = sizes.map((_, i) => i).filter((i) => sizes[i]! > 0);
  while (remaining > 0 && active.length > 0) {
    const share = Math.floor(remaining / active.length);
    if (share === 0) {
      for (const i of active.slice(0, remaining)) alloc[i]!++;
      break;
    }
    for (const i of active) {
      const give = Math.min(share, sizes[i]! - alloc[i]!);
      alloc[i]! += give;
      remaining -= give;
    }
    active = active.filter((i) => alloc[i]! < sizes[i]!);
  }
  return alloc;
}

/** Symlinks show their target, but only as text that stays inside the tree. */
async function describeLink(entry: Entry, linkPath: string, rootAbs: string, source: TreeSource): Promise<void> {
  const resolved = await source.linkTarget(linkPath, rootAbs);
  if (resolved === undefined) {
    entry.linkTarget = "[unreadable link]";
    return;
  }
  const fromRoot = path.relative(rootAbs, resolved);
  if (fromRoot.startsWith("..") || path.isAbsolute(fromRoot)) {
    // Naming a system path would leak it to the model; the workspace refuses such links anyway.
    entry.linkTarget = "[outside the tree]";
    return;
  }
  const fromLink = path.relative(path.dirname(linkPath), resolved) || ".";
  entry.linkTarget = escapeName(fromLink.split(path.sep).join("/"));
}

function renderChildren(node: DirNode, prefix: string, lines: string[], collapse: boolean): void {
  const shown = node.entries.slice(0, node.shown);
  const hidden = node.entries.length - node.shown;
  // A partly shown directory ends with a summary line; one shown without any of its entries
  // carries the count on its own line (see label()), which keeps the output short.
  const summary = hidden > 0 && (node.shown > 0 || node.rel === "") ? `${TREE_SUMMARY}${moreEntries(hidden)}${node.rel === "" ? "" : ` in ${escapeName(node.rel)}/`}` : undefined;
  shown.forEach((entry, i) => {
    const last = i === shown.length - 1 && summary === undefined;
    let shownEntry = entry;
    let chain = "";
    // A directory whose whole content is one directory shares its line: `a/b/c/`.
    while (collapse && shownEntry.node && !shownEntry.node.error && shownEntry.node.shown === 1 && shownEntry.node.entries.length === 1) {
      const only = shownEntry.node.entries[0]!;
      if (only.kind !== "dir" || !only.node) break;
      chain += `${escapeName(shownEntry.name)}/`;
      shownEntry = only;
    }
    lines.push(`${prefix}${last ? TREE_LAST : TREE_BRANCH}${chain}${label(shownEntry)}`);
    if (shownEntry.node && !shownEntry.node.error) renderChildren(shownEntry.node, `${prefix}${last ? TREE_INDENT : TREE_PIPE}`, lines, collapse);
  });
  if (summary) lines.push(`${prefix}${TREE_LAST}${summary}`);
}

function label(entry: Entry): string {
  const name = escapeName(entry.name);
  if (entry.kind === "link") return `${name} -> ${entry.linkTarget ?? "?"}`;
  if (entry.kind !== "dir") return name;
  const node = entry.node;
  if (node?.error) return `${name}/ [unreadable: ${node.error}]`;
  if (node && node.shown === 0 && node.entries.length > 0) return `${name}/ ${TREE_SUMMARY}${moreEntries(node.entries.length)}`;
  return `${name}/`;
}

function moreEntries(n: number): string {
  return `${formatCount(n)} more ${n === 1 ? "entry" : "entries"}`;
}

/** A file name must not be able to add lines (or terminal escapes) to the rendered tree. */
function escapeName(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\x${code.toString(16).padStart(2, "0")}`;
  });
}

function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
