/**
 * write_file: whole-file writes, atomic (temp file + fsync + rename, mode kept), with parents
 * created, the existing file's CRLF and BOM kept, and a per-path lock so parallel tool calls on
 * one file never interleave. Refuses content copied from read_file's display (`N|` gutters)
 * and content holding redaction markers (writing them back would destroy the real secrets).
 *
 * Staleness (the file changed since this thread read it) is added by the FileManager
 * middleware (middleware/fileGuards.ts); without it the write works, with no staleness warning.
 */
import { z } from "zod";
import { withPathLock } from "../src/environment/pathLock.js";
import type { FileOperations, OpenGuard } from "../src/environment/fileOperations.js";
import { accessOpenGuard, writeAccessReason } from "../src/guards/access.js";
import { writeContentReason } from "../src/guards/writeContent.js";
import { fromLf, toLf, type TextConventions } from "../src/patch/lineEndings.js";
import {
  accessPolicyFor,
  assertWritableTarget,
  FileToolError,
  openGuardFor,
  realTargetPath,
  resolveFileTarget,
  resolveFileToolOptions,
  type FileTarget,
  type FileToolOptions,
  type ResolvedFileToolOptions,
} from "./fileToolSupport.js";
import { failedOutcome, fileToolFromCore, pathArgTargets } from "./fileToolFromCore.js";

export const writeFileSchema = z.object({
  path: z.string().describe('The file to create or overwrite, relative to the workspace root, e.g. "notes/plan.md". Missing parent directories are created.'),
  content: z.string().describe('The complete new file content, as plain text — without read_file\'s "N|" line-number gutter.'),
});

export type WriteFileArgs = z.infer<typeof writeFileSchema>;

export { looksLikeReadFileDisplay } from "../src/guards/writeContent.js";

/** Guard: content must be the file itself, not a display of it, and hold no redaction marker (src/guards/writeContent.ts). */
export function guardWriteContent(content: string, what = "content"): void {
  const reason = writeContentReason(content, what);
  if (reason) throw new FileToolError(reason);
}

/** The line-ending and BOM conventions of an existing file, from its first 64 KiB. */
export async function existingConventions(ops: FileOperations, systemPath: string, size: number, guard?: OpenGuard): Promise<TextConventions | undefined> {
  if (size === 0) return undefined;
  const head = await ops.readBytes(systemPath, 0, Math.min(size, 64 * 1024), guard);
  return toLf(head.toString("utf8")).conventions;
}

/** New content in the existing file's conventions: a CRLF or BOM file stays CRLF or BOM. */
export function applyConventions(content: string, conventions: TextConventions | undefined): string {
  if (!conventions) return content;
  const { text, conventions: own } = toLf(content);
  return fromLf(text, { bom: conventions.bom || own.bom, eol: conventions.eol === "\r\n" ? "\r\n" : own.eol });
}

export interface GuardedWriteResult {
  bytesWritten: number;
  dirsCreated: string[];
  created: boolean;
  conventions?: TextConventions;
}

/**
 * A file write with every write guard, for a caller that already holds the target's path
 * lock (patch locks all its files first, then writes).
 */
export async function writeHoldingLock(target: FileTarget, content: string, opts: ResolvedFileToolOptions): Promise<GuardedWriteResult> {
  await assertWritableTarget(target, opts);
  await assertWriteAccess(target, opts);
  const ops = opts.fileOps;
  const guard = openGuardFor("write", target, opts);
  const existing = await ops.stat(target.systemPath);
  if (existing && existing.type === "directory") throw new FileToolError(`"${target.display}" is a directory; give a file path inside it.`);
  if (existing && existing.type !== "file") throw new FileToolError(`"${target.display}" is not a regular file (a FIFO, socket or device); it is never written.`);
  // The head is read only to keep CRLF/BOM; a hard-linked file may be replaced (the rename gives
  // it a new inode, so its other name keeps the old content), just never shown.
  const headGuard = accessOpenGuard("read", { ...accessPolicyFor(target, opts), allowHardLinks: true });
  const conventions = existing ? await existingConventions(ops, target.systemPath, existing.size, headGuard) : undefined;
  const data = applyConventions(content, conventions);
  const { bytesWritten, dirsCreated } = await ops.writeAtomic(target.systemPath, data, guard);
  return { bytesWritten, dirsCreated, created: !existing, conventions };
}

