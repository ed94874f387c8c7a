/**
 * Files in and out of a thread's workspace for the application around the agent: uploads
 * (bytes from a user land in the workspace) and downloads (bytes of one file), both through the
 * thread's FileOperations and the guard layer — confined, size-capped, atomic, credential files
 * refused. Used by `workbench.uploads()` and WorkbenchBackend's `uploadFiles`/`downloadFiles`.
 */
import path from "node:path";
import { accessOpenGuard, contentAccessReason, writeAccessReason, type AccessPolicy } from "../guards/access.js";
import type { CredentialPattern } from "../guards/credentials.js";
import { devicePathReason, nonRegularFileReason } from "../guards/devices.js";
import { OpenRefusedError, type FileOperations, type OpenGuard } from "../environment/fileOperations.js";
import { withPathLock } from "../environment/pathLock.js";
import { Workspace, WorkspacePathError } from "../workspace.js";
import { WorkbenchError } from "../workbenchError.js";

/** Largest file an upload or download moves by default (bytes). */
export const DEFAULT_MAX_TRANSFER_BYTES = 50 * 1024 * 1024;

/** deepagents' error codes for uploads and downloads (`FileOperationError`). */
export type TransferErrorCode = "file_not_found" | "permission_denied" | "is_directory" | "invalid_path";

/** A refused or failed transfer: a deepagents error code plus a message without host paths. */
export interface TransferRefusal {
  code: TransferErrorCode;
  message: string;
}

/** Settings shared by every transfer. */
export interface TransferSettings {
  /** Extra credential-file patterns (globs on the base name, or RegExps on the path). */
  credentialPatterns?: readonly CredentialPattern[];
  /** Largest file moved, in bytes (default 50 MB). */
  maxBytes?: number;
  /** Download files with more than one hard link (default false). */
  allowHardLinks?: boolean;
}

