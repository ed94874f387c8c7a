// Public API of "langgraph-workbench/tools": the LangChain tools, their argument schemas, the
// one tool answer shape, and the guards and patch engine the tools apply.

// file tools (read_file, write_file, patch, search_files)
export { createFileTools, type FileToolsOptions } from "./fileTools.js";
export { fileToolOptionsSchema, type FileToolOptions } from "./fileToolSupport.js";
export { FileToolCaches } from "./lineCounts.js";
export { createReadFileTool, readFileSchema, type ReadFileArgs } from "./readFile.js";
export { createWriteFileTool, writeFileSchema, looksLikeReadFileDisplay, type WriteFileArgs } from "./writeFile.js";
export { createPatchTool, patchSchema, type PatchArgs } from "./patchTool.js";
export { createSearchFilesTool, searchFilesSchema, type SearchFilesToolOptions, type SearchFilesArgs } from "./searchFiles.js";

// basic tools (get_current_time, run_command) and web tools (web_search, web_extract)
export { createBasicTools, createCurrentTimeTool, formatCurrentTime, type BasicToolsOptions } from "./basicTools.js";
export { createRunCommandTool, type RunCommandToolOptions } from "./runCommand.js";
export { isDangerousCommand } from "./dangerousCommands.js";
export { createWebTools, webToolsOptionsSchema, type WebToolsOptions, type WebExtractToolResult, type WebProgressEvent, type SummaryTuning } from "./webTools.js";

// writing your own tool next to these: the thread's workspace, the answer shape, the marker
export { workspaceFromConfig, threadIdFromConfig, type ThreadConfigLike } from "../src/context/thread.js";
export { toolAnswer, toolError, argumentError, markWorkbenchTool, isWorkbenchTool, WORKBENCH_TOOL_METADATA_KEY } from "./toolResult.js";
export { fileToolProbe, type FileToolProbe, type FileToolTarget } from "../src/context/probes.js";

// the guards the file tools apply (each one function with a guiding message)
export { accessOpenGuard, contentAccessReason, readAccessReason, writeAccessReason, type AccessPolicy } from "../src/guards/access.js";
export { hasBinaryExtension, isImagePath, sniffBinary } from "../src/guards/binary.js";
export { DEFAULT_CREDENTIAL_PATTERNS, credentialPathReason, isCredentialPath, type CredentialPattern } from "../src/guards/credentials.js";
export { devicePathReason, nonRegularFileReason } from "../src/guards/devices.js";
export { containsRedactionMarker, findSecrets, redactSecrets, type RedactOptions, type SecretSpan } from "../src/guards/redact.js";
export { HOME_WRITE_DENY, SENSITIVE_SYSTEM_EXACT, SENSITIVE_SYSTEM_PREFIXES, writeTargetReason } from "../src/guards/writeTargets.js";

// the patch engine behind the patch tool
export { planReplace } from "../src/patch/replace.js";
export { parseV4A, type V4AHunk, type V4AHunkLine, type V4AOperation, type V4AParseResult } from "../src/patch/v4aParse.js";
export { planV4APatch } from "../src/patch/v4aPlan.js";
export { unifiedDiff } from "../src/patch/diff.js";
export {
  MATCH_STRATEGIES,
  type MatchCandidate,
  type MatchStrategy,
  type PatchFileOp,
  type PatchReader,
  type ReplaceOptions,
  type ReplacePlan,
  type V4APlan,
} from "../src/patch/types.js";
