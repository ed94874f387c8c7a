/**
 * read_file: a window of a text file as `N|text` lines, behind the guards, in order: device
 * paths → non-regular files → credential files → media or binary (content sniff, then
 * extension: images become an image block, PDFs their pages' text, other binaries are refused)
 * → (dedup, in middleware/fileGuards.ts) → size cap → secret redaction.
 *
 * The tool is stateless. Dedup, read timestamps (for write staleness) and loop detection live
 * in the FileManager middleware; without it the tool still works, just without those guards.
 */
import path from "node:path";
import { z } from "zod";
import { lineStartFor } from "../src/environment/lineIndex.js";
import { isAtomicTempName } from "../src/environment/tempFiles.js";
import type { FileOperations, FileStat, OpenGuard } from "../src/environment/fileOperations.js";
import { contentAccessReason } from "../src/guards/access.js";
import { LIMITS, LINE_CUT_MARKER as CUT_MARKER, readPastEndMessage } from "../src/guards/limits.js";
import { markCutLines, readRequest, readWindow } from "../src/environment/readWindow.js";
import { devicePathReason, nonRegularFileReason } from "../src/guards/devices.js";
import { redactSecrets, REDACTION_MARKER_PREFIX } from "../src/guards/redact.js";
import { extractPdfPages, PdfReadError, type PdfPages } from "../src/media/pdf.js";
import { imageBlock, openForRead, renderPdfPages } from "../src/media/read.js";
import {
  accessPolicyFor,
  FileToolError,
  openGuardFor,
  recheckAfterRead,
  resolveFileTarget,
  resolveFileToolOptions,
  type FileTarget,
  type FileToolOptions,
  type FileToolOutcome,
  type ResolvedFileToolOptions,
} from "./fileToolSupport.js";
import { failedOutcome, fileToolFromCore, pathArgTargets } from "./fileToolFromCore.js";
import { FileToolCaches } from "./lineCounts.js";

export const READ_DEFAULT_LIMIT = LIMITS.readDefaultLines;
export const READ_MAX_LIMIT = LIMITS.readMaxLines;
export const MAX_LINE_CHARS = LIMITS.readLineMaxChars;
export const LINE_CUT_MARKER = CUT_MARKER;

export const readFileSchema = z.object({
  path: z.string().describe('The file to read, relative to the workspace root, e.g. "src/app.ts".'),
  offset: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("1-based line number to start at (default 1); for a PDF, the first page. To continue a long file, use the offset given in the previous answer's hint."),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`How many lines to return (default ${READ_DEFAULT_LIMIT}, at most ${READ_MAX_LIMIT}); for a PDF, how many pages (default and at most ${LIMITS.pdfPagesPerRead}).`),
});

export type ReadFileArgs = z.infer<typeof readFileSchema>;

// ── total line counts ──────────────────────────────────────────────────────────────────────

/** Files at least this big get a line index with their count (smaller ones read fast from byte 0). */
const LINE_INDEX_MIN_BYTES = 1024 * 1024;

// ── helpers ────────────────────────────────────────────────────────────────────────────────

function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > max) return max + 1;
    prev = cur;
  }
  return prev[b.length]!;
}

/** Up to 5 names in the same directory that look like the one asked for (typo, case, extension). */
export async function similarNames(ops: FileOperations, target: FileTarget): Promise<string[]> {
  const dir = path.dirname(target.systemPath);
  const wanted = path.basename(target.systemPath).toLowerCase();
  const stem = wanted.replace(/\.[^.]*$/, "");
  let entries: { name: string }[];
  try {
    entries = await ops.readdir(dir);
  } catch {
    return [];
  }
  const max = Math.max(2, Math.floor(wanted.length / 3));
  const scored: { name: string; score: number }[] = [];
  for (const e of entries) {
    if (isAtomicTempName(e.name)) continue;
    const name = e.name.toLowerCase();
    let score = editDistance(wanted, name, max);
    if (score > max && stem.length >= 3 && (name.includes(stem) || stem.includes(name.replace(/\.[^.]*$/, "")))) score = max;
    if (score <= max) scored.push({ name: e.name, score });
  }
  scored.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
  const displayDir = path.dirname(target.display);
  return scored.slice(0, 5).map((s) => (displayDir === "." ? s.name : `${displayDir}/${s.name}`));
}

/** read_file's window (1-based; the schema asks for a limit of at least 1, so 0 reads one line). */
function clampWindow(args: { offset?: unknown; limit?: unknown }): { offset: number; limit: number; capped: boolean } {
  const r = readRequest(args.offset, args.limit, 1);
  return { offset: r.firstLine, limit: Math.max(1, r.limit), capped: r.limitCapped };
}

// ── guards ─────────────────────────────────────────────────────────────────────────────────

