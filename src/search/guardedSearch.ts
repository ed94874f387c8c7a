/**
 * One workspace search with the read guards, for every caller (the search_files tool and
 * WorkbenchBackend's grep and glob): the engine chosen by {@link runSearch} where the files are,
 * credential files excluded by name before anything is counted, hard-linked files dropped
 * (local disk only: remote FileOperations report no link count), and ripgrep's reported lines
 * verified against a descriptor read under the real root before any text is shown.
 */
import type { Environment } from "../environment/environment.js";
import { isLocalFileOperations } from "../environment/locality.js";
import type { ThreadEnvironments } from "../environment/threadEnvironment.js";
import type { FileOperations } from "../environment/fileOperations.js";
import { contentAccessReason, type AccessPolicy } from "../guards/access.js";
import { runSearch, type SearchEngineOptions } from "./engine.js";
import { hardLinkScreen, verifyReportedLines } from "./refused.js";
import type { SearchOutcome, SearchRequest } from "./types.js";

/** Where a thread's search runs: its file access, and the environment beside those files when they are remote. */
export interface SearchPlace {
  fileOps: FileOperations;
  environment?: Environment;
}

/** The thread's file access, plus its environment when the files are remote (so ripgrep can run there). */
export async function searchPlaceFor(environments: ThreadEnvironments, fileOps: FileOperations, threadId: string): Promise<SearchPlace> {
  if (isLocalFileOperations(fileOps) || environments.environment === undefined) return { fileOps };
  return { fileOps, environment: await environments.environmentFor(threadId) };
}

/** What {@link runGuardedSearch} needs beyond the request. */
export interface GuardedSearchOptions extends SearchPlace, Pick<SearchEngineOptions, "engine" | "ripgrepPath"> {
  /** The access policy; `workspaceDir` is the workspace's real directory. */
  policy: AccessPolicy;
  /** The workspace directory as spelled (names are judged on it, as the model spells them). */
  workspaceDir: string;
  /** Where ripgrep's reported lines must be read from (the workspace's real directory, or the searched path outside it). */
  verifyRoot: string;
  /** More files to leave unsearched, judged by name like credential files (e.g. binary extensions). */
  alsoExclude?: (absolutePath: string) => boolean;
}

/** Runs `req` under the read guards. Never rejects on the engine's behalf: failures come back in `error`. */
export async function runGuardedSearch(req: Omit<SearchRequest, "exclude" | "onResultFile">, o: GuardedSearchOptions): Promise<SearchOutcome> {
  const byName: AccessPolicy = { ...o.policy, workspaceDir: o.workspaceDir };
  const also = o.alsoExclude;
  const exclude = also ? (p: string) => also(p) || contentAccessReason(p, byName) !== undefined : (p: string) => contentAccessReason(p, byName) !== undefined;
  // The descriptor-level checks read this machine's disk: only for local files (the remote walk
  // checks each file's real path after reading it).
  const screen = req.target === "content" && isLocalFileOperations(o.fileOps) ? hardLinkScreen(o.policy) : undefined;
  const place: SearchEngineOptions = {
    fileOps: o.fileOps,
    ...(o.environment ? { environment: o.environment } : {}),
    ...(o.engine ? { engine: o.engine } : {}),
    ...(o.ripgrepPath ? { ripgrepPath: o.ripgrepPath } : {}),
  };
  const outcome = await runSearch({ ...req, exclude, ...(screen ? { onResultFile: screen.see } : {}) }, place);
  if (screen) {
    await screen.drop(outcome);
    if (outcome.engine === "ripgrep") await verifyReportedLines(outcome, o.verifyRoot);
  }
  return outcome;
}
