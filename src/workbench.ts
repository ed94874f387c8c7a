/**
 * createWorkbench: the common case in one call — the FileManager middleware plus the package's
 * tools, all on the same workspace root, with one `close()`.
 *
 * ```ts
 * const wb = createWorkbench({ rootDir: "./agent_files" });
 * const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware });
 * // … on shutdown: await wb.close();
 * ```
 * The parts stay usable alone (`createFileManagerMiddleware`, `createFileTools`,
 * `createBasicTools`, `createWebTools`).
 */
import type { StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import { createFileManagerMiddleware, fileManagerOptionsSchema, type FileManagerMiddleware, type FileManagerOptions } from "../middleware/fileManager.js";
import { basicToolsOptionsSchema, createBasicTools, type BasicToolsOptions } from "../tools/basicTools.js";
import { createFileTools, fileToolsOptionsSchema, type FileToolsOptions } from "../tools/fileTools.js";
import { FileToolCaches } from "../tools/lineCounts.js";
import { createWebTools, webToolsOptionsSchema, type WebToolsOptions } from "../tools/webTools.js";
import type { EnvironmentOption } from "./environment/environment.js";
import { HtmlConversionPool } from "./web/htmlWorkerPool.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption, ThreadEnvironments } from "./environment/threadEnvironment.js";
import { listArtifacts, type ArtifactList } from "./artifacts/artifacts.js";
import { isTransferRefusal, putFile, TransferError, type TransferSettings } from "./artifacts/transfer.js";
import type { FileOperations } from "./environment/fileOperations.js";
import type { ChangeSet, RestoreResult, SnapshotInfo } from "./snapshots/index.js";
import { resolveRootDir, Workspace } from "./workspace.js";
import { checkedAs, keysOf, parseOptions } from "./options.js";
import { withSharedEnvironments } from "./environment/sharedEnvironments.js";

/** What {@link createWorkbench} returns. */
export interface Workbench {
  /** `[fileManager]`: spread it into `createAgent({ middleware })` / `createDeepAgent({ middleware })`. */
  readonly middleware: [FileManagerMiddleware];
  /** The enabled tools, for `createAgent({ tools })`. */
  readonly tools: StructuredTool[];
  /** The FileManager middleware itself (also `middleware[0]`). */
  readonly fileManager: FileManagerMiddleware;
  /** The resolved absolute workspace root. */
  readonly rootDir: string;
  /** The workspace of a thread (no I/O until used). */
  workspace(threadId?: string): Workspace;
  /** A thread's workspace snapshots, newest first (see README "Time travel"). */
  snapshots(threadId: string): Promise<SnapshotInfo[]>;
  /**
   * Brings a thread's files to snapshot `id` now (the current files are snapshotted first). The
   * thread's next run keeps them instead of restoring its checkpoint's snapshot. Only what differs
   * is rewritten; `kept` lists paths an entry the snapshots do not record (a credential file, say)
   * holds. With `paths` (workspace-relative files or directories) only those come back as the
   * snapshot has them, and everything else stays, hand edits included: undo one file the agent broke.
   */
  restore(threadId: string, id: string, options?: { paths?: string[] | undefined }): Promise<RestoreResult>;
  /**
   * What changed between two snapshots (`to` defaults to the files as they are now): a file list
   * with sizes and a unified diff of the text files, of every path or only those under `paths`.
   * A checkpoint's snapshot: `snapshotIdOf(state.values)`.
   */
  changes(threadId: string, range: { from: string; to?: string | undefined; paths?: string[] | undefined }): Promise<ChangeSet>;
  /**
   * Files in: `uploads(threadId).put("data/report.csv", bytes)` writes into the thread's workspace
   * atomically through its file access (confined; credential files, directories and files over
   * `maxBytes`, default 50 MB, refused with a {@link TransferError}). The next model call's tree
   * shows the file.
   */
  uploads(threadId?: string): WorkbenchUploads;
  /**
   * Files out: the thread's files created or changed since `since` (default: the start of its
   * latest run in this process, the FileManager's `startWorkTime`; pass the run's output state,
   * a Date or a timestamp), with sizes and `archive("zip" | "tar")`. Credential files never appear.
   */
  artifacts(threadId?: string, options?: WorkbenchArtifactOptions): Promise<ArtifactList>;
  /** Stops file watchers and the HTML conversion workers this workbench started. Idempotent. */
  close(): Promise<void>;
}

/** What {@link Workbench.uploads} returns. */
export interface WorkbenchUploads {
  /** Writes `bytes` (or UTF-8 text) to `name` (workspace-relative); resolves to the path written and its size. */
  put(name: string, bytes: Uint8Array | string, options?: Pick<TransferSettings, "maxBytes">): Promise<{ path: string; bytes: number }>;
}

/** Options of {@link Workbench.artifacts}. */
export interface WorkbenchArtifactOptions {
  /**
   * Cut-off: a Date, a millisecond timestamp, or an agent's state/output holding `startWorkTime`.
   * Default: the start of the thread's latest run seen by this workbench, else every file.
   */
  since?: Date | number | { startWorkTime?: number | undefined };
  /** Largest file packed into an archive, in bytes (default 50 MB; larger ones are left out). */
  maxBytes?: number;
}

// Each part's options: their keys are checked here (so a typo throws before any part is built,
// naming the part), their values — and deeper levels — by the part's own factory. Typed without
// the keys the workbench sets itself (still accepted, and overridden, as before).
const partOptions = <T>(schema: z.ZodObject) => z.union([z.literal(false), checkedAs<T>(keysOf(schema))]).optional();
export const workbenchOptionsSchema = z
  .object({
    /**
     * Root holding one directory per thread. Default: `WORKBENCH_ROOT`, else `./agent_files`,
     * resolved once here and passed to every part (so they can never disagree).
     */
    rootDir: z.string().trim().min(1, "rootDir must be a non-empty path").optional(),
    /**
     * File operations for every part that touches the workspace (the FileManager's tree and change
     * tracking, and the file tools), e.g. `new ShellFileOperations(new SshEnvironment({ … }))` for
     * workspaces on another host. Default: the environment's file access (native local fs when no
     * `environment` is given). A part's own `fileOps` wins. With `environment` as well, `fileOps`
     * wins for file access and the environment still runs `run_command` and search.
     */
    fileOps: z
      .custom<FileOperations>((v) => typeof v === "object" && v !== null && typeof (v as FileOperations).readdir === "function", "fileOps must implement FileOperations")
      .optional(),
    /**
     * Where each thread's files live and its commands run, for every part (tree and change
     * tracking, file tools, search_files, run_command): an Environment (`new SshEnvironment({…})`,
     * `new LocalEnvironment()`, …) or a provider `(threadId) => Environment | Promise<Environment>`
     * called with the thread id on every use (cache inside it). Default: this machine.
     */
    environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
    /** Run `run_command` (the shell tool). Default: `WORKBENCH_ENABLE_SHELL=true`, else off. */
    enableShell: z.boolean().optional(),
    /** FileManager middleware options (tree budget, path rewriting, `pathArgs`, tracker…). */
    fileManager: checkedAs<Omit<FileManagerOptions, "rootDir">>(keysOf(fileManagerOptionsSchema)).optional(),
    /** File tools (`read_file`, `write_file`, `patch`, `search_files`) options, or `false` to leave them out. */
    fileTools: partOptions<Omit<FileToolsOptions, "rootDir">>(fileToolsOptionsSchema),
    /** Basic tools (`get_current_time`, `run_command`) options, or `false` to leave them out. */
    basicTools: partOptions<Omit<BasicToolsOptions, "rootDir" | "enableShell">>(basicToolsOptionsSchema),
    /**
     * Web tools (`web_search`, `web_extract`) options, or `false` to leave them out. Default on:
     * without a search backend configured, `web_search` is left out (one warning at build time)
     * and `web_extract` uses the keyless, SSRF-guarded fetch backend. A backend named explicitly
     * without its key throws here.
     */
    webTools: partOptions<WebToolsOptions>(webToolsOptionsSchema),
  })
  .strict();

/** Options of {@link createWorkbench} (the schema's input). Every part also takes its own options object. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface WorkbenchOptions extends z.input<typeof workbenchOptionsSchema> {}

/** Builds the FileManager middleware and the package's tools on one workspace root. */
export function createWorkbench(options: WorkbenchOptions = {}): Workbench {
  parseOptions(workbenchOptionsSchema, options ?? {}, "Invalid createWorkbench options");
  const opts = options ?? {};
  const rootDir = resolveRootDir(opts.rootDir);
  // One view of where each thread's files are and its commands run, for every part (a
  // ShellFileOperations given alone names its environment: commands go there too).
  const environments = new ThreadEnvironments({ environment: opts.environment, fileOps: opts.fileOps });
  // A part naming its own environment or fileOps builds its own view, over the workbench's for the other.
  const shared = { ...(opts.fileOps ? { fileOps: opts.fileOps } : {}), ...(environments.environment ? { environment: environments.environment } : {}) };
  const partOf = <P extends object>(part: P | undefined, inherit: object = shared): readonly [P | undefined, ThreadEnvironments | undefined] => {
    const access = part as { environment?: unknown; fileOps?: unknown } | undefined;
    const own = access !== undefined && (access.environment !== undefined || access.fileOps !== undefined);
    return own ? [{ ...inherit, ...part } as P, undefined] : [part, environments];
  };

  const [fileManagerOptions, fileManagerEnvironments] = partOf(opts.fileManager);
  const fileManager = createFileManagerMiddleware(withSharedEnvironments({ ...fileManagerOptions, rootDir }, fileManagerEnvironments));
  const tools: StructuredTool[] = [];
  // read_file's line counts and indexes belong to this workbench and are released by close().
  const fileCaches = opts.fileTools !== false && !opts.fileTools?.caches ? new FileToolCaches() : undefined;
  if (opts.fileTools !== false) {
    const [fileToolOptions, fileToolEnvironments] = partOf(opts.fileTools);
    tools.push(...(createFileTools(withSharedEnvironments({ ...fileToolOptions, ...(fileCaches ? { caches: fileCaches } : {}), rootDir }, fileToolEnvironments)) as StructuredTool[]));
  }
  if (opts.basicTools !== false) {
    const [basicOptions, basicEnvironments] = partOf(opts.basicTools, {});
    const enableShell = opts.enableShell === undefined ? {} : { enableShell: opts.enableShell };
    tools.push(...createBasicTools(withSharedEnvironments({ ...basicOptions, rootDir, ...enableShell }, basicEnvironments)));
  }
  // The keyless fetch backend's HTML worker pool belongs to this workbench and stops with close().
  const webTools = opts.webTools === false ? undefined : (opts.webTools ?? {});
  const htmlPool = webTools && !webTools.backends?.fetch?.htmlPool ? new HtmlConversionPool() : undefined;
  if (webTools) {
    const fetch = { ...webTools.backends?.fetch, ...(htmlPool ? { htmlPool } : {}) };
    tools.push(...createWebTools({ ...webTools, backends: { ...webTools.backends, fetch } }));
  }
  const access = async (threadId: string | undefined) => {
    const ws = fileManager.hooks.workspaceFor(threadId);
    return { ws, ops: await environments.fileOpsFor(ws.threadId) };
  };
  return {
    middleware: [fileManager],
    tools,
    fileManager,
    rootDir,
    workspace: (threadId?: string) => Workspace.forThread(rootDir, threadId),
    snapshots: (threadId) => fileManager.hooks.withThread(threadId, (t) => fileManager.hooks.timeTravel.snapshots(t)),
    restore: (threadId, id, options) => fileManager.hooks.withThread(threadId, (t) => fileManager.hooks.timeTravel.restore(t, id, options)),
    changes: (threadId, range) => fileManager.hooks.withThread(threadId, (t) => fileManager.hooks.timeTravel.changes(t, range)),
    uploads: (threadId?: string) => ({
      put: async (name, bytes, options) => {
        const { ws, ops } = await access(threadId);
        const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
        const got = await putFile(ws, ops, name, data, { maxBytes: options?.maxBytes });
        if (isTransferRefusal(got)) throw new TransferError(got.code, got.message);
        return got;
      },
    }),
    artifacts: async (threadId?: string, options: WorkbenchArtifactOptions = {}) => {
      const { ws, ops } = await access(threadId);
      const given = options.since;
      const since = typeof given === "object" && !(given instanceof Date) ? given?.startWorkTime : given;
      return listArtifacts(ws, ops, { since: since ?? fileManager.hooks.lastRunStart(threadId) ?? 0, maxBytes: options.maxBytes });
    },
    close: async () => {
      await Promise.all([fileManager.close(), htmlPool?.close(), fileCaches?.close()]);
    },
  };
}
