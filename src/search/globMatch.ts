/**
 * A glob matcher that never backtracks: the pattern becomes a token list run as an NFA over the
 * path (a set of active states per character), so any pattern costs at most
 * O(path length × pattern length) per alternative. Compiling a glob to a JS RegExp instead
 * (hand-written, picomatch or the `ignore` package) backtracks: `*a*a*a*a*a*a*b` against a
 * 90-character name took minutes.
 *
 * Syntax: `*` (any run without `/`), `?` (one character except `/`), `[…]` / `[!…]` classes with
 * ranges, `{a,b}` alternatives (nested), `**` (see `globstar`), `**` followed by a slash (zero or more directories).
 */
import { globAlternativesProblem, globPatternProblem, LIMITS } from "../guards/limits.js";
import { WorkbenchError } from "../workbenchError.js";

export interface GlobCompileOptions {
  /**
   * `"anywhere"`: `**` anywhere is "any run, `/` included" (the deepagents glob tool);
   * `"segment"`: only a whole path segment `**` is a globstar, elsewhere `**` is `*` (gitignore).
   */
  globstar: "anywhere" | "segment";
  /** A backslash escapes the next character (gitignore); otherwise it is a literal character. */
  escapes: boolean;
  /** Compare case-insensitively (as the `ignore` package did for file_glob). */
  ignoreCase?: boolean;
  /** Use a RegExp where it provably cannot blow up (default true; tests turn it off to check the NFA). */
  regexFastPath?: boolean;
}

/**
 * A RegExp with at most two unbounded wildcards backtracks at most O(n²) per path: ~1M steps at
 * this length, so short paths take the (much faster) RegExp and longer ones the NFA.
 */
const FAST_PATH_MAX_UNBOUNDED = 2;
const FAST_PATH_MAX_PATH = 1_024;

/** One step of a glob program (exported for the gitignore matcher, which has its own parser). */
export type GlobToken = Token;

type Token =
  | { kind: "lit"; ch: string }
  | { kind: "any1" }
  | { kind: "class"; negate: boolean; singles: string; ranges: Array<[string, string]> }
  | { kind: "star" }
  | { kind: "globstar" }
  | { kind: "dirs" };

/** A compiled glob: `test(path)` on `/`-separated paths. */
export interface CompiledGlob {
  test(path: string): boolean;
}

/** Thrown for a pattern over the limits; the message guides the model. */
export class GlobLimitError extends WorkbenchError {
  readonly code = "GLOB_LIMIT";
}

/** Throws {@link GlobLimitError} when a glob as the model wrote it exceeds the length or wildcard limits. */
export function assertGlobWithinLimits(pattern: string): void {
  const problem = globPatternProblem(pattern);
  if (problem) throw new GlobLimitError(problem);
}

/**
 * Compiles `pattern` (already checked with {@link assertGlobWithinLimits}); throws
 * {@link GlobLimitError} when its `{a,b}` groups expand past the limits.
 */
export function compileGlob(pattern: string, options: GlobCompileOptions): CompiledGlob {
  const fold = options.ignoreCase ? (t: string) => t.toLowerCase() : (t: string) => t;
  const alternatives = expandBraces(fold(pattern));
  if (alternatives.reduce((n, a) => n + a.length, 0) > LIMITS.globMaxExpandedChars) throw new GlobLimitError(globAlternativesProblem());
  const programs = alternatives.map((alt) => {
    const tokens = tokenize(alt, options);
    const unbounded = tokens.filter((t) => t.kind === "star" || t.kind === "globstar" || t.kind === "dirs").length;
    const fast = options.regexFastPath !== false && unbounded <= FAST_PATH_MAX_UNBOUNDED;
    return { tokens, regex: fast ? toRegExp(tokens) : undefined };
  });
  return {
    test: (path) => {
      const p = fold(path);
      return programs.some(({ tokens, regex }) => (regex && p.length <= FAST_PATH_MAX_PATH ? regex.test(p) : runNfa(tokens, p)));
    },
  };
}