/** Guard 1a: device and /proc paths, by their literal spelling. */
export function guardDevicePath(rawPath: string): void {
  const reason = devicePathReason(rawPath.trim());
  if (reason) throw new FileToolError(reason);
}

/**
 * Guard 1b: the file exists and is a regular file (FIFOs, sockets, directories are never
 * opened). Returns its stat and real path.
 */
export async function guardRegularFile(ops: FileOperations, target: FileTarget): Promise<{ stat: FileStat; real: string }> {
  const s = await ops.stat(target.systemPath);
  if (!s) {
    const similar = await similarNames(ops, target);
    throw new FileToolError(
      `File not found: "${target.display}".${similar.length ? " Did you mean one of the similar names listed?" : " Use search_files with target=\"files\" to find it."}`,
      similar.length ? { similar_files: similar } : {},
    );
  }
  const reason = nonRegularFileReason(target.display, s);
  if (reason) throw new FileToolError(reason);
  // Open mode: `../../proc/self/environ` or a symlink to it is a regular file by stat; refuse it
  // by its resolved and its real path too.
  const real = await ops.realpath(target.systemPath).catch(() => target.systemPath);
  for (const candidate of new Set([target.systemPath, real])) {
    const deviceReason = devicePathReason(candidate);
    if (deviceReason) throw new FileToolError(`"${target.display}" leads to a device or process file. ${deviceReason.replace(`"${candidate}"`, "It")}`);
  }
  return { stat: s, real };
}

/**
 * PDF text, `offset`/`limit` counted in pages (at most {@link LIMITS.pdfPagesPerRead} per call),
 * cut to `maxReadChars` at a page boundary, secrets masked.
 */
async function readPdfWindow(bytes: Buffer, target: FileTarget, args: ReadFileArgs, opts: ResolvedFileToolOptions): Promise<{ payload: Record<string, unknown>; isError: boolean }> {
  const first = typeof args.offset === "number" && Number.isFinite(args.offset) ? Math.max(1, Math.floor(args.offset)) : 1;
  const asked = typeof args.limit === "number" && Number.isFinite(args.limit) ? Math.max(1, Math.floor(args.limit)) : LIMITS.pdfPagesPerRead;
  const count = Math.min(asked, LIMITS.pdfPagesPerRead);
  let doc: PdfPages;
  try {
    doc = await extractPdfPages(bytes, { first, count, maxChars: opts.maxReadChars });
  } catch (err) {
    if (err instanceof PdfReadError) throw new FileToolError(`"${target.display}" ${err.message}`);
    throw err;
  }
  const base = { path: target.display, file_size: bytes.length, mime_type: "application/pdf", total_pages: doc.totalPages };
  if (doc.pages.length === 0) {
    const hint = doc.totalPages === 0 ? "The PDF has no pages." : `offset=${first} is past the last page (${doc.totalPages} pages). Use an offset from 1 to ${doc.totalPages}.`;
    return { payload: { ...base, content: "", truncated: false, hint }, isError: false };
  }
  // Whole pages while they fit; a first page that alone is too long is cut.
  let pages = doc.pages;
  let cutPage = false;
  while (pages.length > 1 && renderPdfPages(pages, doc.totalPages).length > opts.maxReadChars) pages = pages.slice(0, -1);
  if (renderPdfPages(pages, doc.totalPages).length > opts.maxReadChars) {
    pages = [{ page: pages[0]!.page, text: `${pages[0]!.text.slice(0, Math.floor(opts.maxReadChars * 0.9))}${LINE_CUT_MARKER}` }];
    cutPage = true;
  }
  const raw = renderPdfPages(pages, doc.totalPages);
  const content = opts.redactSecrets ? redactSecrets(raw, { startsMidFile: first > 1 }) : raw;
  const last = pages[pages.length - 1]!.page;
  const hints: string[] = [];
  if (last < doc.totalPages) hints.push(`Use offset=${last + 1} to continue reading (showing pages ${first}-${last} of ${doc.totalPages}; offset and limit count pages for a PDF)`);
  if (asked > LIMITS.pdfPagesPerRead) hints.push(`limit is capped at ${LIMITS.pdfPagesPerRead} pages per call for a PDF.`);
  if (cutPage) hints.push(`Page ${first} is longer than ${opts.maxReadChars.toLocaleString("en-US")} characters and was cut; the rest of it cannot be shown.`);
  const payload: Record<string, unknown> = { ...base, pages: `${first}-${last}`, content, truncated: last < doc.totalPages };
  if (hints.length) payload.hint = hints.join(" ");
  if (content !== raw && content.includes(REDACTION_MARKER_PREFIX)) {
    payload._warning = "Secrets in this document are masked as «redacted…» markers; ask the user for secret values.";
  }
  return { payload, isError: false };
}

