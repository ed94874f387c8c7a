/**
 * search_files: content search (regex) or file-name search (glob) inside the thread workspace,
 * wherever the thread's environment keeps it (src/search/engine.ts): ripgrep when `rg` runs
 * there, otherwise the JS engine (src/search/fallback.ts), which gives
 * the same answers on ordinary patterns (see its note on the regex dialect). Answers are JSON,
 * errors included; credential files (by the access policy, src/guards/access.ts) are never
 * searched and never counted; match text is redacted.
 */
import { tool } from "@langchain/core/tools";
import path from "node:path";
import { z } from "zod";
import { contentAccessReason, type AccessPolicy } from "../src/guards/access.js";
import { LIMITS } from "../src/guards/limits.js";
import { redactSecrets } from "../src/guards/redact.js";
import { runGuardedSearch, searchPlaceFor } from "../src/search/guardedSearch.js";
import { shapeResults } from "../src/search/results.js";
import type { Workspace } from "../src/workspace.js";
import { parseOptions } from "../src/options.js";
import { markWorkbenchTool } from "./toolResult.js";
import {
  accessPolicyFor,
  errorPayload,
  FileToolError,
  fileToolResult,
  resolveFileTarget,
  fileToolOptionsShape,
  fileToolSettings,
  positiveInt,
  threadFileOptions,
  type ResolvedFileToolOptions,
} from "./fileToolSupport.js";

export const SEARCH_DEFAULT_LIMIT = 50;
export const SEARCH_MAX_LIMIT = 500;
export const SEARCH_MAX_CONTEXT = 10;

/** The search-only settings (engine and limits): `createFileTools({ search })` takes these. */
export const searchSettingsShape = {
  /**
   * `"auto"` (default): ripgrep when `rg` runs where the thread's files are (this machine, or
   * inside the thread's environment), else JS; `"ripgrep"` or `"js"` to force one.
   */
  engine: z.enum(["auto", "ripgrep", "js"], 'engine must be "auto", "ripgrep" or "js"').optional(),
  /** ripgrep executable (default `rg` from PATH). */
  ripgrepPath: z.string("ripgrepPath must be a string").optional(),
  /**
   * Per-call time limit in ms (default 30,000); the answer then says it is incomplete, or, when
   * the JS engine's regex was still running on one file, asks for a simpler pattern.
   */
  timeoutMs: positiveInt("timeoutMs"),
  /** Matches (or files) collected per call before stopping (default 10,000). */
  maxResults: positiveInt("maxResults"),
  /** Cap on the engine's raw output in bytes (default 16 MiB). */
  maxOutputBytes: positiveInt("maxOutputBytes"),
  /** Match and context lines longer than this are cut (default 500). */
  maxLineChars: positiveInt("maxLineChars"),
};
export const searchSettingsSchema = z.strictObject(searchSettingsShape, "search options must be an object");
export type SearchSettings = z.input<typeof searchSettingsSchema>;

/** `shape`'s fields named in `keys`, in that order, their documentation kept (a `Pick`). */
function pickFields<T extends object, const K extends keyof T>(shape: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, shape[k]])) as Pick<T, K>;
}

/** The checks on {@link SearchFilesToolOptions}: the file-tool options search uses plus its own settings, values included. */
export const searchFilesToolOptionsSchema = z.strictObject(
  {
    ...pickFields(fileToolOptionsShape, ["rootDir", "confine", "credentialPatterns", "redactSecrets", "homeDir", "allowHardLinks", "fileOps", "environment"]),
    ...searchSettingsShape,
  },
  "search_files options must be an object",
);

/** Options of {@link createSearchFilesTool} (the schema's input). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface SearchFilesToolOptions extends z.input<typeof searchFilesToolOptionsSchema> {}

export const searchFilesSchema = z.object({
  pattern: z
    .string()
    .min(1)
    .describe(
      'What to look for. target="content": a regular expression matched against each line (ripgrep syntax; escape ( ) [ ] . * + ? with \\ for literal text; prefix (?i) to ignore case). target="files": a glob on file paths, e.g. "*.ts" or "src/**/*.test.ts".',
    ),
  target: z
    .enum(["content", "files"])
    .optional()
    .describe('"content" (default) searches inside files; "files" lists files whose path matches the glob in pattern.'),
  path: z.string().optional().describe('Directory or file to search, relative to the workspace (default ".", the whole workspace).'),
  file_glob: z
    .string()
    .optional()
    .describe('Only search files whose path matches this glob, e.g. "*.py" (any depth) or "src/**/*.ts"; a leading "!" excludes.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(SEARCH_MAX_LIMIT)
    .optional()
    .describe(`Results per page (default ${SEARCH_DEFAULT_LIMIT}, at most ${SEARCH_MAX_LIMIT}).`),
  offset: z.number().int().min(0).optional().describe("Results to skip: use next_offset from the previous answer to continue (default 0)."),
  output_mode: z
    .enum(["content", "files_only", "count"])
    .optional()
    .describe('For content searches: "content" (default) matching lines with line numbers, "files_only" just the file paths, "count" matches per file.'),
  context: z
    .number()
    .int()
    .min(0)
    .max(SEARCH_MAX_CONTEXT)
    .optional()
    .describe(`Lines of context to show before and after each match (default 0, at most ${SEARCH_MAX_CONTEXT}; output_mode="content" only).`),
});

export type SearchFilesArgs = z.infer<typeof searchFilesSchema>;

