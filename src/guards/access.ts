/**
 * THE file-access policy: may this file be read (shown, quoted, diffed, searched, counted) or
 * written (created, replaced, moved onto, deleted)? Every entry point — read_file, write_file,
 * patch, search_files, the deepagents WorkbenchBackend — asks here, and asks about the *real*
 * path of what it actually opened (symlinks resolved, ideally from the open descriptor: see
 * {@link accessOpenGuard} and LocalFileOperations), so `README.txt -> .env` is a credential file.
 *
 * Reasons are predicates ("is a protected credential file …"): callers put the path first.
 *
 * Decisions, in order:
 * 1. devices and process files (`/dev/*`, `/proc/<pid>/environ|mem|maps|smaps*|numa_maps…`);
 * 2. confinement: the real path must be inside the workspace's real directory (when confined);
 * 3. credential files by name (`.env` family, `.envrc`, keys, auth stores, …, plus user patterns);
 * 4. hard links: a regular file with more than one name (`nlink > 1`) is refused for reading —
 *    its other names cannot be vouched for (one may be `.env`). Measured on this repository's
 *    node_modules: 20 of 26,856 files have nlink > 1, all binaries (esbuild, `.node`, `.a`),
 *    which read_file refuses anyway. Opt out with `allowHardLinks`.
 */
import path from "node:path";
import type { OpenGuard, OpenedInfo } from "../environment/fileOperations.js";
import { credentialPathReason, type CredentialPattern } from "./credentials.js";
import { devicePathReason } from "./devices.js";
import { protectedPathReason, type ProtectedPath } from "./protectedPaths.js";
import { writeTargetReason } from "./writeTargets.js";

/** What the policy needs to know about the caller's setting. */
export interface AccessPolicy {
  /** Real path of the thread's workspace directory (symlinks resolved). */
  workspaceDir: string;
  /** `true`: nothing outside `workspaceDir` is opened. `false`: open mode (lists still apply). */
  confine: boolean;
  /** Extra credential-file patterns (globs on the base name, RegExps on the path). */
  credentialPatterns?: readonly CredentialPattern[];
  /** Home directory for the open-mode write-deny list. */
  homeDir?: string;
  /** Read files with more than one hard link (default false: refused). */
  allowHardLinks?: boolean;
  /** Workspace paths never written (shell rc files, git config and hooks…). Default: `protectedPathList()`. */
  protectedPaths?: readonly ProtectedPath[];
}

/** The note search answers carry instead of any count of hidden files or matches. */
export const CREDENTIAL_FILES_EXCLUDED_NOTE =
  "Credential files (.env, .envrc, keys, tokens) are never searched or shown. Use .env.example or ask the user for the variable names.";

// Reasons are predicates: callers prefix the subject (`"notes.txt" ` or `'/notes.txt' `).
const OUTSIDE_REASON = "leads outside the workspace (through a symlink or a moved directory). Use a path inside the workspace.";
const HARD_LINK_REASON =
  "is a hard link (the same file has another name), and that other name may be a protected file, so it is not shown. Ask the user to copy the file instead of linking it.";