/** Expands `{a,b}` groups (nested; an unclosed `{` is literal) into plain alternatives, capped. */
function expandBraces(pattern: string): string[] {
  const close = matchingBraces(pattern);
  const expand = (from: number, to: number): string[] => {
    let results = [""];
    let i = from;
    while (i < to) {
      const end = pattern[i] === "{" ? close.get(i) : undefined;
      if (end === undefined) {
        const ch = pattern[i]!;
        results = results.map((r) => r + ch);
        i++;
        continue;
      }
      const options: string[] = [];
      let start = i + 1;
      let depth = 0;
      for (let j = i + 1; j <= end; j++) {
        const c = pattern[j];
        if (c === "{" && close.has(j)) depth++;
        else if (c === "}" && depth > 0) depth--;
        else if ((c === "," && depth === 0) || j === end) {
          options.push(...expand(start, j));
          start = j + 1;
        }
      }
      const count = results.length * options.length;
      if (count > LIMITS.globMaxAlternatives) throw new GlobLimitError(globAlternativesProblem());
      results = results.flatMap((r) => options.map((o) => r + o));
      i = end + 1;
    }
    return results;
  };
  return expand(0, pattern.length);
}

/** Positions of `{` that have a matching `}` (with at least one `,` or not: `{a}` is a group of one). */
function matchingBraces(pattern: string): Map<number, number> {
  const pairs = new Map<number, number>();
  const stack: number[] = [];
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "{") stack.push(i);
    else if (pattern[i] === "}" && stack.length > 0) pairs.set(stack.pop()!, i);
  }
  return pairs;
}

function tokenize(glob: string, options: GlobCompileOptions): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "\\" && options.escapes && i + 1 < glob.length) {
      tokens.push({ kind: "lit", ch: glob[++i]! });
    } else if (c === "*") {
      if (glob[i + 1] !== "*") {
        tokens.push({ kind: "star" });
        continue;
      }
      const segmentStart = i === 0 || glob[i - 1] === "/";
      const segmentEnd = i + 2 >= glob.length || glob[i + 2] === "/";
      if (options.globstar === "segment" && !(segmentStart && segmentEnd)) {
        tokens.push({ kind: "star" });
        i++;
        while (glob[i + 1] === "*") i++;
      } else if (glob[i + 2] === "/") {
        tokens.push({ kind: "dirs" });
        i += 2;
      } else {
        tokens.push({ kind: "globstar" });
        i++;
      }
    } else if (c === "?") {
      tokens.push({ kind: "any1" });
    } else if (c === "[") {
      const close = glob.indexOf("]", i + 1);
      if (close === -1) {
        tokens.push({ kind: "lit", ch: c });
        continue;
      }
      let body = glob.slice(i + 1, close);
      const negate = body.startsWith("!") || body.startsWith("^");
      if (negate) body = body.slice(1);
      let singles = "";
      const ranges: Array<[string, string]> = [];
      for (let k = 0; k < body.length; k++) {
        if (body[k + 1] === "-" && k + 2 < body.length) {
          ranges.push([body[k]!, body[k + 2]!]);
          k += 2;
        } else {
          singles += body[k];
        }
      }
      tokens.push({ kind: "class", negate, singles, ranges });
      i = close;
    } else {
      tokens.push({ kind: "lit", ch: c });
    }
  }
  return tokens;
}

/**
 * The same tokens as an anchored RegExp (only used when backtracking is provably bounded), or
 * `undefined` when JS rejects it (a reversed range such as `[z-a]`: the NFA treats it as empty).
 */
function toRegExp(tokens: readonly Token[]): RegExp | undefined {
  const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
  let re = "";
  for (const t of tokens) {
    if (t.kind === "lit") re += escape(t.ch);
    else if (t.kind === "any1") re += "[^/]";
    else if (t.kind === "star") re += "[^/]*";
    else if (t.kind === "globstar") re += "[\\s\\S]*";
    else if (t.kind === "dirs") re += "(?:[\\s\\S]*/)?";
    else {
      const body = t.singles.split("").map(escape).join("") + t.ranges.map(([lo, hi]) => `${escape(lo)}-${escape(hi)}`).join("");
      re += body === "" ? (t.negate ? "[\\s\\S]" : "(?!)") : `[${t.negate ? "^" : ""}${body}]`;
    }
  }
  try {
    return new RegExp(`^${re}$`);
  } catch {
    return undefined;
  }
}

