/**
 * What read_file, write_file and patch share around their cores: the core runs with the calling
 * thread's options, a failure inside it answers as a guiding error payload for the file it was
 * working on, and a one-path tool probes the file its `path` names.
 */
import type { z } from "zod";
import type { FileToolProbe, FileToolTarget } from "../src/context/probes.js";
import {
  defineFileTool,
  errorPayload,
  probeTarget,
  threadFileOptions,
  type FileTarget,
  type FileToolOutcome,
  type ResolvedFileToolOptions,
} from "./fileToolSupport.js";

/** {@link defineFileTool} whose `core` gets, per call, the calling thread's options (its environment's file access). */
export function fileToolFromCore<S extends z.ZodObject>(
  opts: ResolvedFileToolOptions,
  spec: {
    name: string;
    description: string;
    schema: S;
    core: (args: z.infer<S>, config: unknown, threadOpts: ResolvedFileToolOptions) => Promise<FileToolOutcome>;
    probe: FileToolProbe;
  },
) {
  const { core, ...rest } = spec;
  return defineFileTool({ ...rest, run: async (args, config) => core(args, config, await threadFileOptions(opts, config)) });
}

/** A core's answer to anything thrown while it worked on `target` (still unresolved: `undefined`). */
export function failedOutcome(err: unknown, target: FileTarget | undefined): { payload: Record<string, unknown>; isError: true } {
  return { payload: errorPayload(err, target?.ws, target?.display), isError: true };
}

/** Probe targets of a tool that works on the one file its `path` argument names. */
export function pathArgTargets(opts: ResolvedFileToolOptions): (args: unknown, config: unknown) => Promise<FileToolTarget[]> {
  return (args, config) => probeTarget((args as { path?: unknown })?.path, config, opts);
}
