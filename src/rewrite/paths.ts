/**
 * Rewrites system paths of the workspace in text: the thread's own directory becomes the
 * workspace-relative form, the root and any other directory under it a neutral placeholder, so a
 * tool result never shows the model a host path of the workspace tree.
 *
 * Two engines, one result (tests hold both to a naive oracle):
 * - `regex` (the usual case): the own directory is a root, a separator and its name, so one
 *   compiled regex of literal alternatives finds every spelling, the common "own directory, a
 *   separator, a path" match decided inside the regex; what follows a root is read here.
 * - `anchor` (a thread directory symlinked under another name, a root without a shared segment):
 *   one `indexOf` scan for an *anchor* (a path segment every spelling shares, usually the root's
 *   last segment), each candidate spelling verified around the hit.
 * Both are linear in the text for ordinary paths, with no per-match callback or allocation beyond
 * the result.
 */

import { isPathWordChar, isWordChar, matchesAt, SpellingFinder } from "./spellingFinder.js";

/** What another thread's directory (or any entry under the root) is shown as. */
export const OTHER_WORKSPACE = "<other-workspace>";
/** What the root holding every thread directory is shown as. */
export const WORKSPACE_ROOT = "<workspace-root>";

export interface PathRewriterSpec {
  /** System paths of the own directory (its path and its real path). */
  own: readonly (string | undefined)[];
  /** System paths of the root holding every thread directory (its path and its real path). */
  roots: readonly (string | undefined)[];
  /** The own directory's name under the root. */
  ownName: string;
}

const OWN = 0;
const ROOT = 1;

interface Spelling {
  text: string;
  kind: typeof OWN | typeof ROOT;
  /** Set for `C:`-style paths, whose drive letter matches in either case. */
  drive: [number, number] | undefined;
}

interface Candidate {
  sp: Spelling;
  /** Where the anchor sits inside the spelling. */
  offset: number;
  /** Where the spelling goes on after the anchor. */
  after: number;
  /** The spelling's first character (a quick pre-check), or -1 for a drive letter (either case). */
  first: number;
  /** The character just before the anchor in the spelling (spellings are absolute: never -1). */
  before: number;
}

interface Anchor {
  text: string;
  /** The largest offset of the anchor inside a spelling: a match starts at most this far before it. */
  maxOffset: number;
  /**
   * Candidates by the character before the anchor (ASCII; index 128: any other), each list
   * smallest start first (largest offset), then longest spelling: the leftmost, longest match.
   */
  byBefore: (Candidate[] | undefined)[];
}

/** Separators as they appear in text, longest first: JSON-escaped `\\` and `\/`, `\`, `/`, `%2F`. */
const SEP_STYLES = ["/", "\\", "\\\\", "\\/", "%2F"];
const SEGMENT_SPLIT = /\\\\|\\\/|%2F|[\\/]/;

/**
 * A compiled rewriter for one workspace. Build once per workspace; {@link rewrite} is pure.
 * Returns `null` from {@link build} when no spelling can be anchored (e.g. a root of `/`).
 */
export class PathRewriter {
  private constructor(
    private readonly anchors: readonly Anchor[],
    private readonly ownName: string,
    /** Set when every own spelling is a root spelling, a separator and the own name (the usual case). */
    private readonly finder: SpellingFinder<Spelling> | null,
  ) {}

  static build(spec: PathRewriterSpec): PathRewriter | null {
    const spellings = new Map<string, Spelling>();
    const add = (paths: readonly (string | undefined)[], kind: Spelling["kind"]) => {
      for (const p of paths) {
        if (!p || p.length < 2) continue;
        for (const text of spellingsOf(p)) {
          if (spellings.has(text)) continue;
          const drive = /^[A-Za-z]:/.test(text) ? text[0]! : undefined;
          spellings.set(text, { text, kind, drive: drive ? [drive.toUpperCase().charCodeAt(0), drive.toLowerCase().charCodeAt(0)] : undefined });
        }
      }
    };
    add(spec.own, OWN);
    add(spec.roots, ROOT);
    const all = [...spellings.values()];
    if (all.length === 0) return null;
    const anchors = chooseAnchors(all);
    if (!anchors) return null;
    const roots = all.filter((sp) => sp.kind === ROOT);
    const finder = anchors.length === 1 && ownSpellingsFollowRoots(all, roots, spec.ownName) ? buildFinder(all) : null;
    const rewriter = new PathRewriter(anchors, spec.ownName, finder);
    if (!warmedUp) {
      warmedUp = true;
      warmUp();
    }
    return rewriter;
  }

