/** What a search engine (ripgrep or the JS fallback) is asked to do. Paths are absolute. */
export interface SearchRequest {
  /** `content`: `pattern` is a regex searched in file contents; `files`: `pattern` is a glob on file paths. */
  target: "content" | "files";
  pattern: string;
  /** Content searches only: lines with context, names of matching files, or per-file counts. */
  mode: "content" | "files_only" | "count";
  /** The workspace directory: the engine's working directory; globs are matched on paths relative to it. */
  cwd: string;
  /** Absolute file or directory to search. */
  searchPath: string;
  /** Only files whose path (relative to `cwd`) matches this gitignore-style glob. */
  fileGlob?: string;
  /** Lines of context before and after each match (content mode). */
  context: number;
  /** Stop after this many matches / files: the result is then marked incomplete. */
  maxRecords: number;
  timeoutMs: number;
  /** Stop reading the engine's output beyond this many bytes (ripgrep) / characters (JS). */
  maxOutputBytes: number;
  /**
   * Content searches: files whose content must not be searched (credential files, by absolute
   * path). Dropped before anything is counted, so neither a total, a cap nor a page reveals
   * whether they matched.
   */
  exclude?: (absolutePath: string) => boolean;
  /**
   * Told of each result file (absolute path) as soon as the engine reports it, so per-file checks
   * (see src/search/refused.ts) run alongside the search. A hint: engines may call it more than
   * once per file, or not at all; callers still check the finished outcome.
   */
  onResultFile?: (absolutePath: string) => void;
}

/** One line of a content search: a match or a context line. `path` is absolute. */
export interface LineRecord {
  path: string;
  line: number;
  text: string;
  match: boolean;
}

export interface SearchOutcome {
  engine: "ripgrep" | "js";
  /** Content mode. */
  lines: LineRecord[];
  /** files_only mode and the files target (absolute paths). */
  files: string[];
  /** count mode: matching lines per file. */
  counts: Array<{ path: string; count: number }>;
  /** `false` when a cap or the timeout stopped the search early. */
  complete: boolean;
  stopReason?: "limit" | "timeout" | "output";
  /** A problem with the request (invalid regex…) phrased for the model. */
  error?: string;
  /**
   * Set by an engine that passed every result file to `req.onResultFile` as it went: a
   * per-file check fed by that hook then need not look at the outcome again.
   */
  announced?: boolean;
  /**
   * Set by an engine that dropped every result `req.exclude` refuses: the same name check
   * need not run again per result (on a 100k-file count it was a tenth of the tool's time).
   */
  screenedByName?: boolean;
}

export function emptyOutcome(engine: SearchOutcome["engine"]): SearchOutcome {
  return { engine, lines: [], files: [], counts: [], complete: true };
}
