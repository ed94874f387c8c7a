/**
 * Drops engine results from files the access policy refuses on facts a name does not show:
 * regular files with more than one hard link (another name of the same file may be a
 * credential file; see src/guards/access.ts). Name-based refusals happen earlier, through
 * `SearchRequest.exclude`, before anything is counted.
 */
import { lstat, type Stats } from "node:fs";
import path from "node:path";
import pLimit from "p-limit";
import { readAccessReason, type AccessPolicy } from "../guards/access.js";
import { LocalFileOperations } from "../fileops/local.js";
import type { LineRecord, SearchOutcome } from "./types.js";

export async function dropHardLinkedResults(outcome: SearchOutcome, policy: AccessPolicy): Promise<void> {
  if (policy.allowHardLinks) return;
  const files = new Set<string>([...outcome.lines.map((l) => l.path), ...outcome.files, ...outcome.counts.map((c) => c.path)]);
  const refused = new Set<string>();
  await lstatEach([...files], (f, s) => {
    if (!s?.isFile() || s.nlink <= 1) return;
    // Names were judged already; here only what the descriptor-level facts add.
    if (readAccessReason(f, { ...policy, confine: false, workspaceDir: path.dirname(f), credentialPatterns: [] }, { type: "file", nlink: s.nlink, size: s.size })) refused.add(f);
  });
  if (refused.size === 0) return;
  outcome.lines = outcome.lines.filter((l) => !refused.has(l.path));
  outcome.files = outcome.files.filter((f) => !refused.has(f));
  outcome.counts = outcome.counts.filter((c) => !refused.has(c.path));
}

/** lstat requests kept in flight (the libuv pool has 4 threads; more only queue). */
const LSTAT_WINDOW = 64;

/**
 * `lstat` of every path, `each` called with its stats (undefined when it failed). Plain
 * callbacks with a window, not a promise per file: on a 100k-file count search the per-file
 * promise and limiter overhead cost several times the system calls themselves.
 */
function lstatEach(paths: readonly string[], each: (p: string, s: Stats | undefined) => void): Promise<void> {
  if (paths.length === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    let next = 0;
    let done = 0;
    let failed: unknown;
    const start = () => {
      const p = paths[next++]!;
      lstat(p, (err, s) => {
        try {
          if (failed === undefined) each(p, err ? undefined : s);
        } catch (e) {
          failed = e;
        }
        if (++done === paths.length) {
          if (failed === undefined) resolve();
          else reject(failed instanceof Error ? failed : new Error(String(failed)));
        } else if (next < paths.length) start();
      });
    };
    for (let k = 0; k < Math.min(LSTAT_WINDOW, paths.length); k++) start();
  });
}

const VERIFY_LINE_CHARS = 4_096;
const sharedOps = new LocalFileOperations();

/**
 * ripgrep opens files by name, so a file swapped for a link between its directory listing and
 * its open can be read through the link. Before any of its text is shown, every reported line
 * is checked against a verified read of the same file (descriptor inside `realRoot`, see
 * LocalFileOperations): a file that now leads elsewhere, or whose lines differ from what was
 * reported, is dropped. `files_only`/`count` answers carry no text and are not re-read.
 */
export async function verifyReportedLines(outcome: SearchOutcome, realRoot: string): Promise<void> {
  if (outcome.lines.length === 0) return;
  const byFile = new Map<string, LineRecord[]>();
  for (const rec of outcome.lines) {
    let list = byFile.get(rec.path);
    if (!list) byFile.set(rec.path, (list = []));
    list.push(rec);
  }
  const limit = pLimit(16);
  const refused = new Set<string>();
  await Promise.all(
    [...byFile].map(([file, records]) =>
      limit(async () => {
        let first = Infinity;
        let last = 0;
        for (const r of records) {
          first = Math.min(first, r.line);
          last = Math.max(last, r.line);
        }
        try {
          const read = await sharedOps.readLines(file, { offset: first, limit: last - first + 1, maxLineChars: VERIFY_LINE_CHARS }, { within: realRoot });
          // ripgrep strips a UTF-8 BOM from the first line.
          const lineAt = (n: number) => (n === 1 ? read.lines[0]?.replace(/^\uFEFF/, "") : read.lines[n - first]);
          const same = records.every((r) => lineAt(r.line) === r.text.slice(0, VERIFY_LINE_CHARS));
          if (!same) refused.add(file);
        } catch {
          refused.add(file);
        }
      }),
    ),
  );
  if (refused.size > 0) outcome.lines = outcome.lines.filter((l) => !refused.has(l.path));
}
