/**
 * patch: targeted edits. `mode: "replace"` swaps `old_string` for `new_string` in one file with
 * the fuzzy strategies of src/patch (the strategy that matched is always reported);
 * `mode: "patch"` applies a V4A multi-file patch, validated completely as a dry run before any
 * file is touched. Both go through the write_file guards, path locks and atomic writes; the
 * FileManager middleware adds the staleness warning. Output text (diffs, "did you mean"
 * regions) is masked with the secret values of the files involved (redactDerived), errors are
 * answered from the masked view of the file, and lines holding a secret can only be kept or
 * deleted whole (secretEditReason), so a patch cannot be used to read or probe a secret.
 */
import { z } from "zod";
import { withPathLock, withPathLocks } from "../src/environment/pathLock.js";
import { contentAccessReason, looksLikeDedupStub } from "../src/guards/access.js";
import { hasBinaryExtension, sniffBinary, SNIFF_BYTES } from "../src/guards/binary.js";
import { editInputProblem, editResultProblem, LIMITS } from "../src/guards/limits.js";
import { changeExcerpts, containsRedactionMarker, redactDerived, redactSecrets, secretEditReason, SECRET_EDIT_REFUSAL } from "../src/guards/redact.js";
import { parseV4A, planReplace, planV4APatch, unifiedDiff, type PatchFileOp } from "../src/patch/index.js";
import {
  accessPolicyFor,
  assertWritableTarget,
  errorPayload,
  FileToolError,
  openGuardFor,
  recheckAfterRead,
  resolveFileTarget,
  resolveFileToolOptions,
  threadFileOptions,
  type FileTarget,
  type FileToolOptions,
  type ResolvedFileToolOptions,
} from "./fileToolSupport.js";
import { fileToolFromCore } from "./fileToolFromCore.js";
import type { FileToolTarget } from "../src/context/probes.js";
import { workspaceFromConfig } from "../src/context/thread.js";
import { assertWriteAccess, guardWriteContent, writeHoldingLock } from "./writeFile.js";

export const patchSchema = z.object({
  mode: z
    .enum(["replace", "patch"])
    .optional()
    .describe('"replace" (default): change old_string to new_string in one file. "patch": apply a V4A multi-file patch given in "patch".'),
  path: z.string().optional().describe('replace mode: the file to edit, relative to the workspace root.'),
  old_string: z
    .string()
    .optional()
    .describe('replace mode: the exact text to find, copied from the file WITHOUT read_file\'s "N|" gutter; include enough surrounding lines to be unique.'),
  new_string: z.string().optional().describe("replace mode: the replacement text (may be empty to delete old_string)."),
  replace_all: z.boolean().optional().describe("replace mode: change every occurrence instead of requiring a unique match (default false)."),
  patch: z
    .string()
    .optional()
    .describe(
      'patch mode: a V4A patch: "*** Begin Patch", then per file "*** Update File: p" (with "@@ anchor" hunks of " " context, "-" removed, "+" added lines), "*** Add File: p" ("+" lines), "*** Delete File: p" or "*** Move File: a -> b", then "*** End Patch".',
    ),
});

export type PatchArgs = z.infer<typeof patchSchema>;

type Payload = Record<string, unknown>;

/**
 * Reads a text file for patching, refusing what write_file or read_file would refuse — before
 * any of its text can reach a did-you-mean quote, an already-applied answer or a diff. The
 * access policy runs on the real path here and again on the descriptor the read opens.
 */
async function readForPatch(target: FileTarget, opts: ResolvedFileToolOptions): Promise<string | null> {
  const ops = opts.fileOps;
  const policy = accessPolicyFor(target, opts);
  const named = contentAccessReason(target.systemPath, { ...policy, workspaceDir: target.ws.dir });
  if (named) throw new FileToolError(`"${target.display}" ${named}`);
  const s = await ops.stat(target.systemPath);
  if (!s) return null;
  const real = await ops.realpath(target.systemPath).catch(() => target.systemPath);
  const denied = contentAccessReason(real, policy);
  if (denied) throw new FileToolError(`"${target.display}" ${denied}`);
  if (s.type !== "file") throw new FileToolError(`"${target.display}" is not a regular file; patch edits text files only.`);
  const tooLarge = editInputProblem(target.display, s.size);
  if (tooLarge) throw new FileToolError(tooLarge);
  const guard = openGuardFor("read", target, opts);
  if (hasBinaryExtension(target.systemPath) || (s.size > 0 && sniffBinary(await ops.readBytes(target.systemPath, 0, Math.min(SNIFF_BYTES, s.size), guard)))) {
    throw new FileToolError(`"${target.display}" is a binary file; patch edits text files only.`);
  }
  const text = await ops.readText(target.systemPath, guard);
  await recheckAfterRead(target, opts);
  return text;
}