/** The search_files tool. Options are validated here (a TypeError names the bad one). */
export function createSearchFilesTool(options: SearchFilesToolOptions = {}) {
  parseOptions(searchFilesToolOptionsSchema, options ?? {}, "Invalid search_files options");
  const { engine, ripgrepPath, timeoutMs, maxResults, maxOutputBytes, maxLineChars, ...fileOptions } = options;
  return searchFilesToolFrom(fileToolSettings(fileOptions), { engine, ripgrepPath, timeoutMs, maxResults, maxOutputBytes, maxLineChars });
}

/** search_files over file-tool options already resolved (shared with the other file tools) and checked search settings. */
export function searchFilesToolFrom(fileOpts: ResolvedFileToolOptions, settings: SearchSettings = {}) {
  const engine = settings.engine ?? "auto";
  const limits = {
    timeoutMs: settings.timeoutMs ?? LIMITS.searchTimeoutMs,
    maxResults: settings.maxResults ?? 10_000,
    maxOutputBytes: settings.maxOutputBytes ?? 16 * 1024 * 1024,
    maxLineChars: settings.maxLineChars ?? 500,
  };

  async function searchFiles(args: SearchFilesArgs, config: unknown): Promise<{ payload: Record<string, unknown>; isError: boolean }> {
    let ws: Workspace | undefined;
    let display: string | undefined;
    try {
      if (typeof args?.pattern !== "string" || args.pattern === "") {
        throw new FileToolError('Missing "pattern": give a regular expression (target="content") or a glob (target="files").');
      }
      const target = args.target ?? "content";
      const mode = target === "files" ? "content" : (args.output_mode ?? "content");
      const limit = Math.min(args.limit ?? SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT);
      const offset = args.offset ?? 0;
      const context = mode === "content" ? Math.min(args.context ?? 0, SEARCH_MAX_CONTEXT) : 0;
      const threadOpts = await threadFileOptions(fileOpts, config);
      const resolved = await resolveFileTarget(args.path ?? ".", config, threadOpts);
      ws = resolved.ws;
      display = resolved.display;
      const place = await searchPlaceFor(fileOpts.environments, threadOpts.fileOps, resolved.ws.threadId);
      const s = await threadOpts.fileOps.stat(resolved.systemPath).catch(() => null);
      if (!s || (s.type !== "file" && s.type !== "directory")) {
        throw new FileToolError(`Path "${display}" does not exist (or is not a file or directory). Use "." to search the whole workspace.`);
      }
      // The path itself is decided on what it really is: `README.txt -> .env` is a credential file.
      const policy = accessPolicyFor(resolved, fileOpts);
      const real = await threadOpts.fileOps.realpath(resolved.systemPath).catch(() => resolved.systemPath);
      const pathReason = target === "content" && s.type === "file" ? contentAccessReason(real, policy) : undefined;
      if (pathReason) throw new FileToolError(`"${display}" ${pathReason}`);
      const byName: AccessPolicy = { ...policy, workspaceDir: resolved.ws.dir };
      // Verified against the workspace's real path, or (open mode, outside it) the searched path's.
      const insideWs = resolved.ws.toAgentPath(resolved.systemPath) !== resolved.systemPath;
      const outcome = await runGuardedSearch(
        {
          target,
          pattern: args.pattern,
          mode,
          cwd: resolved.ws.dir,
          searchPath: resolved.systemPath,
          ...(args.file_glob ? { fileGlob: args.file_glob } : {}),
          context,
          maxRecords: limits.maxResults,
          timeoutMs: limits.timeoutMs,
          maxOutputBytes: limits.maxOutputBytes,
        },
        { ...place, engine, ...(settings.ripgrepPath ? { ripgrepPath: settings.ripgrepPath } : {}), policy, workspaceDir: resolved.ws.dir, verifyRoot: insideWs ? policy.workspaceDir : real },
      );
      const head = { pattern: args.pattern, target, path: display, ...(target === "content" ? { output_mode: mode } : {}), engine: outcome.engine };
      if (outcome.error) return { payload: { ...head, error: resolved.ws.rewrite(outcome.error) }, isError: true };
      const wsRef = resolved.ws;
      const hiddenPolicy: AccessPolicy = { ...byName, workspaceDir: "." };
      const inside = `${wsRef.dir}${path.sep}`;
      const shaped = shapeResults(outcome, target, mode, {
        // The common case without path.relative: engines report paths under the workspace dir.
        display: (p) => (path.sep === "/" && p.startsWith(inside) ? p.slice(inside.length) : wsRef.toAgentPath(p)),
        isHidden: (p) => contentAccessReason(p, hiddenPolicy) !== undefined,
        redact: fileOpts.redactSecrets ? redactSecrets : (t) => t,
        maxLineChars: limits.maxLineChars,
        offset,
        limit,
        context,
      });
      return { payload: { ...head, ...shaped }, isError: false };
    } catch (err) {
      return { payload: errorPayload(err, ws, display), isError: true };
    }
  }

  const searchTool = tool(
    async (args: SearchFilesArgs, config) => {
      const { payload, isError } = await searchFiles(args, config);
      return fileToolResult("search_files", config, payload, isError);
    },
    {
      name: "search_files",
      description:
        'Search the workspace. target="content" (default): lines matching a regular expression, as JSON "matches" [{path, line, text, before?, after?}] ' +
        '(output_mode "files_only" gives just "files", "count" gives per-file "counts"). target="files": files whose path matches a glob. ' +
        'Honours .gitignore, skips binary files; credential files (.env, keys) are never searched, secrets in lines are masked as «redacted…». ' +
        `Paginated: limit (default ${SEARCH_DEFAULT_LIMIT}) and offset — when "truncated" is true, call again with offset=next_offset. Prefer this over reading many files.`,
      schema: searchFilesSchema,
    },
  );
  return markWorkbenchTool(searchTool);
}
