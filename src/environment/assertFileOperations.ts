/** What the tree, the trackers and the workspace call on a `FileOperations`. */
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