/**
 * Guard 3: the access policy (credential files, devices, confinement) on the real path and on
 * the name as given. Checked here for an early, clear answer, and again by the FileOperations
 * on the descriptor it opens (so a link swapped in between is caught too).
 */
export function guardCredentials(target: FileTarget, real: string, opts: ResolvedFileToolOptions): void {
  const policy = accessPolicyFor(target, opts);
  const reason = contentAccessReason(target.systemPath, { ...policy, workspaceDir: target.ws.dir }) ?? contentAccessReason(real, policy);
  if (reason) throw new FileToolError(`"${target.display}" ${reason}`);
}

/** Guard 5: the rendered window must fit `maxReadChars`; otherwise say how much to ask for. */
export function guardSize(content: string, window: { offset: number; limit: number }, linesShown: number, opts: ResolvedFileToolOptions, extra: Record<string, unknown>): void {
  if (content.length <= opts.maxReadChars) return;
  const perLine = content.length / Math.max(1, linesShown);
  const fits = Math.max(1, Math.floor((opts.maxReadChars * 0.9) / perLine));
  throw new FileToolError(
    `The requested lines are ${content.length.toLocaleString("en-US")} characters, over the ${opts.maxReadChars.toLocaleString("en-US")}-character limit. Use offset and limit to read a smaller part, e.g. offset=${window.offset}, limit=${fits}.`,
    extra,
  );
}

/**
 * Guard 6: secret redaction of the raw lines (before gutters, so line-anchored rules see the
 * file's own text); a window after line 1 may start inside a private key. Returns the lines to
 * show (same count) and whether anything was masked.
 */
export function guardSecrets(lines: string[], offset: number, opts: ResolvedFileToolOptions): { lines: string[]; redacted: boolean } {
  if (!opts.redactSecrets) return { lines, redacted: false };
  const raw = lines.join("\n");
  const masked = redactSecrets(raw, { startsMidFile: offset > 1 });
  if (masked === raw) return { lines, redacted: false };
  const out = masked.split("\n");
  // redactSecrets keeps lines; should that ever fail, mask the window rather than misnumber it.
  if (out.length !== lines.length) return { lines: lines.map(() => "«redacted»"), redacted: true };
  return { lines: out, redacted: masked.includes(REDACTION_MARKER_PREFIX) };
}

// ── the read ───────────────────────────────────────────────────────────────────────────────

/** `inline`: the read window says the file is small enough to count now (src/environment/readWindow.ts). */
async function totalLinesOf(ops: FileOperations, p: string, s: FileStat, opts: ResolvedFileToolOptions, guard: OpenGuard, inline: boolean): Promise<number | undefined> {
  const { caches } = opts;
  const key = FileToolCaches.key(ops, p, s);
  const wantIndex = typeof ops.indexLines === "function" && s.size >= LINE_INDEX_MIN_BYTES && caches.lineIndexes.get(key) === undefined;
  const known = caches.knownLineCount(key);
  if (known !== undefined && !wantIndex) return known;
  if (known === undefined && inline) return caches.countLinesOnce(ops, p, key, guard, wantIndex);
  // Huge file: answer now, count (and index) in the background for the next read — one count
  // per file at a time, so a log that grows between reads is not scanned again and again.
  caches.countInBackground(ops, p, key, guard, wantIndex);
  return known;
}

/**
 * The read_file logic, returning the JSON payload (errors as `{ error }` with `isError`).
 * Line counts and line indexes of big files are kept in `opts.caches`, owned by the tool set.
 */
