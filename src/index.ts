// Public API of langgraph-workbench: the common case. Each area has its own entry point with the
// rest: "langgraph-workbench/middleware", "/tools", "/environment", "/web".

// one call: the FileManager middleware plus the tools on one workspace root
export { createWorkbench, type Workbench, type WorkbenchOptions, type WorkbenchUploads, type WorkbenchArtifactOptions } from "./workbench.js";
export { Workspace, WorkspacePathError, resolveRootDir, DEFAULT_ROOT_DIR, DEFAULT_THREAD_ID } from "./workspace.js";

// the parts, usable alone
export { createFileManagerMiddleware, type FileManagerMiddleware, type FileManagerOptions } from "../middleware/fileManager.js";
export { createFileTools, type FileToolsOptions } from "../tools/fileTools.js";
export { createBasicTools, type BasicToolsOptions } from "../tools/basicTools.js";
export { createWebTools, type WebToolsOptions } from "../tools/webTools.js";

// time travel: a checkpoint's workspace snapshot, and what `workbench.changes()` returns
export { snapshotIdOf, type WorkspaceRestoreRequest } from "../middleware/timeTravel.js";
export { isPendingSnapshotId } from "./snapshots/index.js";
export type { ChangeSet, FileChange, RestoreResult, SkippedEntry, SnapshotInfo, TimeTravelOptions } from "./snapshots/index.js";

// where files live and commands run
export type { Environment, EnvironmentOption } from "./environment/environment.js";
export type { FileOperations } from "./environment/fileOperations.js";
export { LocalEnvironment } from "./environment/localEnvironment.js";
export { SshEnvironment, type SshEnvironmentOptions } from "./environment/sshEnvironment.js";
export { DockerEnvironment, type DockerEnvironmentOptions } from "./environment/dockerEnvironment.js";
export { DockerSandbox, type DockerSandboxOptions } from "./environment/dockerSandbox.js";
export { ShellFileOperations } from "./environment/shellFileOperations.js";

// deepagents' BackendProtocol over the workspace: the "langgraph-workbench/deepagents" subpath

// guards worth calling on their own
export { isDangerousCommand } from "../tools/dangerousCommands.js";
export { redactSecrets } from "./guards/redact.js";
export { checkUrlSafety, type UrlSafetyOptions } from "./guards/url.js";

// optional peer dependencies (vendor SDKs, ssh2, @langchain/openai): what a missing one throws
export { MissingPackageError, isInstalled } from "./optional.js";

// the base of every error the package throws: `instanceof WorkbenchError`, then branch on `code`
export { WorkbenchError } from "./workbenchError.js";

// files in and out for apps (workbench.uploads / workbench.artifacts)
export { TransferError, DEFAULT_MAX_TRANSFER_BYTES, type TransferErrorCode } from "./artifacts/transfer.js";
export type { Artifact, ArtifactList } from "./artifacts/artifacts.js";
