/** The fuzzy strategies, in the order they are tried (the reference's order). */
export const MATCH_STRATEGIES = [
  "exact",
  "line-trimmed",
  "whitespace-normalised",
  "indentation-flexible",
  "escape-normalised",
  "trimmed-boundary",
  "unicode-normalised",
  "block-anchor",
  "context-aware",
] as const;

/** Which strategy located `old_string`; reported to the model so a fuzzy match is never silent. */
export type MatchStrategy = (typeof MATCH_STRATEGIES)[number];

/** A place in the file a model may have meant: 1-based line (range), a short excerpt, a score. */
export interface MatchCandidate {
  line: number;
  endLine?: number;
  snippet: string;
  /** 0..1, only on "did you mean" suggestions. */
  similarity?: number;
}

export interface ReplaceOptions {
  /** Replace every occurrence instead of requiring a unique match (not for block-anchor/context-aware). */
  replaceAll?: boolean;
  /** Refuse (without building it) a result longer than this many characters. */
  maxResultChars?: number;
}

export type ReplacePlan =
  | { ok: true; newContent: string; strategy: MatchStrategy; matches: number; lines: number[] }
  | { ok: false; error: string; candidates?: MatchCandidate[]; alreadyApplied?: boolean };

/** One file operation of a validated V4A patch; the caller applies it (guards, locks, atomic writes). */
export interface PatchFileOp {
  kind: "update" | "add" | "delete" | "move";
  /** The path as written in the patch (the caller resolves it through its Workspace). */
  path: string;
  /** Destination of a `move`, or of an `update` with `*** Move to:` (write there, delete `path`). */
  newPath?: string;
  /** Full new content for `update` and `add`; absent for `delete` and a pure `move`. */
  newContent?: string;
  /** For `update`: the strategies that located its hunks, in hunk order, comma-separated. */
  strategy?: string;
}

export type V4APlan = { ok: true; ops: PatchFileOp[] } | { ok: false; error: string };

/** What {@link planV4APatch} needs from the file system: the text of a file, or `null` if missing. */
export interface PatchReader {
  read(path: string): Promise<string | null>;
}