function isInside(dir: string, candidate: string): boolean {
  if (plainRelative(dir, candidate) !== undefined) return true;
  const rel = path.relative(dir, candidate);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** The path the credential patterns see: workspace-relative inside it (so a workspace under `~/.ssh` is not itself "a key"). */
function patternPath(realPath: string, policy: AccessPolicy): string {
  const plain = plainRelative(policy.workspaceDir, realPath);
  if (plain !== undefined) return plain;
  if (isInside(policy.workspaceDir, realPath)) {
    const rel = path.relative(policy.workspaceDir, realPath).split(path.sep).join("/");
    return rel === "" ? "." : rel;
  }
  return realPath;
}

let lastNormalDir = "";

/**
 * `candidate` relative to `dir` when it is spelled plainly below it (POSIX, both normalised, no
 * `.`/`..`/empty segments; `dir` may be `.` for a relative candidate): exactly what
 * `path.relative` would give, without it — the per-result checks of a 100k-file search spent
 * most of their time there. `undefined`: not plain; the caller takes the general way.
 */
function plainRelative(dir: string, candidate: string): string | undefined {
  if (path.sep !== "/") return undefined;
  let rest: string;
  if (dir === ".") {
    if (candidate === "" || candidate.startsWith("/")) return undefined;
    rest = `/${candidate}`;
  } else {
    if (candidate.length <= dir.length + 1 || candidate.charCodeAt(dir.length) !== 47 || !candidate.startsWith(dir)) return undefined;
    if (dir !== lastNormalDir) {
      if (!dir.startsWith("/") || dir.endsWith("/") || path.posix.normalize(dir) !== dir) return undefined;
      lastNormalDir = dir;
    }
    rest = candidate.slice(dir.length);
  }
  if (rest.includes("//") || rest.includes("/./") || rest.includes("/../") || rest.endsWith("/") || rest.endsWith("/.") || rest.endsWith("/..")) return undefined;
  return rest.slice(1);
}

/** Why showing anything derived from this file is refused (credential, device, outside), or `undefined`. Name-only: no I/O. */
export function contentAccessReason(realPath: string, policy: AccessPolicy): string | undefined {
  const device = devicePathReason(realPath);
  if (device) return "is a device or process file (it could block, never end, or expose a process's secrets). Read a regular file instead.";
  if (policy.confine && !isInside(policy.workspaceDir, realPath)) return OUTSIDE_REASON;
  const credential = credentialPathReason(patternPath(realPath, policy), policy.credentialPatterns);
  if (credential) return `is a protected credential file and is not shown (a protected file is never read, quoted, diffed, moved or searched). ${credential}`;
  return undefined;
}

/**
 * Why reading the opened file is refused, or `undefined`: {@link contentAccessReason} plus the
 * facts only the open descriptor knows (hard links).
 */
export function readAccessReason(realPath: string, policy: AccessPolicy, opened?: OpenedInfo): string | undefined {
  const reason = contentAccessReason(realPath, policy);
  if (reason) return reason;
  if (opened && opened.type === "file" && opened.nlink > 1 && !policy.allowHardLinks) return HARD_LINK_REASON;
  return undefined;
}

/**
 * Why writing (creating, replacing, deleting, moving onto or away from) `realPath` is refused,
 * or `undefined`. Credential files are never written by the agent: a write could plant a value
 * that a later read would echo, and a move would hand the content to an ordinary name.
 */
export function writeAccessReason(realPath: string, policy: AccessPolicy): string | undefined {
  const device = devicePathReason(realPath);
  if (device) return "is a device or process file; it is never written.";
  if (policy.confine && !isInside(policy.workspaceDir, realPath)) return OUTSIDE_REASON;
  const credential = credentialPathReason(patternPath(realPath, policy), policy.credentialPatterns);
  if (credential) return `is a protected credential file: the agent never writes, moves or deletes a protected file. ${credential}`;
  if (isInside(policy.workspaceDir, realPath)) {
    const rel = patternPath(realPath, policy);
    const protectedPath = protectedPathReason(rel, policy.protectedPaths);
    if (protectedPath) return protectedPath;
  }
  if (!policy.confine && !isInside(policy.workspaceDir, realPath)) {
    const denied = writeTargetReason([realPath], policy.homeDir);
    if (denied) return "is under a protected location (system files and credential stores are never written). Write inside the workspace instead.";
  }
  return undefined;
}

/**
 * The check LocalFileOperations runs on what it actually opened (see `OpenGuard`): confinement
 * to the workspace's real directory and the read or write policy above.
 */
export function accessOpenGuard(kind: "read" | "write", policy: AccessPolicy): OpenGuard {
  return {
    within: policy.confine ? policy.workspaceDir : undefined,
    check: (realPath, opened) => {
      if (opened.type === "directory") return devicePathReason(realPath) ? "is a process directory; it is never opened." : undefined;
      return kind === "read" ? readAccessReason(realPath, policy, opened) : writeAccessReason(realPath, policy);
    },
  };
}

/** The dedup stub read_file's middleware answers with; content equal to it is never written. */
export const DEDUP_STUB_STATUS = "unchanged";
/** How the stub's message starts (middleware/fileGuards.ts builds it with {@link dedupStubMessage}). */
export const DEDUP_STUB_MESSAGE_PREFIX = "The file has not changed since you read this window";

/** The stub's message for a window first read in tool call `toolCallId`. */
export function dedupStubMessage(toolCallId: string): string {
  return `${DEDUP_STUB_MESSAGE_PREFIX} in tool call ${toolCallId}; that result is still in the conversation above — use it instead of re-reading.`;
}

/**
 * True when `content` is (or merely wraps) the read-dedup stub `{"status":"unchanged","dedup":true,…}`
 * rather than the file: writing it would replace the file with a placeholder.
 */
export function looksLikeDedupStub(content: string): boolean {
  const text = content.trim();
  if (text.startsWith(DEDUP_STUB_MESSAGE_PREFIX)) return true;
  if (!text.startsWith("{") || !text.includes('"dedup"')) return false;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return parsed !== null && typeof parsed === "object" && parsed.status === DEDUP_STUB_STATUS && parsed.dedup === true;
  } catch {
    return /"status"\s*:\s*"unchanged"/.test(text) && /"dedup"\s*:\s*true/.test(text);
  }
}
