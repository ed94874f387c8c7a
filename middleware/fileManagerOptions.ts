/**
 * The FileManager's options: their type and the one strict schema that checks them (an unknown
 * key, at any level, throws naming the accepted ones).
 */
import { z } from "zod";
import { TRACKER_KINDS } from "../src/changes/index.js";
import { assertFileOperations, LISTING_METHODS } from "../src/environment/assertFileOperations.js";
import type { EnvironmentOption } from "../src/environment/environment.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption } from "../src/environment/threadEnvironment.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { timeTravelOptionsSchema } from "../src/snapshots/index.js";
import { treeBudgetShape } from "../src/tree.js";
import { evictLargeResultsOptionsSchema } from "./evictLargeResults.js";
import { fileGuardsOptionsSchema } from "./fileGuards.js";
import { imagesInToolResultsSchema } from "./hoistImages.js";
import type { ToolCallStep } from "./toolCallSteps.js";

/** Tools of this package that never change the workspace. */
export const DEFAULT_READ_ONLY_TOOLS: readonly string[] = ["get_current_time", "read_file", "search_files", "web_search", "web_extract"];

/** Where a FileManager failure happened (passed to `onError`). */
export type FileManagerErrorContext = { hook: "beforeAgent" | "beforeModel" | "wrapModelCall" | "wrapToolCall"; threadId: string };

const isFunction = (v: unknown) => typeof v === "function";

