/**
 * The probe registry: how the stateful guards (read dedup, staleness) learn which files a file
 * tool call touches, without the tools keeping any state themselves. Tools register a probe per
 * instance; the middleware and other adapters look it up.
 */

/** What a file tool call touches, as the stateful guards see it. */
export interface FileToolTarget {
  /** Absolute system path (stable across the model's spellings of it). */
  key: string;
  /** The path as the model sees it. */
  display: string;
  /** Current mtime, `null` when the file does not exist. */
  mtimeMs: number | null;
}

/** Lets the stateful guards see a file tool's targets; registered per tool instance. */
export interface FileToolProbe {
  /** `read`: read_file (dedup + read timestamps); `write`: write_file/patch (staleness). */
  kind: "read" | "write";
  /** For reads, the window in normalised form (`offset:limit`), for the dedup key. */
  window?(args: unknown): string;
  targets(args: unknown, config: unknown): Promise<FileToolTarget[]>;
}

const probes = new WeakMap<object, FileToolProbe>();

/** Registers `probe` for `tool` (a WeakMap, not tool metadata: metadata is serialised by tracers). */
export function registerFileToolProbe<T extends object>(tool: T, probe: FileToolProbe): T {
  probes.set(tool, probe);
  return tool;
}

/** The probe registered for `tool`, if it is a file tool. */
export function fileToolProbe(tool: unknown): FileToolProbe | undefined {
  return tool && typeof tool === "object" ? probes.get(tool) : undefined;
}
