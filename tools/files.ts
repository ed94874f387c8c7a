/**
 * `createFileTools(options?)`: the guarded file tools `read_file`, `write_file`, `patch` and
 * `search_files`, sharing one set of options (workspace root, confined/open mode, backend).
 *
 * The tools are stateless. With the FileManager middleware (or `fileGuardsMiddleware`) they
 * also get read dedup, staleness warnings on writes and loop detection; without it they work
 * the same otherwise.
 */
import { markWorkbenchTool } from "./toolResult.js";
import { resolveFileToolOptions, type FileToolOptions } from "./fileToolSupport.js";
import { FileToolCaches } from "./lineCounts.js";
import { createPatchTool } from "./patchTool.js";
import { createReadFileTool } from "./readFile.js";
import { createSearchFilesTool, type SearchFilesToolOptions } from "./searchFiles.js";
import { createWriteFileTool } from "./writeFile.js";

export type { FileToolOptions } from "./fileToolSupport.js";

/** Options of {@link createFileTools}: the shared file-tool options plus search-only settings. */
export interface FileToolsOptions extends FileToolOptions {
  /** search_files only: engine, ripgrep path, time and size limits (see {@link SearchFilesToolOptions}). */
  search?: Omit<SearchFilesToolOptions, "rootDir" | "confine" | "credentialPatterns" | "redactSecrets" | "homeDir" | "fileOps" | "environment">;
}

/** The four file tools, in the order a model usually needs them. */
export function createFileTools(options: FileToolsOptions = {}) {
  // Validate once, up front: a bad option fails here, not on the first tool call.
  resolveFileToolOptions(options);
  const { search, ...rest } = options;
  // One set of caches for the tool set: given ones are the caller's to close.
  const shared = { ...rest, caches: rest.caches ?? new FileToolCaches() };
  const { rootDir, confine, credentialPatterns, redactSecrets, homeDir, fileOps, environment } = shared;
  return [
    markWorkbenchTool(createReadFileTool(shared)),
    markWorkbenchTool(createWriteFileTool(shared)),
    markWorkbenchTool(createPatchTool(shared)),
    markWorkbenchTool(createSearchFilesTool({ ...search, rootDir, confine, credentialPatterns, redactSecrets, homeDir, fileOps, environment })),
  ];
}