function classMatches(t: Extract<Token, { kind: "class" }>, ch: string): boolean {
  const hit = t.singles.includes(ch) || t.ranges.some(([lo, hi]) => ch >= lo && ch <= hi);
  return hit !== t.negate;
}

/**
 * Runs the tokens as an NFA. State `i` (0…m) means "tokens before i matched"; state m+1+i means
 * "inside the `dirs` token i, after a character that was not `/`" (it may only exit after a `/`).
 * `atSlash(p)` is called for each `/` at index p where the tokens match `path.slice(0, p)`, so one
 * run answers for every parent directory too (it must not run the NFA itself: the state sets are shared).
 */
export function runNfa(tokens: readonly Token[], path: string, atSlash?: (index: number) => void): boolean {
  return nfaAccepts(tokens, advanceNfa(tokens, startNfa(tokens), path, atSlash));
}

/** The NFA's states before any character (a list without duplicates). */
export function startNfa(tokens: readonly Token[]): number[] {
  const set = new Uint8Array(2 * tokens.length + 2);
  const list: number[] = [];
  addState(tokens, set, list, 0);
  return list;
}

/** Whether `states` (from {@link startNfa} / {@link advanceNfa}) include the accepting one. */
export function nfaAccepts(tokens: readonly Token[], states: readonly number[]): boolean {
  return states.includes(tokens.length);
}

/**
 * The states after reading `text` from `states` (empty once no state is left: nothing that
 * starts with what was read can match). Lets a walker carry a directory's states to its entries.
 */
export function advanceNfa(tokens: readonly Token[], states: readonly number[], text: string, atSlash?: (index: number) => void): number[] {
  const m = tokens.length;
  // Two scratch sets, reused across calls (each is left all-zero before the call returns).
  const [a, b] = scratchSets(2 * m + 2);
  let current = a;
  let next = b;
  let active = [...states];
  let upcoming: number[] = [];
  for (const s of active) current[s] = 1;
  for (let p = 0; p < text.length; p++) {
    const ch = text[p]!;
    if (atSlash && ch === "/" && current[m]) atSlash(p);
    for (const state of active) {
      if (state === m) continue;
      if (state > m) {
        addState(tokens, next, upcoming, ch === "/" ? state - m - 1 : state);
        continue;
      }
      const t = tokens[state]!;
      switch (t.kind) {
        case "lit":
          if (ch === t.ch) addState(tokens, next, upcoming, state + 1);
          break;
        case "any1":
          if (ch !== "/") addState(tokens, next, upcoming, state + 1);
          break;
        case "class":
          if (classMatches(t, ch)) addState(tokens, next, upcoming, state + 1);
          break;
        case "star":
          if (ch !== "/") addState(tokens, next, upcoming, state);
          break;
        case "globstar":
          addState(tokens, next, upcoming, state);
          break;
        case "dirs":
          addState(tokens, next, upcoming, ch === "/" ? state : m + 1 + state);
          break;
      }
    }
    for (const s of active) current[s] = 0;
    if (upcoming.length === 0) return upcoming;
    [current, next] = [next, current];
    [active, upcoming] = [upcoming, active];
    upcoming.length = 0;
  }
  for (const s of active) current[s] = 0;
  return active;
}

const scratch = new Map<number, [Uint8Array, Uint8Array]>();

/** A pair of zeroed state sets of `size` (kept for reuse; patterns are at most a few thousand tokens). */
function scratchSets(size: number): [Uint8Array, Uint8Array] {
  let pair = scratch.get(size);
  if (!pair) {
    if (scratch.size >= 64) scratch.clear();
    pair = [new Uint8Array(size), new Uint8Array(size)];
    scratch.set(size, pair);
  }
  return pair;
}

/** Adds `state` to the set, with the states after tokens that may match nothing (no character needed). */
function addState(tokens: readonly Token[], set: Uint8Array, list: number[], state: number): void {
  const m = tokens.length;
  while (!set[state]) {
    set[state] = 1;
    list.push(state);
    const t = state < m ? tokens[state]! : undefined;
    if (!t || (t.kind !== "star" && t.kind !== "globstar" && t.kind !== "dirs")) return;
    state++;
  }
}