  /** `regex`: one compiled regex finds every spelling (the usual case); `anchor`: the general scanner. */
  get engine(): "regex" | "anchor" {
    return this.finder ? "regex" : "anchor";
  }

  rewrite(text: string): string {
    if (this.finder) return this.scanRoots(text, this.finder, this.anchors[0]!);
    if (this.anchors.length === 1) return this.scan(text, this.anchors[0]!);
    let out = text;
    for (const a of this.anchors) out = this.scan(out, a);
    return out;
  }

  private scan(text: string, anchor: Anchor): string {
    const needle = anchor.text;
    let p = text.indexOf(needle);
    if (p === -1) return text;
    const byBefore = anchor.byBefore;
    const anchorLength = needle.length;
    let out = "";
    let from = 0;
    while (p !== -1) {
      let next = p + 1;
      const b = text.charCodeAt(p - 1);
      const candidates = byBefore[b < 128 ? b : 128];
      const nc = candidates === undefined ? 0 : candidates.length;
      for (let k = 0; k < nc; k++) {
        const c = candidates![k]!;
        const start = p - c.offset;
        if (start < from || (b >= 128 && b !== c.before) || (c.first !== -1 && text.charCodeAt(start) !== c.first)) continue;
        const sp = c.sp;
        // The anchor itself matched: compare only what lies around it (charCodeAt beats startsWith here).
        if (!aroundMatches(text, sp, start, c.offset - 1, p + anchorLength, c.after)) continue;
        if (start > 0 && isPathWordChar(text.charCodeAt(start - 1))) continue;
        const begin = beginOf(text, start);
        const end = start + sp.text.length;
        let replacement: string;
        let consumed: number;
        if (sp.kind === OWN) {
          const tail = matchTail(text, end);
          if (tail < 0) continue;
          replacement = REPLACEMENTS[tail & 3]!;
          consumed = (tail >> 2) & 3;
        } else {
          const m = this.afterRoot(text, end);
          if (m < 0) continue;
          replacement = REPLACEMENTS[m & 7]!;
          consumed = m >> 3;
        }
        out += text.slice(from, begin);
        if (replacement !== "") out += replacement;
        from = end + consumed;
        next = from;
        break;
      }
      p = text.indexOf(needle, next);
    }
    return from === 0 ? text : out + text.slice(from);
  }

  /**
   * The same rewrite when the own directory needs no spellings of its own: one regex finds every
   * root spelling (the own directory is a root, a separator and its name), and what follows the
   * root decides between the own directory, another workspace and the root itself.
   */
  private scanRoots(text: string, finder: SpellingFinder<Spelling>, anchor: Anchor): string {
    // Every match holds the anchor: text without it (most text) costs one `indexOf`.
    const first = text.indexOf(anchor.text);
    if (first === -1) return text;
    const re = finder.re;
    let searchFrom = Math.max(0, first - anchor.maxOffset);
    re.lastIndex = searchFrom;
    let out = "";
    let from = 0;
    while (re.test(text)) {
      const end = re.lastIndex;
      const hit = finder.identify(text, end, searchFrom);
      if (hit === undefined) continue; // not reached: the regex matched one of the expansions
      const start = end - hit.length;
      let stop = end;
      // The own directory and a path after it was matched whole by the regex: it is dropped.
      let m = hit.ended ? 0 : this.afterRoot(text, end);
      if (m < 0) {
        // A word goes on after the root (`/srv/files2`): a shorter spelling at this start may fit.
        for (const other of finder.spellings) {
          if (other.kind !== ROOT || other.text.length >= hit.length || !matchesAt(text, other, start)) continue;
          m = this.afterRoot(text, start + other.text.length);
          if (m >= 0) {
            stop = start + other.text.length;
            break;
          }
        }
        if (m < 0) {
          re.lastIndex = searchFrom = start + 1;
          continue;
        }
      }
      out += text.slice(from, beginOf(text, start));
      const replacement = REPLACEMENTS[m & 7]!;
      if (replacement !== "") out += replacement;
      re.lastIndex = searchFrom = from = stop + (m >> 3);
    }
    return from === 0 ? text : out + text.slice(from);
  }

