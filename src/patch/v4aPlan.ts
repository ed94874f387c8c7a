import path from "node:path";
import { fromLf, toLf } from "./lineEndings.js";
import { applyEdits, closestRegions, describeSpans, locate, replacementFor } from "./locate.js";
import { LineIndex } from "./text.js";
import type { PatchFileOp, PatchReader, V4APlan } from "./types.js";
import { parseV4A, type V4AHunk, type V4AOperation } from "./v4aParse.js";

/**
 * Validates a whole V4A patch as a dry run and returns the file operations to perform, or one
 * error listing every problem. All or nothing: `ok` only when every file is readable, every hunk
 * located, no add overwrites a file, no delete/move/update targets a missing one, and no two
 * operations touch the same path. Pure apart from `io.read`; the caller writes.
 */
export async function planV4APatch(patchText: string, io: PatchReader): Promise<V4APlan> {
  const parsed = parseV4A(patchText);
  if (!parsed.ok) return { ok: false, error: `Invalid patch, ${parsed.error}. Nothing was changed.` };
  const conflict = findConflict(parsed.ops);
  if (conflict) return { ok: false, error: `${conflict} Nothing was changed.` };

  const reads = new Map<string, Promise<{ text: string | null; error?: string }>>();
  const read = (p: string) => {
    let r = reads.get(p);
    if (!r) {
      r = io.read(p).then(
        (text) => ({ text: typeof text === "string" ? text : null }),
        (err: unknown) => ({ text: null, error: err instanceof Error ? err.message : String(err) }),
      );
      reads.set(p, r);
    }
    return r;
  };

  const results = await Promise.all(parsed.ops.map((op) => planOne(op, read)));
  const errors = results.filter((r): r is { error: string } => "error" in r).map((r) => r.error);
  if (errors.length > 0) {
    return { ok: false, error: `The patch was not applied (nothing was changed):\n- ${errors.join("\n- ")}` };
  }
  return { ok: true, ops: results as PatchFileOp[] };
}

type Read = (p: string) => Promise<{ text: string | null; error?: string }>;

async function planOne(op: V4AOperation, read: Read): Promise<PatchFileOp | { error: string }> {
  const where = `patch line ${op.line}`;
  const src = await read(op.path);
  if (src.error) return { error: `${op.path} (${where}): cannot read it: ${src.error}` };
  switch (op.kind) {
    case "add":
      if (src.text !== null) return { error: `Add File ${op.path} (${where}): the file already exists; use "*** Update File:" to change it` };
      return { kind: "add", path: op.path, newContent: op.lines.length > 0 ? `${op.lines.join("\n")}\n` : "" };
    case "delete":
      if (src.text === null) return { error: `Delete File ${op.path} (${where}): the file does not exist` };
      return { kind: "delete", path: op.path };
    case "move": {
      if (src.text === null) return { error: `Move File ${op.path} (${where}): the file does not exist` };
      const destError = await missingDestination(op.newPath, read, "Move File", where);
      return destError ?? { kind: "move", path: op.path, newPath: op.newPath };
    }
    case "update": {
      if (src.text === null) return { error: `Update File ${op.path} (${where}): the file does not exist; use "*** Add File:" to create it` };
      if (op.moveTo !== undefined) {
        const destError = await missingDestination(op.moveTo, read, "Move to", where);
        if (destError) return destError;
      }
      const applied = applyHunks(src.text, op.hunks, op.path);
      if ("error" in applied) return applied;
      return {
        kind: "update",
        path: op.path,
        ...(op.moveTo !== undefined ? { newPath: op.moveTo } : {}),
        newContent: applied.newContent,
        strategy: [...new Set(applied.strategies)].join(", "),
      };
    }
  }
}

async function missingDestination(dest: string, read: Read, label: string, where: string): Promise<{ error: string } | undefined> {
  const d = await read(dest);
  if (d.error) return { error: `${dest} (${where}): cannot check the destination: ${d.error}` };
  if (d.text !== null) return { error: `${label} ${dest} (${where}): the destination already exists` };
  return undefined;
}

/**
 * Locates every hunk (in order, each after the previous one) with the fuzzy strategies, then
 * applies them together. An ambiguous hunk without an `@@` anchor is an error, not a guess.
 */
