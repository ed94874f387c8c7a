/**
 * The entries a rendered tree (see `renderDirectoryTree`) lists, as workspace-relative keys, and
 * the difference between what a model was shown and a fresh render. Pure: checking whether an
 * entry that is no longer listed still exists is left to the caller.
 */
import { TREE_BRANCH, TREE_INDENT, TREE_LAST, TREE_PIPE, TREE_SHORTENED_MARK, TREE_SUMMARY } from "./tree.js";

/** The entries of one rendered tree. */
export interface TreeListing {
  /**
   * One key per listed entry: `dir/sub/` for directories, `dir/file` for files,
   * `dir/link -> target` for symlinks. In render order.
   */
  entries: string[];
  /**
   * True when the render lists everything under the root (no `... N more` summaries, no depth
   * limit, no unreadable directory, no character-budget cut): then an entry missing from it is
   * gone. When false, a missing entry may only be out of the budget.
   */
  complete: boolean;
  /**
   * Directories (keys, `""` for the root) with entries the listing does not show; `"*"` alone
   * when lines were cut by the character budget (then any directory may be partial).
   */
  partial: string[];
}

const CONNECTORS = [TREE_BRANCH, TREE_LAST];
const DIR_SUFFIX = /^(.*\/) (?:\[unreadable: [^\]]*\]|\.\.\. [\d,]+ more entr(?:y|ies))$/;

/** Parses the text of `renderDirectoryTree` back into entry keys. */
export function parseTreeListing(text: string): TreeListing {
  const lines = text.split("\n");
  const entries: string[] = [];
  let complete = !lines[0]!.endsWith("]");
  const partial: string[] = complete ? [] : [""];
  const parents: string[] = [""];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const at = connectorAt(line);
    if (at < 0) continue;
    const depth = at / 4;
    const label = line.slice(at + 4);
    if (label.startsWith(TREE_SUMMARY)) {
      complete = false;
      if (/ not shown \(character budget\)$/.test(label)) partial.unshift("*");
      else partial.push(parents[depth] ?? "");
      continue;
    }
    const parent = parents[depth] ?? "";
    let name = label;
    let partialDir = false;
    const suffix = DIR_SUFFIX.exec(label);
    if (suffix) {
      complete = false;
      name = suffix[1]!;
      partialDir = true;
    }
    const key = parent + name;
    entries.push(key);
    if (partialDir) partial.push(key);
    if (name.endsWith("/")) {
      parents[depth + 1] = key;
      parents.length = depth + 2;
    }
  }
  return { entries, complete, partial: partial[0] === "*" ? ["*"] : partial };
}

function connectorAt(line: string): number {
  // Indentation is a whole number of 4-character units; the connector follows it.
  for (let at = 0; at + 4 <= line.length; at += 4) {
    const unit = line.slice(at, at + 4);
    if (CONNECTORS.includes(unit)) return at;
    if (unit !== TREE_PIPE && unit !== TREE_INDENT) return -1;
  }
  return -1;
}

/** The path of an entry key (without the trailing `/` of a directory or a link's target). */
export function entryPath(key: string): string {
  const link = key.indexOf(" -> ");
  const p = link === -1 ? key : key.slice(0, link);
  return p.endsWith("/") ? p.slice(0, -1) : p;
}

/** True when the key cannot be mapped back to a real path (a shortened or escaped name). */
export function isOpaqueKey(key: string): boolean {
  return key.includes(TREE_SHORTENED_MARK) || /\\x[0-9a-f]{2}|\\u[0-9a-f]{4}/.test(entryPath(key));
}

/** Keys in `next` but not in `known` (added), and the reverse (gone, or only out of the budget). */
export function diffListings(known: readonly string[], next: readonly string[]): { added: string[]; missing: string[] } {
  const knownSet = new Set(known);
  const nextSet = new Set(next);
  return { added: next.filter((k) => !knownSet.has(k)), missing: known.filter((k) => !nextSet.has(k)) };
}