  /**
   * After a root spelling that ends at `end`: the replacement (index into {@link REPLACEMENTS},
   * low 3 bits) and the characters it consumes after `end` (the rest), or -1 for no match.
   */
  private afterRoot(text: string, end: number): number {
    const r = this.rootTail(text, end);
    if (r < 0) return -1;
    if (r >= ROOT_OWN_FLAG) {
      // The own directory, in any separators (`root\\t1/x`): the own rules after its name.
      const nameEnd = end + r - ROOT_OWN_FLAG;
      const tail = matchTail(text, nameEnd);
      return tail < 0 ? ((nameEnd - end) << 3) | 1 : ((nameEnd - end + ((tail >> 2) & 3)) << 3) | (tail & 3);
    }
    return r >= ROOT_OTHER_FLAG ? ((r - ROOT_OTHER_FLAG) << 3) | OTHER : (r << 3) | ROOT_ITSELF;
  }

  /**
   * After a root spelling at `end`: a separator and a directory name (another workspace; the
   * name is consumed, the rest of the path kept), or an end (the root itself). Returns the
   * characters consumed plus a flag, or -1 when a word continues the root's last segment.
   */
  private rootTail(text: string, end: number): number {
    const sep = sepLengthAt(text, end);
    if (sep > 0) {
      let q = end + sep;
      const s = q;
      while (q < text.length) {
        const c = text.charCodeAt(q);
        if (isNameChar(c) || (c === 46 && isNameChar(text.charCodeAt(q + 1)))) q++;
        else break;
      }
      if (q > s) {
        // The own name followed by something that is neither a separator nor an end.
        if (q - s === this.ownName.length && text.startsWith(this.ownName, s)) return ROOT_OWN_FLAG + (q - end);
        return ROOT_OTHER_FLAG + (q - end);
      }
      return isEndAt(text, end + sep) ? sep : 0;
    }
    return isEndAt(text, end) ? 0 : -1;
  }
}

let warmedUp = false;

/**
 * Runs every branch of the scan once on a small text. A first call on a big text is compiled
 * mid-loop (on-stack replacement) before the code after the loop ever ran; without type
 * feedback there, V8 threw that code away at the end of every call (measured: a third slower).
 */
function warmUp(): void {
  const sample = "a /w/r/t1/x /w/r/t1. /w/r/t2/y file:///w/r/t1/z /w/r ./w/r/t1x /w/r/t1#q /w/r/t10\\q \\w\\r\\t1\\s";
  // Both engines: a thread directory symlinked under another name takes the anchor scanner.
  for (const own of [["/w/r/t1"], ["/w/r/t1", "/v/t9"]]) {
    const rw = PathRewriter.build({ own, roots: ["/w/r", "/v"], ownName: "t1" });
    for (let i = 0; i < 2; i++) {
      rw?.rewrite(sample);
      rw?.rewrite("no path here");
    }
  }
}

const ROOT_OTHER_FLAG = 1 << 20;
const ROOT_OWN_FLAG = 1 << 21;
/** What a match becomes: the own directory (dropped, `.`, `./`), another workspace, the root. */
const REPLACEMENTS = ["", ".", "./", OTHER_WORKSPACE, WORKSPACE_ROOT];
const OTHER = 3;
const ROOT_ITSELF = 4;

/** `file:///root/...`: the scheme goes with the path. Where a match at `start` begins. */
function beginOf(text: string, start: number): number {
  return start >= 7 && text.charCodeAt(start - 3) === 58 && isFileScheme(text, start - 7) && (start === 7 || !isPathWordChar(text.charCodeAt(start - 8))) ? start - 7 : start;
}

/** What the tail rules drop after the own directory, in their order (see {@link matchTail}). */
const OWN_SEPARATORS = ["\\\\", "\\/", "\\", "/", "%2F", "%2f"];
/** A character that can start the path after a separator (not {@link isTailStop}). */
const PATH_START = "(?=[^\\s\"'`<>()\\[\\]{},;|])";

/**
 * The regex finder: the own directory with a separator and a path start first (the common case,
 * decided by the regex alone), then the roots (decided by what follows them).
 */
function buildFinder(all: readonly Spelling[]): SpellingFinder<Spelling> | null {
  const longestFirst = [...all].sort((a, b) => b.text.length - a.text.length);
  return SpellingFinder.build([
    ...longestFirst.filter((sp) => sp.kind === OWN).map((spelling) => ({ spelling, endings: OWN_SEPARATORS, lookahead: PATH_START })),
    ...longestFirst.filter((sp) => sp.kind === ROOT).map((spelling) => ({ spelling })),
  ]);
}