function applyHunks(
  content: string,
  hunks: V4AHunk[],
  filePath: string,
): { newContent: string; strategies: string[] } | { error: string } {
  const { text, conventions } = toLf(content);
  const index = new LineIndex(text);
  const edits: Array<{ start: number; end: number; text: string }> = [];
  const strategies: string[] = [];
  let cursor = 0;
  for (const [n, hunk] of hunks.entries()) {
    const label = `Update File ${filePath}, hunk ${n + 1} (patch line ${hunk.line})`;
    let from = cursor;
    let anchorLine: number | undefined;
    if (hunk.anchor !== "") {
      anchorLine = findAnchor(index, hunk.anchor, from);
      if (anchorLine === undefined) {
        return { error: `${label}: the "@@ ${hunk.anchor}" line was not found${n > 0 ? " after the previous hunk" : ""}` };
      }
      from = index.starts[anchorLine]!;
    }
    const oldText = hunk.lines.filter((l) => l.op !== "+").map((l) => l.text).join("\n");
    const newText = hunk.lines.filter((l) => l.op !== "-").map((l) => l.text).join("\n");
    if (hunk.lines.every((l) => l.op === "+")) {
      const at = anchorLine !== undefined ? index.lineEnd(anchorLine) : text.length;
      const insert =
        anchorLine !== undefined ? `\n${newText}` : text === "" || text.endsWith("\n") ? `${newText}\n` : `\n${newText}`;
      edits.push({ start: at, end: at, text: insert });
      strategies.push("insert");
      cursor = at;
      continue;
    }
    const atEnd = (end: number) => text.slice(end).trim() === "";
    const found = locate(index, oldText, (s) => s.start >= from && (!hunk.endOfFile || atEnd(s.end)));
    if (!found) {
      if (newText.trim() !== "" && !oldText.includes(newText.trim()) && locate(index, newText, (s) => s.start >= from)?.strategy.requiresUnique === false) {
        return { error: `${label}: its "-" lines are gone and its "+" lines are already there: this hunk looks already applied. Read the file before patching again.` };
      }
      const near = closestRegions(index, oldText, 3)
        .map((c) => `lines ${c.line}-${c.endLine} (similarity ${c.similarity}):\n${c.snippet}`)
        .join("\n---\n");
      return { error: `${label}: its context and "-" lines were not found${n > 0 ? " after the previous hunk" : ""}.${near ? ` Did you mean:\n${near}` : ""}` };
    }
    if (found.spans.length > 1 && (anchorLine === undefined || found.strategy.requiresUnique)) {
      const lines = describeSpans(index, found.spans).map((c) => c.line).join(", ");
      return {
        error: `${label}: matches ${found.spans.length} places (strategy "${found.strategy.name}") at lines ${lines}; add more context lines or an "@@ <line above the change>" anchor`,
      };
    }
    const span = found.spans[0]!;
    edits.push({ start: span.start, end: span.end, text: replacementFor(index, found.strategy, oldText, span, newText) });
    strategies.push(found.strategy.name);
    cursor = span.end;
  }
  return { newContent: fromLf(applyEdits(text, edits), conventions), strategies };
}

/** The first line at or after `from` equal to the anchor (trimmed), else one containing it. */
function findAnchor(index: LineIndex, anchor: string, from: number): number | undefined {
  const wanted = anchor.trim();
  const start = index.lineAt(from);
  const t = index.trimmed;
  for (let i = start; i < t.length; i++) if (t[i] === wanted) return i;
  for (let i = start; i < t.length; i++) if (t[i]!.includes(wanted)) return i;
  return undefined;
}

/** Two operations on one path cannot both be honoured in an all-or-nothing plan. */
function findConflict(ops: V4AOperation[]): string | undefined {
  const seen = new Map<string, number>();
  for (const op of ops) {
    const touched = [op.path];
    if (op.kind === "move") touched.push(op.newPath);
    if (op.kind === "update" && op.moveTo !== undefined) touched.push(op.moveTo);
    for (const p of touched) {
      const key = path.posix.normalize(p.replace(/\\/g, "/")).replace(/^\.\//, "");
      const earlier = seen.get(key);
      if (earlier !== undefined && earlier !== op.line) {
        return `Conflicting operations: ${p} is touched at patch lines ${earlier} and ${op.line}; combine them into one operation.`;
      }
      if (earlier === op.line) return `${op.path} (patch line ${op.line}) is moved onto itself.`;
      seen.set(key, op.line);
    }
  }
  return undefined;
}
