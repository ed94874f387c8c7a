/**
 * Bounds on the work one tool call may cause with input the model (or a planted workspace)
 * controls: glob complexity, regex run time, line widths, file sizes for whole-file edits. One
 * place for the numbers; every entry point reads them from here and answers with these messages.
 */

export const LIMITS = {
  /** Longest glob pattern accepted (characters). */
  globMaxChars: 1_000,
  /** Most `*` wildcards in one glob (`**` counts as two). */
  globMaxStars: 64,
  /** Most alternatives a glob's `{a,b}` groups may expand to. */
  globMaxAlternatives: 256,
  /** Most characters all of a glob's alternatives may add up to (the matcher's cost scales with it). */
  globMaxExpandedChars: 4_000,
  /**
   * .gitignore rules with more `**` than this are skipped by the JS search engine: the `ignore`
   * package compiles them to regexes that backtrack polynomially in the path depth.
   */
  gitignoreMaxGlobstars: 2,
  /**
   * Widest line a search engine returns, in bytes (ripgrep `--max-columns`) or characters (the
   * JS engine); wider lines come back cut. Keeps ripgrep's memory flat on a one-line 64 MB file.
   */
  searchLineMaxBytes: 8_192,
  /** Default time limit of one search (ms): ripgrep is killed, the JS engine's regex worker terminated. */
  searchTimeoutMs: 30_000,
  /** Files larger than this are not read by the JS search engine (ripgrep streams them instead). */
  searchJsMaxFileBytes: 64 * 1024 * 1024,
  /**
   * Largest file a whole-file edit (patch, the backend's edit) reads, and largest text it
   * writes (bytes, or characters for text built in memory).
   */
  editMaxBytes: 16 * 1024 * 1024,
  /** Default largest image (raw bytes) a read hands to the model as an image block (option `maxImageBytes`). */
  imageMaxBytes: 5 * 1024 * 1024,
  /** Largest PDF a read loads to extract text from (bytes). */
  pdfMaxBytes: 32 * 1024 * 1024,
  /** Most PDF pages one read_file call extracts (its default window too). */
  pdfPagesPerRead: 20,
  /** Most PDF pages WorkbenchBackend extracts for its line windows (later pages are noted, not shown). */
  pdfMaxPagesWhole: 200,
  /** Longest one PDF extraction may run (ms) before its worker thread is stopped. */
  pdfTimeoutMs: 30_000,
} as const;

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${Math.round(n / (1024 * 1024))} MiB` : `${n} bytes`;
}

/** Why a glob pattern is refused (a guiding message), or `undefined` when it is within the limits. */
export function globPatternProblem(pattern: string): string | undefined {
  if (pattern.length > LIMITS.globMaxChars) {
    return `The glob is ${pattern.length} characters long (at most ${LIMITS.globMaxChars}). Use a shorter pattern such as "**/*.ts" and narrow the results with the path argument.`;
  }
  const stars = pattern.split("*").length - 1;
  if (stars > LIMITS.globMaxStars) {
    return `The glob has ${stars} "*" wildcards (at most ${LIMITS.globMaxStars}). Use fewer wildcards, e.g. "**/*name*".`;
  }
  return undefined;
}

/** The refusal when brace groups expand to too many alternatives (or too much text). */
export function globAlternativesProblem(): string {
  return `The glob's {a,b} groups expand to too many alternatives (at most ${LIMITS.globMaxAlternatives}, ${LIMITS.globMaxExpandedChars} characters in all). Split it into several simpler globs.`;
}

/** Why a file is too large to edit whole (a guiding message), or `undefined`. */
export function editInputProblem(display: string, bytes: number): string | undefined {
  if (bytes <= LIMITS.editMaxBytes) return undefined;
  return `"${display}" is ${bytes} bytes, too large to edit in one piece (limit ${formatBytes(LIMITS.editMaxBytes)}). Use write_file for generated files, or split the file.`;
}

/** Why an edit's result is refused before anything is written (a guiding message), or `undefined`. */
export function editResultProblem(display: string, size: number): string | undefined {
  if (size <= LIMITS.editMaxBytes) return undefined;
  return `The edit would make "${display}" ${size} characters long (limit ${formatBytes(LIMITS.editMaxBytes)}); nothing was written. Replace fewer occurrences or use a shorter new_string.`;
}

/** The search error when a regular expression ran past its deadline and its worker was stopped. */
export function regexTimeoutMessage(seconds: number, where: string): string {
  return (
    `The regular expression ran for more than ${seconds} s on ${where} and was stopped: it backtracks catastrophically ` +
    "(nested quantifiers such as (a+)+ or (.*)* on long lines). Simplify it: remove nested repetition, anchor it, or search for a plain word."
  );
}

/**
 * Time travel on a remote environment: the most bytes one workspace listing (`find -printf`) may
 * print before the snapshot gives up (about 600k entries; a host never buffers more), and the
 * most file bytes one restore `exec` carries on stdin (larger restores take several).
 */
export const REMOTE_LISTING_MAX_BYTES = 64 * 1024 * 1024;
export const REMOTE_PUSH_BATCH_BYTES = 64 * 1024 * 1024;