function requireString(args: Record<string, unknown>, field: string, hint: string): string {
  const v = args[field];
  if (v === undefined || v === null) throw new FileToolError(`Missing "${field}": ${hint}`);
  if (typeof v !== "string") throw new FileToolError(`"${field}" must be a string (got ${typeof v}).`);
  return v;
}

async function replaceMode(args: Record<string, unknown>, config: unknown, opts: ResolvedFileToolOptions): Promise<Payload> {
  const rawPath = requireString(args, "path", 'give the file to edit, e.g. "src/app.ts".');
  const oldString = requireString(args, "old_string", "give the exact text to replace, copied from the file.");
  const newString = requireString(args, "new_string", 'give the replacement text ("" deletes old_string).');
  if (args.replace_all !== undefined && typeof args.replace_all !== "boolean") throw new FileToolError('"replace_all" must be true or false.');
  const target = await resolveFileTarget(rawPath, config, opts);
  guardWriteContent(newString, "new_string");
  await assertWritableTarget(target, opts);
  await assertWriteAccess(target, opts);
  return withPathLock(target.systemPath, async () => {
    const before = await readForPatch(target, opts);
    if (before === null) throw new FileToolError(`File not found: "${target.display}". To create a file use write_file.`);
    const replaceAll = args.replace_all === true;
    let plan = planReplace(before, oldString, newString, { replaceAll, maxResultChars: LIMITS.editMaxBytes });
    if (!plan.ok || secretEditReason(before, plan.newContent)) {
      // Answer from the masked view (what read_file showed): the same reply whether or not
      // old_string guessed part of a secret, and quotes that hold no secret.
      const shown = planReplace(redactSecrets(before), oldString, newString, { replaceAll, maxResultChars: LIMITS.editMaxBytes });
      plan = shown.ok ? { ok: false, error: SECRET_EDIT_REFUSAL } : shown;
    }
    if (!plan.ok) {
      let hint = "";
      if (containsRedactionMarker(oldString)) hint = " old_string contains a «redacted…» marker, but the file holds the real value: choose old_string from lines without secrets.";
      else if (/^\s*\d+\|/.test(oldString)) hint = ' old_string starts with a "N|" line-number gutter from read_file: remove it.';
      throw new FileToolError(redactDerived(plan.error, [before]) + hint, {
        ...(plan.candidates?.length
          ? { candidates: plan.candidates.map((c) => ({ ...c, snippet: redactDerived(c.snippet, [before]) })) }
          : {}),
        ...(plan.alreadyApplied ? { already_applied: true } : {}),
      });
    }
    const written = await writeHoldingLock(target, plan.newContent, opts);
    const payload: Payload = {
      path: target.display,
      mode: "replace",
      match_strategy: plan.strategy,
      matches: plan.matches,
      lines: plan.lines,
      bytes_written: written.bytesWritten,
      diff: redactDerived(unifiedDiff(target.display, before, plan.newContent), changeExcerpts(before, plan.newContent)),
    };
    if (plan.strategy !== "exact") {
      payload.hint = `old_string did not match exactly; the "${plan.strategy}" strategy matched at line ${plan.lines.join(", ")}. Check the diff: if that is the wrong region, undo it with another patch.`;
    }
    return payload;
  });
}

interface PatchTargets {
  byAgentPath: Map<string, FileTarget>;
  paths: string[];
}

/** Resolves every path a V4A patch names (through the same guards as write_file). */
async function resolvePatchTargets(patchText: string, config: unknown, opts: ResolvedFileToolOptions): Promise<PatchTargets> {
  const parsed = parseV4A(patchText);
  if (!parsed.ok) throw new FileToolError(`Invalid patch, ${parsed.error}. Nothing was changed.`);
  const byAgentPath = new Map<string, FileTarget>();
  for (const op of parsed.ops) {
    const names = [op.path, op.kind === "move" ? op.newPath : op.kind === "update" ? op.moveTo : undefined];
    for (const name of names) {
      if (name === undefined || byAgentPath.has(name)) continue;
      const target = await resolveFileTarget(name, config, opts);
      await assertWritableTarget(target, opts);
      // Every name a V4A patch touches (update, add, delete, move source and destination) is
      // written: a credential file is refused here, before anything is read or changed.
      await assertWriteAccess(target, opts);
      byAgentPath.set(name, target);
    }
  }
  return { byAgentPath, paths: [...byAgentPath.values()].map((t) => t.systemPath) };
}