/**
 * Whether every own spelling is a root spelling, a separator and the own name, and the name is
 * read whole after a root (no leading, trailing or double dot): then the roots alone find it.
 */
function ownSpellingsFollowRoots(all: readonly Spelling[], roots: readonly Spelling[], ownName: string): boolean {
  if (!/^(?:[\w~-]|\.(?=[\w~-]))+$/.test(ownName)) return false;
  return all.every(
    (sp) => sp.kind === ROOT || roots.some((r) => {
      if (!sp.text.startsWith(r.text)) return false;
      const sep = sepLengthAt(sp.text, r.text.length);
      return sep > 0 && sp.text.slice(r.text.length + sep) === ownName;
    }),
  );
}

/** Every spelling of a system path in text: both separators, JSON-escaped, URL-encoded. */
function spellingsOf(p: string): string[] {
  const fwd = p.replace(/\\/g, "/");
  const out = SEP_STYLES.map((sep) => fwd.replace(/\//g, sep));
  const encoded = encodeURI(fwd);
  if (encoded !== fwd) out.push(encoded);
  return out;
}

/** Segments of a spelling with their offsets (the drive letter is not a segment). */
function segmentsOf(text: string): { seg: string; offset: number }[] {
  const out: { seg: string; offset: number }[] = [];
  const body = /^[A-Za-z]:/.test(text) ? 2 : 0;
  let at = body;
  for (const seg of text.slice(body).split(SEGMENT_SPLIT)) {
    const offset = text.indexOf(seg, at);
    if (seg.length > 0) out.push({ seg, offset });
    at = offset + seg.length;
  }
  return out;
}

/**
 * Picks the fewest anchors covering every spelling: greedily, the segment found in the most
 * spellings (longer on a tie, fewer false hits). One anchor in the usual case.
 */
function chooseAnchors(all: Spelling[]): Anchor[] | null {
  const segs = new Map(all.map((sp) => [sp, segmentsOf(sp.text)]));
  if ([...segs.values()].some((s) => s.length === 0)) return null;
  let left = [...all];
  const anchors: Anchor[] = [];
  while (left.length > 0) {
    const score = new Map<string, number>();
    for (const sp of left) for (const seg of new Set(segs.get(sp)!.map((s) => s.seg))) score.set(seg, (score.get(seg) ?? 0) + 1);
    let best = "";
    for (const [seg, n] of score) {
      const b = score.get(best) ?? 0;
      if (n > b || (n === b && seg.length > best.length)) best = seg;
    }
    const covered = left.filter((sp) => segs.get(sp)!.some((s) => s.seg === best));
    left = left.filter((sp) => !covered.includes(sp));
    const candidates: Candidate[] = [];
    for (const sp of covered) {
      for (const { seg, offset } of segs.get(sp)!) {
        if (seg === best) candidates.push({ sp, offset, after: offset + seg.length, first: sp.drive ? -1 : sp.text.charCodeAt(0), before: sp.text.charCodeAt(offset - 1) });
      }
    }
    candidates.sort((a, b) => b.offset - a.offset || b.sp.text.length - a.sp.text.length);
    const byBefore: (Candidate[] | undefined)[] = new Array(129).fill(undefined);
    for (const c of candidates) {
      const slot = c.before >= 0 && c.before < 128 ? c.before : 128;
      (byBefore[slot] ??= []).push(c);
    }
    anchors.push({ text: best, maxOffset: Math.max(...candidates.map((c) => c.offset)), byBefore });
  }
  return anchors;
}

/**
 * Whether `sp` is at `start` in `text`, given that its characters `preEnd`..`after-1` already
 * matched (the anchor, and the character before it): compares the rest before, then after.
 */
function aroundMatches(text: string, sp: Spelling, start: number, preEnd: number, textAfter: number, after: number): boolean {
  const s = sp.text;
  const first = sp.drive ? 1 : 0;
  for (let i = preEnd - 1; i >= first; i--) if (text.charCodeAt(start + i) !== s.charCodeAt(i)) return false;
  if (sp.drive) {
    const c = text.charCodeAt(start);
    if (c !== sp.drive[0] && c !== sp.drive[1]) return false;
  }
  const n = s.length - after;
  if (textAfter + n > text.length) return false;
  for (let i = 0; i < n; i++) if (text.charCodeAt(textAfter + i) !== s.charCodeAt(after + i)) return false;
  return true;
}

/** `file://` at `p` (scheme in any case). */
function isFileScheme(text: string, p: number): boolean {
  return (
    (text.charCodeAt(p) | 32) === 102 && (text.charCodeAt(p + 1) | 32) === 105 && (text.charCodeAt(p + 2) | 32) === 108 &&
    (text.charCodeAt(p + 3) | 32) === 101 && text.charCodeAt(p + 4) === 58 && text.charCodeAt(p + 5) === 47 && text.charCodeAt(p + 6) === 47
  );
}

/** Length of the separator at `p`: `\\` or `\/` (JSON-escaped), `\`, `/`, `%2F`; 0 for none. */
function sepLengthAt(text: string, p: number): number {
  const c0 = text.charCodeAt(p);
  if (c0 === 47) return 1;
  if (c0 === 92) {
    const c1 = text.charCodeAt(p + 1);
    return c1 === 92 || c1 === 47 ? 2 : 1;
  }
  if (c0 === 37 && text.charCodeAt(p + 1) === 50) {
    const c2 = text.charCodeAt(p + 2);
    return c2 === 70 || c2 === 102 ? 3 : 0;
  }
  return 0;
}

/**
 * What follows the own directory at `end`: a separator and a path (dropped), or an end
 * (becomes `.`, or `./` before a full stop). Encoded so the hot loop allocates nothing:
 * `consumed << 2 | kind` (kind 0: "", 1: ".", 2: "./"), or -1 when neither applies. A JSON
 * `\\` whose path cannot start is retried as a single `\`, as a regex alternation would.
 */
function matchTail(text: string, end: number): number {
  const c0 = text.charCodeAt(end);
  const c1 = text.charCodeAt(end + 1);
  const len = text.length;
  if (c0 === 92 && (c1 === 92 || c1 === 47) && end + 2 < len && !isTailStop(text.charCodeAt(end + 2))) return 2 << 2;
  if ((c0 === 92 || c0 === 47) && end + 1 < len && !isTailStop(c1)) return 1 << 2;
  if (c0 === 37 && c1 === 50 && (text.charCodeAt(end + 2) | 32) === 102) {
    if (end + 3 < len && !isTailStop(text.charCodeAt(end + 3))) return 3 << 2;
    if (isEndAt(text, end + 3)) return (3 << 2) | endKind(text, end + 3);
  }
  if (c0 === 92 && (c1 === 92 || c1 === 47) && isEndAt(text, end + 2)) return (2 << 2) | endKind(text, end + 2);
  if ((c0 === 92 || c0 === 47) && isEndAt(text, end + 1)) return (1 << 2) | endKind(text, end + 1);
  if (isEndAt(text, end)) return endKind(text, end);
  return -1;
}

function endKind(text: string, p: number): number {
  return text.charCodeAt(p) === 46 ? 2 : 1;
}

/** A character of a thread directory name (`[A-Za-z0-9_~-]`; dots only inside). */
function isNameChar(c: number): boolean {
  return isWordChar(c) || c === 45 || c === 126;
}

/** JavaScript's `\s`. */
function isSpace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) || c === 32 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/** ASCII lookup table: 1 for each character of `chars`. */
function asciiSet(chars: string): Uint8Array {
  const table = new Uint8Array(128);
  for (const c of chars) table[c.charCodeAt(0)] = 1;
  return table;
}

const TAIL_STOP = asciiSet('"\'`<>()[]{},;|');
const END_CHARS = asciiSet('"\'`<>()[]{},;:|!?*');

/** Characters that cannot start the path after a separator. */
function isTailStop(c: number): boolean {
  return (c < 128 && TAIL_STOP[c] === 1) || isSpace(c);
}

/** Whether the directory name can end at `p`: end of text, a delimiter, or a full stop ending a sentence. */
function isEndAt(text: string, p: number): boolean {
  if (p >= text.length) return true;
  const c = text.charCodeAt(p);
  if ((c < 128 && END_CHARS[c] === 1) || isSpace(c)) return true;
  if (c !== 46) return false;
  const after = text.charCodeAt(p + 1);
  return !(isWordChar(after) || after === 45);
}