/** The checks on {@link FileManagerOptions}: strict at every level (an unknown key throws, naming the accepted ones). */
export const fileManagerOptionsSchema = z.strictObject({
  /**
   * Root holding one directory per thread (`rootDir/<thread_id>`). Default: `WORKBENCH_ROOT`,
   * else `./agent_files`, resolved once when the middleware is created. Give the tools the same.
   */
  rootDir: z.string().trim().min(1, "rootDir must be a non-empty path").optional(),
  /**
   * Where the workspace files live (default: this machine). Give the same backend to
   * `createFileTools({ fileOps })`: with e.g. `new ShellFileOperations(new SshEnvironment({…}))`
   * the thread directories are created, listed for the tree, checked for symlink escapes and
   * polled for changes on the SSH host (`rootDir` is then a path on that host). Any backend
   * other than the local disk is tracked by polling (`tracker.kind` does not apply).
   */
  fileOps: z.custom<FileOperations>((v) => {
    try {
      assertFileOperations(v, LISTING_METHODS);
      return true;
    } catch {
      return false;
    }
  }, `fileOps must implement FileOperations (${LISTING_METHODS.join(", ")}), e.g. new ShellFileOperations(new SshEnvironment({ … }))`).optional(),
  /**
   * Where each thread's files are: an Environment, or `(threadId) => Environment` for one per
   * thread. The thread directory is created, listed for the tree, checked for symlink escapes
   * and tracked (polled unless it is the local disk) through the environment's file access.
   * Give the tools the same. With `fileOps` as well, `fileOps` wins. Default: this machine.
   */
  environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
  /** How the tree is shown, and its budget. */
  tree: z
    .strictObject({
      /**
       * `"append"` (default): the first tree is sent in full; later structural changes are
       * appended as a short change message (`+ added`, `- removed`, `renamed a => b`) and earlier
       * messages are never edited or removed, so the provider's prefix cache keeps working. A full
       * tree is appended again when the last one left the history (summarised or trimmed), or when
       * the changes since it add up to more than a fresh tree. `"replace"`: each change removes
       * the previous tree message and adds a new full tree (see `keepOnlyLatestTree`).
       */
      mode: z.enum(["append", "replace"]).optional(),
      // The budget's rule is the tree's own (src/tree.ts), so both accept the same values.
      /** Most entries listed (default 200; `Infinity`: no cap); the rest is summarised per directory. */
      maxEntries: treeBudgetShape.maxEntries,
      /**
       * Most characters of a tree (default 8,000; at least 200): over it, single-directory chains share a line,
       * long names are shortened with `...(+N chars)...`, then the last lines are counted instead.
       */
      maxChars: treeBudgetShape.maxChars,
      /** Deepest level listed (default unlimited). */
      maxDepth: treeBudgetShape.maxDepth,
      /** Extra gitignore-style patterns to hide (`.git`, `node_modules` and `.gitignore` rules always apply). */
      ignore: treeBudgetShape.ignore,
    })
    .optional(),
  /** Show the tree on a thread's first model call when the workspace is not empty. Default true. */
  injectOnFirstCall: z.boolean().optional(),
  /**
   * With `tree.mode: "replace"`: remove the previous tree message when adding a new one, so
   * history holds one tree. Default true. Ignored in the default append mode.
   */
  keepOnlyLatestTree: z.boolean().optional(),
  /** Replace system paths of the thread directory with agent paths in tool results. Default true. */
  rewritePaths: z.boolean().optional(),
  /**
   * Argument names holding paths in tools this package did not make (deepagents', MCP tools),
   * e.g. `["path", "file_path"]`: they are mapped from agent paths to confined system paths
   * before the call. Default `[]`.
   */
  pathArgs: z.array(z.string().min(1)).optional(),
  /**
   * Tools that never change the workspace: after them the next model call skips the tree check
   * unless the tracker saw a change. Default {@link DEFAULT_READ_ONLY_TOOLS}.
   */
  readOnlyTools: z.array(z.string().min(1)).optional(),
  /** Change tracking: implementation, most live watchers (LRU), idle close time, poll interval. */
  tracker: z
    .object({
      kind: z.enum(TRACKER_KINDS as unknown as ["parcel", "chokidar", "polling"]).optional(),
      maxLive: z.number().int().positive().optional(),
      idleMs: z.number().positive().optional(),
      pollIntervalMs: z.number().min(20).optional(),
    })
    .strict()
    .optional(),
  /**
   * The stateful file guards around the file tools (read dedup, staleness warnings, loop
   * detection; see fileGuards.ts), or `false` to leave them out. Default on.
   */
  fileGuards: z.union([z.literal(false), fileGuardsOptionsSchema]).optional(),
  /**
   * Extra `wrapToolCall` steps, run after the built-in ones (inside error catching and path
   * rewriting). See {@link ToolCallStep}.
   */
  toolCallSteps: z.array(z.custom<ToolCallStep>(isFunction, "each tool call step must be a function")).optional(),
  /**
   * Time travel: a snapshot of the workspace after each tool step that may change it, named in
   * every checkpoint, and the files restored when a run starts from a checkpoint naming another
   * snapshot (rewind, fork, resume after a rejection). `restore`: `"auto"` (default), `"ask"`
   * (interrupt with a `WorkspaceRestoreRequest`; resume with `"restore"` or `"keep"`) or `"off"`.
   * `false` records nothing. Local workspaces only. See README "Time travel".
   */
  timeTravel: z.union([z.literal(false), timeTravelOptionsSchema]).optional(),
  /**
   * A result of a tool this package did not make (MCP, custom) over `thresholdTokens` (default
   * 20,000 tokens, 4 characters each) is saved, secrets redacted, to `.tool-results/` in the
   * thread's workspace, and the model gets its start and end with the path and how to read more.
   * The folder is hidden from the tree. `false`: results go to the model whole. Default on.
   */
  evictLargeResults: z.union([z.literal(false), evictLargeResultsOptionsSchema]).optional(),
  /**
   * Images in tool results (e.g. `read_file` of a PNG) for models that accept images only from
   * the user: `"auto"` (default) moves them, in the model request only, into a user message right
   * after that step's tool results, naming the tool call, when the model needs it (OpenAI Chat
   * Completions: `ChatOpenAI`/`AzureChatOpenAI` without `useResponsesApi`, or a profile with
   * `imageToolMessage: false`); `"user-message"` always moves them; `"inline"` never does.
   * Append-only, so prompt caches keep hitting. See hoistImages.ts.
   */
  imagesInToolResults: imagesInToolResultsSchema.optional(),
  /** Told about failures the middleware survived (default: one `console.warn` line). */
  onError: z.custom<(error: Error, context: FileManagerErrorContext) => void>(isFunction, "onError must be a function").optional(),
});

/** Options of {@link createFileManagerMiddleware} (the schema's input). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface FileManagerOptions extends z.input<typeof fileManagerOptionsSchema> {}