/** Undo steps recorded while applying, run in reverse if a later step fails. */
type Undo = () => Promise<unknown>;

async function applyOp(op: PatchFileOp, targets: Map<string, FileTarget>, originals: Map<string, string | null>, opts: ResolvedFileToolOptions, undo: Undo[]): Promise<Payload> {
  const ops = opts.fileOps;
  const src = targets.get(op.path)!;
  const dest = op.newPath !== undefined ? targets.get(op.newPath)! : undefined;
  const restore = (t: FileTarget) => {
    const old = originals.get(t.display) ?? null;
    const guard = openGuardFor("write", t, opts);
    return () => (old === null ? ops.remove(t.systemPath, guard).catch(() => undefined) : ops.writeAtomic(t.systemPath, old, guard));
  };
  const guardOf = (t: FileTarget) => openGuardFor("write", t, opts);
  switch (op.kind) {
    case "add":
    case "update": {
      const to = dest ?? src;
      undo.push(restore(to));
      const written = await writeHoldingLock(to, op.newContent ?? "", opts);
      if (dest) {
        undo.push(restore(src));
        await ops.remove(src.systemPath, guardOf(src));
      }
      return { op: op.kind, path: src.display, ...(dest ? { new_path: dest.display } : {}), ...(op.strategy ? { match_strategy: op.strategy } : {}), bytes_written: written.bytesWritten };
    }
    case "delete":
      undo.push(restore(src));
      await ops.remove(src.systemPath, guardOf(src));
      return { op: "delete", path: src.display };
    case "move":
      undo.push(() => ops.rename(dest!.systemPath, src.systemPath, guardOf(src)));
      await ops.rename(src.systemPath, dest!.systemPath, guardOf(dest!));
      return { op: "move", path: src.display, new_path: dest!.display };
  }
}

async function patchMode(args: Record<string, unknown>, config: unknown, opts: ResolvedFileToolOptions): Promise<Payload> {
  const patchText = requireString(args, "patch", 'give a V4A patch starting with "*** Begin Patch".');
  const targets = await resolvePatchTargets(patchText, config, opts);
  return withPathLocks(targets.paths, async () => {
    const originals = new Map<string, string | null>();
    const plan = await planV4APatch(patchText, {
      read: async (agentPath) => {
        const t = targets.byAgentPath.get(agentPath) ?? (await resolveFileTarget(agentPath, config, opts));
        const text = await readForPatch(t, opts);
        originals.set(t.display, text);
        return text;
      },
    });
    const sources = () => [...originals.values()].filter((t): t is string => t !== null);
    const touchesSecret = plan.ok && plan.ops.some((op) => op.newContent !== undefined && secretEditReason(originals.get(targets.byAgentPath.get(op.path)!.display) ?? "", op.newContent));
    if (!plan.ok || touchesSecret) {
      // Answer from the masked view, as in replace mode (no oracle on secret text, no secret in quotes).
      const shown = await planV4APatch(patchText, {
        read: async (agentPath) => {
          const t = targets.byAgentPath.get(agentPath) ?? (await resolveFileTarget(agentPath, config, opts));
          const text = await readForPatch(t, opts);
          return text === null ? null : redactSecrets(text);
        },
      });
      throw new FileToolError(redactDerived(shown.ok ? `${SECRET_EDIT_REFUSAL} Nothing was changed.` : shown.error, sources()));
    }
    for (const op of plan.ops) {
      if (op.newContent === undefined) continue;
      const tooLarge = editResultProblem(op.newPath ?? op.path, op.newContent.length);
      if (tooLarge) throw new FileToolError(tooLarge);
      const before = originals.get(targets.byAgentPath.get(op.path)!.display) ?? "";
      if (looksLikeDedupStub(op.newContent)) {
        throw new FileToolError(`The patch writes read_file's "unchanged" placeholder into "${op.path}" instead of real text. Nothing was changed.`);
      }
      if (containsRedactionMarker(op.newContent) && !containsRedactionMarker(before)) {
        throw new FileToolError(`The patch adds a «redacted…» marker to "${op.path}": that would replace the real secret with the marker. Leave secret lines out of the patch. Nothing was changed.`);
      }
    }
    const undo: Undo[] = [];
    const applied: Payload[] = [];
    try {
      for (const op of plan.ops) applied.push(await applyOp(op, targets.byAgentPath, originals, opts, undo));
    } catch (err) {
      for (const step of undo.reverse()) await step().catch(() => undefined);
      const reason = errorPayload(err, targets.byAgentPath.values().next().value?.ws).error;
      throw new FileToolError(`Applying the patch failed and the files already changed were restored: ${String(reason)}`);
    }
    const diffs = plan.ops
      .filter((op) => op.newContent !== undefined || op.kind === "delete")
      .map((op) => {
        const src = targets.byAgentPath.get(op.path)!;
        const shownPath = op.newPath !== undefined ? targets.byAgentPath.get(op.newPath)!.display : src.display;
        return unifiedDiff(shownPath, originals.get(src.display) ?? "", op.newContent ?? "");
      });
    const excerpts = plan.ops.flatMap((op) => {
      const old = originals.get(targets.byAgentPath.get(op.path)!.display) ?? "";
      return op.kind === "delete" ? [old] : changeExcerpts(old, op.newContent ?? "");
    });
    return { mode: "patch", applied, diff: redactDerived(diffs.join(""), excerpts) };
  });
}

