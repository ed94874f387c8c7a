/**
 * The persisted tree-view format: append mode's record, in checkpointed state
 * (`_fileManager._treeView`), of what the model was told since the last full tree message.
 *
 * What the model knows is that tree's entries (parsed back from the tree message in the history)
 * without `removed`, with `added`: the record stays a few bytes while the tree can be kilobytes,
 * and every checkpoint serialises it several times per step. Keys are those of
 * `parseTreeListing` (`dir/`, `dir/file`, `dir/link -> target`), newline-separated (a rendered
 * key never holds a newline: the tree escapes it).
 *
 * Format history: older checkpoints hold `known` (every known key) instead of
 * `added`/`removed`/`sum`; such a record is still read, and rewritten in the new form at the
 * next change.
 */
import { z } from "zod";
import { treeFingerprint } from "../src/tree.js";
import { parseTreeListing, type TreeListing } from "../src/treeListing.js";

/** The checks on a stored {@link TreeView} (not strict: it is read back from checkpoints). */
export const treeViewSchema = z.object({
  /** Entry keys the model learnt of since that tree, newline-separated. */
  added: z.string().optional(),
  /** Entry keys of that tree the model was told are gone, newline-separated. */
  removed: z.string().optional(),
  /** Fingerprint of the known keys (sorted): a rebuilt list is used only if it matches. */
  sum: z.string().optional(),
  /** Older checkpoints: every known key, newline-separated (used as it is when present). */
  known: z.string().optional(),
  /** Ids of the change messages appended since that tree (all must still be in the history). */
  ids: z.array(z.string()),
  /** Characters of those change messages, weighed against a fresh tree. */
  chars: z.number(),
  /**
   * Directories the last listing showed only in part, newline-separated (`*`: any); absent when
   * they are those of the last full tree (read from its message).
   */
  partial: z.string().optional(),
  /** When that listing was made (epoch ms). */
  at: z.number(),
});

/** Append mode's record of what the model was told since the last full tree (see the module comment). */
export type TreeView = z.infer<typeof treeViewSchema>;

/** The last full tree's entries and partial directories, and what the model knows now (those with the changes since). */
export interface KnownEntries {
  base: string[];
  known: string[];
  basePartial: string[];
}

/** Bound of the known keys diffed against a fresh listing (characters); more → a full tree. */
export const MAX_KNOWN_CHARS = 64_000;

/**
 * What the model knows: the entries of the last full tree (`treeText`, as its message carries
 * it) with the view's changes, or an older checkpoint's full record. Undefined when the rebuilt
 * list disagrees with the recorded fingerprint (the message was altered): then a full tree is due.
 */
export function knownEntriesOf(view: TreeView, treeText: string): KnownEntries | undefined {
  const { entries: base, partial: basePartial } = parseTreeListing(treeText);
  if (view.known !== undefined) return { base, known: splitKeys(view.known), basePartial };
  const removed = new Set(splitKeys(view.removed ?? ""));
  const known = [...base.filter((k) => !removed.has(k)), ...splitKeys(view.added ?? "")];
  return knownSum(known) === view.sum ? { base, known, basePartial } : undefined;
}

/** The view right after a full tree of `listing` made at `at`; undefined when it has too many entries to diff against (the next change then sends a full tree). */
export function viewAfterFullTree(listing: TreeListing, at: number): TreeView | undefined {
  if (knownChars(listing.entries) > MAX_KNOWN_CHARS) return undefined;
  return { added: "", removed: "", sum: knownSum(listing.entries), ids: [], chars: 0, at };
}

export function knownText(entries: readonly string[]): string {
  return entries.join("\n");
}

export function splitKeys(text: string): string[] {
  return text === "" ? [] : text.split("\n");
}

/** Characters of the known keys, newline-separated: what bounds the diff's work. */
export function knownChars(entries: readonly string[]): number {
  let n = Math.max(0, entries.length - 1);
  for (const k of entries) n += k.length;
  return n;
}

/** Order-free: a rebuilt list may order a removed-then-re-added entry differently. */
export function knownSum(entries: readonly string[]): string {
  return treeFingerprint(knownText([...entries].sort()));
}