/**
 * The write policy (src/guards/access.ts) on the name as given and on where it really lands:
 * credential files are never written, moved or deleted, and confined writes stay inside. The
 * FileOperations checks the same again on the directory it opened (race-free locally).
 */
export async function assertWriteAccess(target: FileTarget, opts: ResolvedFileToolOptions): Promise<void> {
  const policy = accessPolicyFor(target, opts);
  const real = await realTargetPath(opts.fileOps, target.systemPath);
  const reason = writeAccessReason(target.systemPath, { ...policy, workspaceDir: target.ws.dir }) ?? writeAccessReason(real, policy);
  if (reason) throw new FileToolError(`"${target.display}" ${reason}`);
}

/** {@link writeHoldingLock} under the per-path lock: parallel writers to one file take turns. */
export function guardedWrite(target: FileTarget, content: string, opts: ResolvedFileToolOptions): Promise<GuardedWriteResult> {
  return withPathLock(target.systemPath, () => writeHoldingLock(target, content, opts));
}

/** The write_file logic, returning the JSON payload (errors as `{ error }` with `isError`). */
export async function writeFileCore(args: WriteFileArgs, config: unknown, opts: ResolvedFileToolOptions): Promise<{ payload: Record<string, unknown>; isError: boolean }> {
  let target: FileTarget | undefined;
  try {
    const a = (args ?? {}) as { path?: unknown; content?: unknown };
    if (a.path === undefined || a.path === null) throw new FileToolError('Missing "path": give the file to write, e.g. "notes/plan.md".');
    if (typeof a.path !== "string") throw new FileToolError(`"path" must be a string (got ${typeof a.path}).`);
    if (a.content === undefined || a.content === null) throw new FileToolError('Missing "content": give the complete text of the file (use "" for an empty file).');
    if (typeof a.content !== "string") throw new FileToolError(`"content" must be a string (got ${typeof a.content}); serialise objects to text first.`);
    target = await resolveFileTarget(a.path, config, opts);
    guardWriteContent(a.content);
    const result = await guardedWrite(target, a.content, opts);
    const payload: Record<string, unknown> = {
      path: target.display,
      bytes_written: result.bytesWritten,
      dirs_created: result.dirsCreated.map((d) => target!.ws.toAgentPath(d)),
      created: result.created,
    };
    if (result.conventions?.eol === "\r\n") payload.line_endings = "CRLF (kept from the existing file)";
    if (result.conventions?.bom) payload.bom = "kept from the existing file";
    return { payload, isError: false };
  } catch (err) {
    return failedOutcome(err, target);
  }
}

/**
 * The `write_file` tool. Stateless: the staleness warning ("changed since you read it") needs
 * the FileManager middleware; without it the write is done without that check.
 */
export function createWriteFileTool(options: FileToolOptions = {}) {
  return writeFileToolFrom(resolveFileToolOptions(options));
}

/** The same tool over options already resolved (createFileTools shares one set between its tools). */
export function writeFileToolFrom(opts: ResolvedFileToolOptions) {
  return fileToolFromCore(opts, {
    name: "write_file",
    description:
      "Create or overwrite a whole text file (atomic; parent directories are created; an existing file keeps its CRLF line endings and BOM). " +
      'Send the full plain content — never read_file\'s "N|" gutters or «redacted…» markers. For a small change to an existing file prefer patch. ' +
      "Returns JSON with bytes_written and dirs_created.",
    schema: writeFileSchema,
    core: writeFileCore,
    probe: { kind: "write", targets: pathArgTargets(opts) },
  });
}