/** The patch logic, returning the JSON payload (errors as `{ error }` with `isError`). */
export async function patchCore(args: PatchArgs, config: unknown, opts: ResolvedFileToolOptions): Promise<{ payload: Payload; isError: boolean }> {
  const a = (args ?? {}) as Record<string, unknown>;
  try {
    const mode = a.mode ?? "replace";
    if (mode !== "replace" && mode !== "patch") throw new FileToolError('"mode" must be "replace" or "patch".');
    return { payload: mode === "patch" ? await patchMode(a, config, opts) : await replaceMode(a, config, opts), isError: false };
  } catch (err) {
    const display = typeof a.path === "string" && a.mode !== "patch" ? a.path : undefined;
    return { payload: errorPayload(err, workspaceFromConfig(config, opts.rootDir), display), isError: true };
  }
}

async function patchProbeTargets(args: unknown, config: unknown, opts: ResolvedFileToolOptions): Promise<FileToolTarget[]> {
  const a = (args ?? {}) as Record<string, unknown>;
  try {
    const names: string[] = [];
    if (a.mode === "patch" && typeof a.patch === "string") {
      const parsed = parseV4A(a.patch);
      if (parsed.ok) for (const op of parsed.ops) names.push(op.path, ...(op.kind === "move" ? [op.newPath] : op.kind === "update" && op.moveTo ? [op.moveTo] : []));
    } else if (typeof a.path === "string") {
      names.push(a.path);
    }
    const out: FileToolTarget[] = [];
    for (const name of new Set(names)) {
      const t = await resolveFileTarget(name, config, opts).catch(() => undefined);
      if (!t) continue;
      const s = await opts.fileOps.stat(t.systemPath).catch(() => null);
      out.push({ key: t.systemPath, display: t.display, mtimeMs: s?.type === "file" ? s.mtimeMs : null });
    }
    return out;
  } catch {
    return [];
  }
}

/**
 * The `patch` tool. Stateless: the staleness warning needs the FileManager middleware; without
 * it the edit is done without that check.
 */
export function createPatchTool(options: FileToolOptions = {}) {
  return patchToolFrom(resolveFileToolOptions(options));
}

/** The same tool over options already resolved (createFileTools shares one set between its tools). */
export function patchToolFrom(opts: ResolvedFileToolOptions) {
  return fileToolFromCore(opts, {
    name: "patch",
    description:
      'Edit files. mode "replace" (default): path + old_string + new_string (+ replace_all) — old_string is copied from the file without "N|" gutters; ' +
      "small whitespace/indentation differences are tolerated and the answer names the match_strategy used. " +
      'mode "patch": a V4A multi-file patch (Update/Add/Delete/Move File), checked completely before anything is written — all or nothing. ' +
      "Returns JSON with a unified diff. Several matches → the locations; no match → the closest regions.",
    schema: patchSchema,
    core: patchCore,
    probe: {
      kind: "write",
      targets: async (args, config) => {
        const threadOpts = await threadFileOptions(opts, config).catch(() => undefined);
        return threadOpts ? patchProbeTargets(args, config, threadOpts) : [];
      },
    },
  });
}
