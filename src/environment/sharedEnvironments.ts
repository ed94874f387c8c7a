/**
 * How `createWorkbench` hands its one {@link ThreadEnvironments} to the parts it builds without
 * widening their public signatures: the environments ride on the options object the workbench
 * made for that part (a WeakMap entry, gone with the object). A part called directly finds none
 * and makes its own from its `environment` / `fileOps` options.
 */
import type { ThreadEnvironments } from "./threadEnvironment.js";

const attached = new WeakMap<object, ThreadEnvironments>();

/** `options`, with `environments` attached for the part that receives it. */
export function withSharedEnvironments<T extends object>(options: T, environments: ThreadEnvironments | undefined): T {
  if (environments) attached.set(options, environments);
  return options;
}

/** The environments attached to `options` by {@link withSharedEnvironments}, if any. */
export function sharedEnvironmentsOf(options: unknown): ThreadEnvironments | undefined {
  return typeof options === "object" && options !== null ? attached.get(options) : undefined;
}