/** The keys without those under a directory that is itself among them. */
export function foldIntoDirectories(keys: readonly string[]): string[] {
  const dirs = new Set(keys.filter((k) => k.endsWith("/")));
  return keys.filter((k) => !hasAncestorIn(k, dirs));
}

function hasAncestorIn(key: string, dirs: Set<string>): boolean {
  if (dirs.size === 0) return false;
  const p = entryPath(key);
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) {
    if (dirs.has(p.slice(0, i + 1))) return true;
  }
  return false;
}

/** A change as the model reads it. */
export type TreeChange = { kind: "added"; key: string } | { kind: "removed"; key: string } | { kind: "renamed"; from: string; to: string };

/**
 * Pairs removed and added entries into renames where the evidence is clear: a directory whose
 * known children all reappear under one added directory; an entry that kept its name in another
 * directory (a move) and is the only one of that name; or, when a step made exactly one removal
 * and one addition of the same kind in one directory, that pair. Anything else stays `-`/`+`
 * (a delete and a create in one step must not read as a rename). Entries under a renamed
 * directory that kept their relative path are folded into the rename.
 */
export function describeChanges(added: readonly string[], removed: readonly string[], knownBefore: readonly string[]): TreeChange[] {
  const addedLeft = new Set(added);
  const renames: { from: string; to: string }[] = [];
  const removedLeft: string[] = [];
  const single = removed.length === 1 && added.length === 1;
  for (const from of removed) {
    const to = from.endsWith("/") ? directoryTarget(from, [...addedLeft], knownBefore) : undefined;
    const target = to ?? entryTarget(from, removed, [...addedLeft], single);
    if (target === undefined) {
      removedLeft.push(from);
      continue;
    }
    addedLeft.delete(target);
    renames.push({ from, to: target });
    if (from.endsWith("/")) {
      for (const child of knownBefore) {
        if (child.startsWith(from) && child !== from) addedLeft.delete(target + child.slice(from.length));
      }
    }
  }
  return [
    ...renames.map((r) => ({ kind: "renamed" as const, ...r })),
    ...removedLeft.map((key) => ({ kind: "removed" as const, key })),
    ...[...addedLeft].map((key) => ({ kind: "added" as const, key })),
  ];
}

function kindOf(key: string): "dir" | "link" | "file" {
  return key.endsWith("/") ? "dir" : key.includes(" -> ") ? "link" : "file";
}

function parentOf(key: string): string {
  const p = entryPath(key);
  const i = p.lastIndexOf("/");
  return i === -1 ? "" : p.slice(0, i + 1);
}

/** The directory key an entry key sits in (`""` for the root). */
export { parentOf as parentKey };

function baseOf(key: string): string {
  const p = entryPath(key);
  return p.slice(p.lastIndexOf("/") + 1);
}

function directoryTarget(from: string, added: readonly string[], knownBefore: readonly string[]): string | undefined {
  const children = knownBefore.filter((k) => k.startsWith(from) && k !== from).map((k) => k.slice(from.length));
  if (children.length === 0) return undefined;
  const addedSet = new Set(added);
  const fits = added.filter((a) => a.endsWith("/") && children.every((c) => addedSet.has(a + c)));
  return fits.length === 1 ? fits[0] : undefined;
}

function entryTarget(from: string, removed: readonly string[], added: readonly string[], single: boolean): string | undefined {
  const kind = kindOf(from);
  const sameKind = added.filter((a) => kindOf(a) === kind);
  const moved = sameKind.filter((a) => baseOf(a) === baseOf(from) && parentOf(a) !== parentOf(from));
  if (moved.length === 1 && removed.filter((r) => kindOf(r) === kind && baseOf(r) === baseOf(from)).length === 1) return moved[0];
  if (single && sameKind.length === 1 && parentOf(sameKind[0]!) === parentOf(from)) return sameKind[0];
  return undefined;
}
