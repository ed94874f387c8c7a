/**
 * Append mode's tree diff, as a pure function: from what the model knows (the last full tree
 * and the changes told since, see treeView.ts) and a fresh listing, the change message to append
 * and the view it leaves — or undefined when a full tree is the better message. No I/O and no
 * clock: the few facts only the host can tell are asked first ({@link treeUpdateProbes}) and
 * passed in, with the time.
 *
 * Edge cases, each tested in tests/tree-update.test.ts:
 * - **No change**: same entries → no message; the view is refreshed (its `at`).
 * - **Added / removed**: `+ key` / `- key`; a removed directory's entries fold into its line.
 * - **Renamed**: paired per `describeChanges` (a directory whose entries all reappear under one
 *   added directory, a move that kept its name, one removal + one addition in one directory).
 * - **Too many changes**: more than {@link MAX_UNLISTED_CHECKS} added + missing → full tree.
 * - **Opaque names**: a missing key that is shortened or escaped cannot be checked → full tree.
 * - **Budget cut** (listing not complete): a missing entry may only be out of the budget; it is
 *   removed only if the host says it is gone, else it stays known and nothing is said.
 * - **Partial directories**: an entry newly listed in a directory shown only in part before
 *   (or anywhere, `*`, after a character-budget cut; or under an unknown directory) may be old:
 *   it is told as added only if modified since the view's listing (minus clock slack), else
 *   learnt silently. Under a directory told as added in the same update it is new.
 * - **Too much to remember**: known keys over `MAX_KNOWN_CHARS` → full tree.
 * - **Messages outgrow a tree**: the change messages since the tree, this one included, longer
 *   than a fresh full tree → full tree.
 * - **Older checkpoints**: a view's legacy `known` field is not carried forward.
 * - `partial` is recorded only when it differs from the full tree's own.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { describeChanges, diffListings, foldIntoDirectories, isOpaqueKey, parentKey, type TreeListing } from "../src/treeListing.js";
import { buildTreeChangeMessage } from "./treeMessage.js";
import { knownChars, knownSum, knownText, MAX_KNOWN_CHARS, splitKeys, type KnownEntries, type TreeView } from "./treeView.js";

/** Entries whose absence from a budgeted listing is checked on the host; more → a full tree. */
export const MAX_UNLISTED_CHECKS = 64;
/** Tolerated clock difference between this process and the host holding the files. */
export const CLOCK_SLACK_MS = 2_000;

/** The host's answers for the probed keys: modification time (epoch ms), or `null` when no such entry. Keys not asked are absent. */
export type HostFacts = ReadonlyMap<string, number | null>;

/** What {@link nextTreeUpdate} needs besides the view and the listing. */
export interface TreeUpdateContext {
  /** What the model knows (see `knownEntriesOf`). */
  known: KnownEntries;
  /** The host's answers for {@link treeUpdateProbes}' keys. */
  host: HostFacts;
  /** When the listing was made (epoch ms): the next view's `at`. */
  at: number;
  /** The change's time shown in the message (epoch ms). */
  changedAt: number;
  /** Characters of a fresh full tree message: the change messages' budget. */
  treeChars: number;
}

/** An append-mode update: the view to store and, when there is something to tell, the change message. */
export interface TreeUpdate {
  view: TreeView;
  message?: BaseMessage;
}

/**
 * The keys whose entry the host must be asked about (lstat) before {@link nextTreeUpdate}, at
 * most {@link MAX_UNLISTED_CHECKS}; undefined when a full tree is due whatever it answers.
 */
export function treeUpdateProbes(view: TreeView, known: KnownEntries, listing: TreeListing): string[] | undefined {
  const diff = diffOf(known, listing);
  if (!diff) return undefined;
  const unsure = new Unsure(view, known);
  // Assume every unsure entry is old: its children are then unsure too, so none is missed.
  const probes: string[] = [];
  for (const key of diff.added) {
    if (unsure.has(key)) probes.push(key);
    else unsure.fresh.add(key);
  }
  return listing.complete ? probes : [...diff.missing, ...probes];
}

/** The update from `view` to `listing` (see the module comment), or undefined for a full tree. */
export function nextTreeUpdate(view: TreeView, listing: TreeListing, context: TreeUpdateContext): TreeUpdate | undefined {
  const { known: knownEntries, host, at } = context;
  const { base, known, basePartial } = knownEntries;
  const diff = diffOf(knownEntries, listing);
  if (!diff) return undefined;
  const { added, missing } = diff;
  // Out of a budgeted listing is not necessarily gone: the host said which are.
  const gone = listing.complete ? missing : missing.filter((k) => host.get(k) === null);
  const unsure = new Unsure(view, knownEntries);
  const news: string[] = [];
  for (const key of added) {
    if (unsure.has(key) && (host.get(key) ?? 0) < view.at - CLOCK_SLACK_MS) continue;
    unsure.fresh.add(key);
    news.push(key);
  }
  const goneSet = new Set(gone);
  const nextKnown = [...known.filter((k) => !goneSet.has(k)), ...added];
  if (knownChars(nextKnown) > MAX_KNOWN_CHARS) return undefined;
  const changes = describeChanges(news, foldIntoDirectories(gone), known);
  const baseSet = new Set(base);
  const nextSet = new Set(nextKnown);
  const { known: _legacy, ...rest } = view;
  const next: TreeView = {
    ...rest,
    added: knownText(nextKnown.filter((k) => !baseSet.has(k))),
    removed: knownText(base.filter((k) => !nextSet.has(k))),
    sum: knownSum(nextKnown),
    partial: sameKeys(listing.partial, basePartial) ? undefined : listing.partial.join("\n"),
    at,
  };
  if (changes.length === 0) return { view: next };
  const message = buildTreeChangeMessage(changes, { changedAt: context.changedAt });
  const chars = view.chars + messageChars(message);
  if (chars > context.treeChars) return undefined;
  return { message, view: { ...next, ids: [...view.ids, message.id!], chars } };
}

/** Characters of a message's content, as weighed against a fresh tree. */
export function messageChars(message: BaseMessage): number {
  return typeof message.content === "string" ? message.content.length : JSON.stringify(message.content).length;
}

/** Added and missing keys; undefined when they are too many, or a missing one cannot be checked. */
function diffOf({ known }: KnownEntries, listing: TreeListing): { added: string[]; missing: string[] } | undefined {
  const diff = diffListings(known, listing.entries);
  if (diff.missing.length + diff.added.length > MAX_UNLISTED_CHECKS || diff.missing.some(isOpaqueKey)) return undefined;
  return diff;
}

/**
 * Whether a newly listed entry may be old: its directory was shown only in part, or is not
 * known and was not itself found new (`fresh`, filled in listing order: parents first).
 */
class Unsure {
  readonly fresh = new Set<string>();
  private readonly knownSet: ReadonlySet<string>;
  private readonly partial: ReadonlySet<string>;

  constructor(view: TreeView, { known, basePartial }: KnownEntries) {
    this.knownSet = new Set(known);
    this.partial = new Set(view.partial === undefined ? basePartial : splitKeys(view.partial));
  }

  has(key: string): boolean {
    const parent = parentKey(key);
    return this.partial.has("*") || this.partial.has(parent) || (parent !== "" && !this.knownSet.has(parent) && !this.fresh.has(parent));
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((k, i) => k === b[i]);
}
