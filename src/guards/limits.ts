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
   * Workspace .gitignore rules with more `**` than this are skipped wherever the host compiles
   * them (tree, JS search; see `boundedIgnoreRules` in guards/ignoreRules.ts). Defence in depth:
   * the matcher (search/gitignoreMatch.ts) is linear in the path length per rule anyway.
   */
  gitignoreMaxGlobstars: 2,
  /**
   * Largest workspace ignore file the host reads (bytes); a larger one is treated as absent (git
   * itself skips ignore files over 100 MiB). Read through one descriptor, regular files only.
   */
  ignoreFileMaxBytes: 1024 * 1024,
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
  /** Lines one text read returns when no limit is given (read_file, WorkbenchBackend.read). */
  readDefaultLines: 500,
  /** Most lines one text read returns; a larger limit is capped (the rest is offered as the next window). */
  readMaxLines: 2_000,
  /** Widest line a text read shows (characters); wider lines are cut and marked with {@link LINE_CUT_MARKER}. */
  readLineMaxChars: 2_000,
  /** Default most characters one text read returns (option `maxReadChars`). */
  readMaxChars: 100_000,
  /**
   * Files up to this size get their total line count streamed right after a window that did not
   * reach the end (for the "of T lines" hint); a bigger file's total is not counted inline.
   */
  readCountLinesMaxBytes: 32 * 1024 * 1024,
  /** Default largest image (raw bytes) a read hands to the model as an image block (option `maxImageBytes`). */
  imageMaxBytes: 5 * 1024 * 1024,
  /** Largest PDF a read loads to extract text from (bytes). */
  pdfMaxBytes: 32 * 1024 * 1024,
  /** Most PDF pages one read_file call extracts (its default window too). */
  pdfPagesPerRead: 20,
  /** Most PDF pages WorkbenchBackend extracts for its line windows (later pages are noted, not shown). */
  pdfMaxPagesWhole: 200,
  /** Longest one PDF extraction may run (ms) before its extraction process is stopped. */
  pdfTimeoutMs: 30_000,
  /**
   * Memory the PDF extraction process may use (bytes): the kernel's RLIMIT_DATA on it, which
   * counts its heap and every private writable mapping. A normal document needs ~60 MB; a 1 MB
   * flate bomb inflates to over 2 GB.
   */
  pdfMemoryBytes: 512 * 1024 * 1024,
  /** Most characters of text one PDF extraction returns (the page crossing it is cut). */
  pdfMaxTextChars: 4_000_000,
  /**
   * Largest audio, video, PDF-as-file or other binary WorkbenchBackend returns as bytes
   * (deepagents' read_file refuses binaries over 10 MiB; checked here before anything is loaded).
   */
  binaryReadMaxBytes: 10 * 1024 * 1024,
  /** Longest the sandbox's egress proxy waits for a connection to an allowed host to open (ms). */
  egressConnectTimeoutMs: 15_000,
  /** Largest request head a sandboxed command may send through the egress proxy (bytes). */
  egressMaxHeaderBytes: 32 * 1024,
  /** Most per-host leaf certificates one egress proxy keeps for the HTTPS hosts it intercepts (oldest dropped). */
  egressLeafCacheEntries: 128,
  /** Largest system CA bundle the egress proxy copies into the sandbox's trust file (bytes). */
  egressCaBundleMaxBytes: 4 * 1024 * 1024,
  /** Longest command line the danger screen parses (characters); a longer one is refused. */
  commandScreenMaxChars: 100_000,
  /** Most units of work (syntax nodes, expanded words) one screen may do, nested `sh -c` strings included. */
  commandScreenMaxWork: 250_000,
  /** Deepest nesting (groups, substitutions, words) the danger screen follows. */
  commandScreenMaxNesting: 200,
  /**
   * Default size (tokens, at 4 characters a token) over which a foreign tool's result is saved to
   * the workspace and the model gets a preview (FileManager option `evictLargeResults`; deepagents uses 20k).
   */
  evictThresholdTokens: 20_000,
  /** Characters of an evicted result shown from its start and from its end. */
  evictHeadChars: 3_000,
  evictTailChars: 1_000,
  /** Largest evicted result saved whole (characters); the rest is cut with a note. */
  evictMaxSavedChars: 16 * 1024 * 1024,
} as const;

