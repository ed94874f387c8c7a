import { isLocalFileOperations } from "../fileops/locality.js";
import type { FileOperations } from "../fileops/types.js";

/**
 * True when `ops` reads this machine's disk (no `ops`, or a `kind: "local"` backend): the tree
 * and the trackers then use native `fs` calls and native watchers, which are much faster than
 * going through the interface. Anything else — every backend for which `needsPolling(ops)`
 * holds (SSH, docker, bash) and any custom one — is reached only through `ops`, and change
 * tracking polls it.
 */
export function isLocalDisk(ops: Pick<FileOperations, "kind"> | undefined): boolean {
  return isLocalFileOperations(ops);
}

/** What the tree, the trackers and the workspace call on a {@link FileOperations}. */
export const LISTING_METHODS = ["stat", "realpath", "readdir", "readText", "mkdirp"] as const;

/**
 * Throws a TypeError naming the missing methods when `ops` is given but lacks any of `methods`
 * (checked when options are read, not at the first call).
 */
export function assertFileOperations(ops: unknown, methods: readonly string[] = LISTING_METHODS, option = "fileOps"): void {
  if (ops === undefined) return;
  const record = typeof ops === "object" && ops !== null ? (ops as Record<string, unknown>) : undefined;
  const missing = methods.filter((m) => typeof record?.[m] !== "function");
  if (!record || missing.length > 0) {
    throw new TypeError(
      `${option} must implement FileOperations (missing: ${missing.join(", ")}), e.g. new ShellFileOperations(new SshEnvironment({ … }))`,
    );
  }
}