export async function readFileCore(
  args: ReadFileArgs,
  config: unknown,
  opts: ResolvedFileToolOptions,
): Promise<FileToolOutcome> {
  let target: FileTarget | undefined;
  try {
    const rawPath = (args as { path?: unknown })?.path;
    if (typeof rawPath === "string") guardDevicePath(rawPath);
    target = await resolveFileTarget(rawPath, config, opts);
    const ops = opts.fileOps;
    const { stat: s, real } = await guardRegularFile(ops, target);
    const guard = openGuardFor("read", target, opts);
    guardCredentials(target, real, opts);
    const opened = await openForRead(ops, { systemPath: target.systemPath, shown: target.display, names: [target.systemPath, real] }, s.size, guard, opts.maxImageBytes);
    if (opened.kind === "refused") throw new FileToolError(opened.reason);
    if (opened.kind === "image") {
      await recheckAfterRead(target, opts);
      return {
        payload: { path: target.display, file_size: opened.bytes.length, mime_type: opened.mimeType, hint: "The image follows as an image block." },
        isError: false,
        blocks: [{ ...imageBlock(opened.bytes, opened.mimeType) }],
      };
    }
    if (opened.kind === "pdf") {
      await recheckAfterRead(target, opts);
      return await readPdfWindow(opened.bytes, target, args, opts);
    }

    const window = clampWindow(args);
    const base = { path: target.display, file_size: s.size };
    if (s.size === 0) {
      return { payload: { ...base, content: "", total_lines: 0, truncated: false, hint: "The file is empty (0 bytes)." }, isError: false };
    }
    const key = FileToolCaches.key(ops, target.systemPath, s);
    const index = opts.caches.lineIndexes.get(key);
    const start = index ? lineStartFor(index, window.offset) : undefined;
    const read = await ops.readLines(target.systemPath, { offset: window.offset, limit: window.limit, maxLineChars: MAX_LINE_CHARS, ...(start ? { start } : {}) }, guard);
    await recheckAfterRead(target, opts);
    if (read.totalLines !== undefined) opts.caches.remember(key, read.totalLines);
    // No character cap here: a window over maxReadChars is refused with a smaller limit (guardSize).
    const win = readWindow(read, { firstLine: window.offset, limit: window.limit }, 1, { fileSize: s.size, countLinesMaxBytes: opts.countLinesInlineMaxBytes });
    const total = read.totalLines ?? (await totalLinesOf(ops, target.systemPath, s, opts, guard, win.kind !== "empty" && win.countTotal));

    if (win.kind !== "lines") {
      const hint = win.kind === "empty" ? "The file is empty (0 bytes)." : readPastEndMessage({ offset: win.offset, base: 1, totalLines: total });
      return { payload: { ...base, content: "", total_lines: total ?? null, truncated: false, hint }, isError: false };
    }
    const render = (lines: string[]) => lines.map((text, i) => `${window.offset + i}|${text}`).join("\n");
    const first = win.firstLine;
    const last = win.endLine;
    guardSize(render(win.lines), window, win.lines.length, opts, { ...base, total_lines: total ?? null });
    // Redact the lines as read (the marker is not the file's text), then mark the cut ones.
    const { lines: shown, redacted } = guardSecrets(win.raw, window.offset, opts);
    const content = render(markCutLines(shown, first, win.cutLines));

    const hints: string[] = [];
    if (win.more) {
      hints.push(
        total !== undefined
          ? `Use offset=${last + 1} to continue reading (showing ${first}-${last} of ${total} lines)`
          : `Use offset=${last + 1} to continue reading (showing ${first}-${last} of at least ${last + 1} lines; the total is still being counted)`,
      );
    }
    if (window.capped) hints.push(`limit is capped at ${READ_MAX_LIMIT} lines per call.`);
    if (win.cutLines.length) {
      const list = win.cutLines.slice(0, 10).join(", ") + (win.cutLines.length > 10 ? ", …" : "");
      hints.push(`Line(s) ${list} were longer than ${MAX_LINE_CHARS.toLocaleString("en-US")} characters and were cut (marked "${LINE_CUT_MARKER}").`);
    }
    const payload: Record<string, unknown> = { ...base, content, total_lines: total ?? null, truncated: win.more };
    if (total === undefined) payload.total_lines_at_least = last + (win.more ? 1 : 0);
    if (hints.length) payload.hint = hints.join(" ");
    if (redacted) {
      payload._warning =
        'Secrets in this file are masked as «redacted…» markers. Never write a marker back (it would destroy the real value): change other lines with patch, and ask the user for secret values.';
    }
    return { payload, isError: false };
  } catch (err) {
    return failedOutcome(err, target);
  }
}

/**
 * The `read_file` tool. Stateless: without the FileManager middleware there is no dedup stub,
 * no loop detection and no read timestamps for write staleness — everything else applies.
 */
export function createReadFileTool(options: FileToolOptions = {}) {
  return readFileToolFrom(resolveFileToolOptions(options));
}

/** The same tool over options already resolved (createFileTools shares one set between its tools). */
export function readFileToolFrom(opts: ResolvedFileToolOptions) {
  return fileToolFromCore(opts, {
    name: "read_file",
    description:
      `Read a text file. Returns JSON: "content" as numbered lines "N|text" (the "N|" gutter is not part of the file — never copy it into write_file or patch), ` +
      `"total_lines", "file_size", "truncated" and a "hint" telling the offset to continue with. Reads ${READ_DEFAULT_LIMIT} lines by default (limit up to ${READ_MAX_LIMIT}); ` +
      "for long files read further windows with offset instead of re-reading. " +
      `PNG, JPEG, GIF and WebP images come back as an image block you can look at; a PDF comes back as text, offset and limit counting pages (up to ${LIMITS.pdfPagesPerRead} per call). ` +
      "Other binary files, devices, credential files (.env, keys) are refused; secrets are shown masked as «redacted…».",
    schema: readFileSchema,
    core: readFileCore,
    probe: {
      kind: "read",
      window: (args) => {
        const w = clampWindow((args ?? {}) as { offset?: unknown; limit?: unknown });
        return `${w.offset}:${w.limit}`;
      },
      targets: pathArgTargets(opts),
    },
  });
}