/** What the model gets instead of a foreign tool's result that was too large (the text around a head/tail preview). */
export function evictedResultNotice(tool: string, chars: number, thresholdTokens: number, savedPath: string, cut: boolean): string {
  return (
    `The result of ${tool} was ${chars} characters (about ${Math.ceil(chars / 4)} tokens, over the ${thresholdTokens}-token limit), so it was saved to ` +
    `"${savedPath}"${cut ? " (cut at " + LIMITS.evictMaxSavedChars + " characters)" : ""} and only its start and end are shown below. ` +
    `Read more with read_file(path="${savedPath}", offset=N, limit=M) (lines), or find what you need with search_files(pattern="...", path="${savedPath}").`
  );
}

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

/** Why the danger screen refuses a command line it will not check (fits after "refused because"). */
export function commandScreenBudgetProblem(what: "size" | "work" | "nesting", chars = 0): string {
  const fix = "split it into smaller commands, or write the script to a file in the workspace and run that file";
  if (what === "size") return `it is ${chars} characters long, more than the ${LIMITS.commandScreenMaxChars} the danger screen checks: ${fix}`;
  if (what === "nesting") return `it nests groups or substitutions more than ${LIMITS.commandScreenMaxNesting} levels deep, more than the danger screen follows: ${fix}`;
  return `it expands to more than the danger screen checks (${LIMITS.commandScreenMaxWork} syntax nodes and words): ${fix}`;
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

/** Appended to a line a read or a search shows cut at its width limit. */
export const LINE_CUT_MARKER = "... [truncated]";

/**
 * The answer to a text read whose offset lies past the last line, worded in the caller's offset
 * convention: `base` 1 for read_file, 0 for deepagents. `file` names the file (else "the file");
 * `unit` says what is counted (default "lines").
 */
export function readPastEndMessage(o: { offset: number; base: 0 | 1; totalLines: number | undefined; file?: string; unit?: string }): string {
  const what = o.file === undefined ? "the file" : `'${o.file}'`;
  const unit = o.unit ?? "lines";
  if (o.totalLines === undefined) return `offset=${o.offset} is past the end of ${what}. Use a smaller offset.`;
  if (o.totalLines === 0) return `offset=${o.offset} is past the end of ${what} (0 ${unit}): there is nothing to read.`;
  return `offset=${o.offset} is past the end of ${what} (${o.totalLines} ${unit}). Use an offset from ${o.base} to ${o.totalLines - 1 + o.base}.`;
}

/** The search error when a regular expression ran past its deadline and its worker was stopped. */
export function regexTimeoutMessage(seconds: number, where: string): string {
  return (
    `The regular expression ran for more than ${seconds} s on ${where} and was stopped: it backtracks catastrophically ` +
    "(nested quantifiers such as (a+)+ or (.*)* on long lines). Simplify it: remove nested repetition, anchor it, or search for a plain word."
  );
}

/**
 * The refusal when a PDF's extraction outgrew its memory cap (the process was stopped by the
 * kernel's limit): a predicate after the file's name, like the other PDF refusals.
 */
export function pdfMemoryMessage(memoryBytes: number = LIMITS.pdfMemoryBytes): string {
  return (
    `could not be read: extracting its text needed more than the ${formatBytes(memoryBytes)} of memory allowed for a PDF, so the extraction was stopped ` +
    "(the document may be a decompression bomb, or very complex). Extract the pages you need with a command-line PDF tool if one is available, or ask for a smaller copy."
  );
}

/**
 * Default resource limits of one sandboxed command (bubblewrap; option `shell.limits`). Kernel
 * rlimits set inside the sandbox (processes, memory, CPU time, file size: per process, like
 * Hermes' prlimit), a sized `/tmp`, and a byte count on the output stream. When the agent runs as
 * root the kernel ignores the process limit for uid 0, so a pids cgroup holds it instead.
 */
export const SANDBOX_LIMITS = {
  /** Processes and threads at once (RLIMIT_NPROC in the sandbox's user namespace, or pids.max). */
  processes: 256,
  /** Memory of one process (RLIMIT_DATA: heap and private writable mappings, not reserved address space). */
  memoryBytes: 2 * 1024 * 1024 * 1024,
  /** CPU time of one process (RLIMIT_CPU), seconds. The call's timeout bounds wall time. */
  cpuSeconds: 600,
  /** Largest file a process may write (RLIMIT_FSIZE). */
  fileSizeBytes: 1024 * 1024 * 1024,
  /** Size of the sandbox's `/tmp` (a tmpfs, i.e. host memory). */
  tmpfsBytes: 512 * 1024 * 1024,
  /** Bytes of stdout and stderr together before the command is stopped. */
  outputBytes: 64 * 1024 * 1024,
} as const;

/** Which sandbox limit ended or hampered a command. */
export type SandboxLimitName = keyof typeof SANDBOX_LIMITS;

function formatAmount(name: SandboxLimitName, value: number): string {
  if (name === "processes") return `${value} processes`;
  if (name === "cpuSeconds") return `${value} s of CPU time`;
  return formatBytes(value);
}

/** The note a command's result carries when it ran into a sandbox limit. */
export function sandboxLimitMessage(name: SandboxLimitName, value: number): string {
  const what: Record<SandboxLimitName, string> = {
    processes: "the process limit",
    memoryBytes: "the memory limit of one process",
    cpuSeconds: "the CPU time limit of one process",
    fileSizeBytes: "the file size limit",
    tmpfsBytes: "the size of /tmp (or a full disk)",
    outputBytes: "the output limit",
  };
  const fix: Record<SandboxLimitName, string> = {
    processes: "Run fewer processes at once (e.g. make -j2, fewer workers)",
    memoryBytes: "Process the data in smaller parts",
    cpuSeconds: "Split the work into shorter steps",
    fileSizeBytes: "Write smaller files",
    tmpfsBytes: "Write large temporary files inside the workspace instead of /tmp",
    outputBytes: "Redirect the output to a file (cmd > out.txt 2>&1) and read or search that file",
  };
  const stopped = name === "outputBytes" || name === "cpuSeconds" || name === "fileSizeBytes" ? "was stopped: it reached" : "ran into";
  return `[the command ${stopped} ${what[name]} of the sandbox (${formatAmount(name, value)}). ${fix[name]}; the limits are set by the operator (shell.limits).]`;
}

/**
 * Time travel on a remote environment: the most bytes one workspace listing (`find -printf`) may
 * print before the snapshot gives up (about 600k entries; a host never buffers more), and the
 * most file bytes one restore `exec` carries on stdin (larger restores take several).
 */
export const REMOTE_LISTING_MAX_BYTES = 64 * 1024 * 1024;
export const REMOTE_PUSH_BATCH_BYTES = 64 * 1024 * 1024;

/**
 * A deepagents sandbox provider as an Environment (`DeepAgentsSandboxEnvironment`): its
 * `execute(command)` carries text only, so bytes cross it base64-encoded.
 * - `inlineBytes`: stdin up to this size rides inside the command line (one `execute`; a single
 *   argv string is at most 128 KiB on Linux), and stdout + stderr up to this size come back in
 *   the same call's output (under deepagents' LocalShellBackend's 100,000-character default cap).
 *   Larger ones go through `uploadFiles` / `downloadFiles` (or chunks of this size over `execute`).
 * - `outputBytes`: stdout (and stderr) beyond this are cut in the sandbox, so a command that
 *   prints gigabytes never reaches this process's memory.
 */
export const DEEPAGENTS_SANDBOX_LIMITS = {
  inlineBytes: 48 * 1024,
  outputBytes: 256 * 1024 * 1024,
} as const;
