/**
 * Drops engine results from files the access policy refuses on facts a name does not show:
 * regular files with more than one hard link (another name of the same file may be a
 * credential file; see src/guards/access.ts). Name-based refusals happen earlier, through
 * `SearchRequest.exclude`, before anything is counted.
 */
import { lstat } from "node:fs/promises";
import path from "node:path";
import pLimit from "p-limit";
import { readAccessReason, type AccessPolicy } from "../guards/access.js";
import type { SearchOutcome } from "./types.js";

export async function dropHardLinkedResults(outcome: SearchOutcome, policy: AccessPolicy): Promise<void> {
  if (policy.allowHardLinks) return;
  const files = new Set<string>([...outcome.lines.map((l) => l.path), ...outcome.files, ...outcome.counts.map((c) => c.path)]);
  const limit = pLimit(32);
  const refused = new Set<string>();
  await Promise.all(
    [...files].map((f) =>
      limit(async () => {
        const s = await lstat(f).catch(() => undefined);
        if (!s?.isFile() || s.nlink <= 1) return;
        // Names were judged already; here only what the descriptor-level facts add.
        if (readAccessReason(f, { ...policy, confine: false, workspaceDir: path.dirname(f), credentialPatterns: [] }, { type: "file", nlink: s.nlink, size: s.size })) refused.add(f);
      }),
    ),
  );
  if (refused.size === 0) return;
  outcome.lines = outcome.lines.filter((l) => !refused.has(l.path));
  outcome.files = outcome.files.filter((f) => !refused.has(f));
  outcome.counts = outcome.counts.filter((c) => !refused.has(c.path));
}