/** The thrown form of a {@link TransferRefusal} (for `workbench.uploads().put`). */
export class TransferError extends WorkbenchError {
  override readonly name = "TransferError";
  constructor(
    readonly code: TransferErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The confined access policy of a workspace. */
export function workspacePolicy(ws: Workspace, settings: TransferSettings = {}): AccessPolicy {
  return { workspaceDir: ws.realDirectory(), confine: true, credentialPatterns: settings.credentialPatterns ?? [], allowHardLinks: settings.allowHardLinks === true };
}

/**
 * Where a write to `system` lands: an existing symlink inside the workspace is written through
 * (its target changes, the link stays); anything else is written in place.
 */
export async function writeDestination(ops: FileOperations, system: string): Promise<string> {
  const s = await ops.lstat(system);
  if (s?.type !== "symlink") return system;
  return ops.realpath(system).catch(() => system);
}

/** The real location a new file would land on: the real deepest existing ancestor plus the rest. */
export async function realTarget(ops: FileOperations, system: string): Promise<string> {
  const rest: string[] = [];
  for (let probe = system; ; ) {
    try {
      return path.posix.join(await ops.realpath(probe), ...rest);
    } catch {
      const parent = path.posix.dirname(probe);
      if (parent === probe) return system;
      rest.unshift(path.posix.basename(probe));
      probe = parent;
    }
  }
}

function refusal(code: TransferErrorCode, message: string): TransferRefusal {
  return { code, message };
}

/** Resolves an agent path (`/a/b.txt` or `a/b.txt`) to a confined system path, or a refusal. */
async function resolveIn(ws: Workspace, ops: FileOperations, agentPath: string): Promise<string | TransferRefusal> {
  if (typeof agentPath !== "string" || agentPath.trim() === "" || agentPath.includes("\0")) {
    return refusal("invalid_path", "path must be a non-empty file name such as 'report.pdf'.");
  }
  if (devicePathReason(agentPath.trim())) return refusal("permission_denied", `'${agentPath}' is a device or process file; it is never read or written.`);
  try {
    return await ws.resolve(agentPath, ops);
  } catch (err) {
    if (err instanceof WorkspacePathError) return refusal("invalid_path", err.message);
    throw err;
  }
}

/**
 * Writes `bytes` to `agentPath` in the workspace atomically (parents created, an existing file
 * replaced). Refuses paths outside the workspace, credential files, directories and files over
 * the size cap. Returns the workspace-relative path written.
 */
export async function putFile(
  ws: Workspace,
  ops: FileOperations,
  agentPath: string,
  bytes: Uint8Array,
  settings: TransferSettings = {},
): Promise<{ path: string; bytes: number } | TransferRefusal> {
  if (!(bytes instanceof Uint8Array)) return refusal("invalid_path", "content must be bytes (a Uint8Array or Buffer).");
  const max = settings.maxBytes ?? DEFAULT_MAX_TRANSFER_BYTES;
  const system = await resolveIn(ws, ops, agentPath);
  if (typeof system !== "string") return system;
  const rel = ws.toAgentPath(system);
  if (rel === ".") return refusal("is_directory", "The path names the workspace directory itself; add a file name.");
  if (bytes.byteLength > max) return refusal("permission_denied", `'${rel}' is ${bytes.byteLength} bytes, over the ${max}-byte transfer limit.`);
  const policy = workspacePolicy(ws, settings);
  const dest = await writeDestination(ops, system);
  const denied = writeAccessReason(system, { ...policy, workspaceDir: ws.dir }) ?? writeAccessReason(await realTarget(ops, dest), policy);
  if (denied) return refusal("permission_denied", `'${rel}' ${denied}`);
  try {
    return await withPathLock(dest, async () => {
      const existing = await ops.stat(dest);
      if (existing?.type === "directory") return refusal("is_directory", `'${rel}' is a directory; upload to a file path inside it.`);
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      await ops.writeAtomic(dest, buffer, accessOpenGuard("write", policy));
      return { path: rel, bytes: bytes.byteLength };
    });
  } catch (err) {
    return fsRefusal(err, rel, ws);
  }
}

/** Reads a whole file (raw bytes, not redacted) for download; refuses credential files, devices, directories and files over the cap. */
export async function getFile(
  ws: Workspace,
  ops: FileOperations,
  agentPath: string,
  settings: TransferSettings = {},
): Promise<{ path: string; content: Uint8Array } | TransferRefusal> {
  const max = settings.maxBytes ?? DEFAULT_MAX_TRANSFER_BYTES;
  const system = await resolveIn(ws, ops, agentPath);
  if (typeof system !== "string") return system;
  const rel = ws.toAgentPath(system);
  const policy = workspacePolicy(ws, settings);
  const named = contentAccessReason(system, { ...policy, workspaceDir: ws.dir });
  if (named) return refusal("permission_denied", `'${rel}' ${named}`);
  try {
    const s = await ops.stat(system);
    if (!s) return refusal("file_not_found", `'${rel}' not found.`);
    if (s.type === "directory") return refusal("is_directory", `'${rel}' is a directory; download the files inside it.`);
    const nonRegular = nonRegularFileReason(rel, s);
    if (nonRegular) return refusal("permission_denied", nonRegular);
    const real = await ops.realpath(system);
    const denied = contentAccessReason(real, policy);
    if (denied) return refusal("permission_denied", `'${rel}' ${denied}`);
    if (s.size > max) return refusal("permission_denied", `'${rel}' is ${s.size} bytes, over the ${max}-byte transfer limit.`);
    const content = await ops.readBytes(system, 0, s.size, regularFileGuard(accessOpenGuard("read", policy)));
    return { path: rel, content: new Uint8Array(content.buffer, content.byteOffset, content.byteLength) };
  } catch (err) {
    return fsRefusal(err, rel, ws);
  }
}

/**
 * `guard` plus the type of what was opened: the stat above may describe a file that was swapped
 * for a FIFO, socket or device before the open (opened non-blocking, so the open itself returns),
 * and its bytes are never read.
 */
function regularFileGuard(guard: OpenGuard): OpenGuard {
  return { ...guard, check: (real, opened) => (opened.type === "file" ? guard.check?.(real, opened) : NOT_REGULAR) };
}

const NOT_REGULAR = "is not a regular file (a FIFO, socket or device); it is never read. Download a regular file.";

function fsRefusal(err: unknown, rel: string, ws: Workspace): TransferRefusal {
  if (err instanceof OpenRefusedError) return refusal("permission_denied", `'${rel}' ${err.reason}`);
  switch ((err as NodeJS.ErrnoException | undefined)?.code) {
    case "ENOENT":
      return refusal("file_not_found", `'${rel}' not found.`);
    case "EACCES":
    case "EPERM":
      return refusal("permission_denied", `Permission denied for '${rel}'.`);
    case "EISDIR":
      return refusal("is_directory", `'${rel}' is a directory.`);
    default:
      return refusal("invalid_path", ws.rewrite(`Could not transfer '${rel}': ${err instanceof Error ? err.message : String(err)}`));
  }
}

/** True for a {@link TransferRefusal}. */
export function isTransferRefusal(value: unknown): value is TransferRefusal {
  return typeof value === "object" && value !== null && "code" in value && "message" in value && !("path" in value);
}
