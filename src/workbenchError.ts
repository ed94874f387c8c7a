/**
 * The base of every error this package throws, so an application can tell them from others'
 * (`err instanceof WorkbenchError`) and branch on a stable `code` rather than on message text.
 * Each subclass keeps its own name and `instanceof` and fixes its code, e.g. `OpenRefusedError`
 * is `"EREFUSED"`, `SafeFetchError` carries one of its fetch codes. The model never sees these:
 * tools turn them into error answers (tools/toolResult.ts).
 *
 * @example
 * ```ts
 * try {
 *   await restoreSnapshot();
 * } catch (err) {
 *   if (err instanceof WorkbenchError && err.code === "SNAPSHOT_NOT_FOUND") pickAnotherSnapshot();
 *   else throw err;
 * }
 * ```
 */
export abstract class WorkbenchError extends Error {
  /** A stable, upper-case identifier of what went wrong. */
  abstract readonly code: string;
}
