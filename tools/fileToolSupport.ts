/**
 * Plumbing shared by the file tools: options, path resolution (confined or open mode) and JSON
 * results. Each tool registers a probe (src/context/probes.ts) so the stateful guards learn
 * which files a call touches without the tools keeping any state themselves.
 */
import os from "node:os";
import path from "node:path";
import type { ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { assertFileOperations } from "../src/environment/assertFileOperations.js";
import type { EnvironmentOption } from "../src/environment/environment.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { isLocalFileOperations } from "../src/environment/locality.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption, ThreadEnvironments } from "../src/environment/threadEnvironment.js";
import { OpenRefusedError, type FileOperations, type OpenGuard } from "../src/environment/fileOperations.js";
import { accessOpenGuard, contentAccessReason, type AccessPolicy } from "../src/guards/access.js";
import { protectedPathList, protectedPathsOptionSchema, type ProtectedPath } from "../src/guards/protectedPaths.js";
import type { CredentialPattern } from "../src/guards/credentials.js";
import { LIMITS } from "../src/guards/limits.js";
import { writeTargetReason } from "../src/guards/writeTargets.js";
import { resolveRootDir, Workspace, WorkspacePathError } from "../src/workspace.js";
import { assertUsableRootDir, rootDirIsLocal } from "../src/environment/rootDir.js";
import { workspaceFromConfig } from "../src/context/thread.js";
import { FileToolCaches } from "./lineCounts.js";
import { checkedAs, parseOptions } from "../src/options.js";
import { toolAnswer, toolError } from "./toolResult.js";
import { registerFileToolProbe, type FileToolProbe, type FileToolTarget } from "../src/context/probes.js";
import { WorkbenchError } from "../src/workbenchError.js";

/** {@link FileToolOptions} with defaults applied and values validated. */
export interface ResolvedFileToolOptions {
  rootDir: string | undefined;
  confine: boolean;
  /** File access; per call, {@link threadFileOptions} puts the thread's own here. */
  fileOps: FileOperations;
  /** Resolves each thread's environment and file access. */
  environments: ThreadEnvironments;
  maxReadChars: number;
  /** 0 when images are turned off (`readImages: false`). */
  maxImageBytes: number;
  credentialPatterns: CredentialPattern[];
  redactSecrets: boolean;
  countLinesInlineMaxBytes: number;
  homeDir: string;
  allowHardLinks: boolean;
  protectedPaths: ProtectedPath[];
  caches: FileToolCaches;
}

/** What the file tools call on their FileOperations. */
const FILE_TOOL_METHODS = ["stat", "realpath", "readdir", "readBytes", "readLines", "countLines", "readText", "writeAtomic", "remove", "rename", "mkdirp"];

export const positiveInt = (name: string) => {
  const message = `${name} must be a positive integer`;
  return z.number(message).int(message).min(1, message).optional();
};

/** The fields of {@link fileToolOptionsSchema} with their documentation, for the schemas that take some of them (search_files). */
export const fileToolOptionsShape = {
  /** Root holding the per-thread directories (default `WORKBENCH_ROOT`, else `./agent_files`). */
  rootDir: z.string("rootDir must be a non-empty string").refine((s) => s.trim() !== "", "rootDir must be a non-empty string").optional(),
  /**
   * `true` (default): every path stays inside the thread's workspace. `false`: open mode — any
   * path the process can reach; relative paths still start in the workspace, `~` is the home
   * directory, and the device, credential and write-deny lists stay in force.
   */
  confine: z.boolean("confine must be a boolean").optional(),
  /**
   * Backend for file access (default: the thread environment's, else {@link LocalFileOperations}:
   * native fs, no shell). Given together with `environment`, `fileOps` wins for file access.
   */
  fileOps: z.custom<FileOperations>(() => true).optional(),
  /**
   * Where the thread's files are and its commands run: an Environment, or
   * `(threadId) => Environment` for one per thread. Its native `fileOps` is used, else a shell
   * over its `exec`; search_files runs ripgrep inside it when it has one. Default: this machine.
   */
  environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
  /** Largest read_file answer in characters (default 100,000); larger windows get guidance instead. */
  maxReadChars: positiveInt("maxReadChars"),
  /** Largest PNG/JPEG/GIF/WebP file read_file shows the model as an image block, in bytes (default 5 MiB). */
  maxImageBytes: z.number("maxImageBytes must be a positive integer").optional(), // checked below: ignored when images are off
  /**
   * Show images to the model as image blocks (default `true`). Turn it off for a model or
   * provider API that takes no images in tool results (OpenAI Chat Completions): images are then
   * refused with guidance.
   */
  readImages: z.boolean("readImages must be a boolean").optional(),
  /** Extra credential-file patterns (globs on the base name, or RegExps on the path). */
  credentialPatterns: checkedAs<CredentialPattern[]>(z.array(z.union([z.string(), z.instanceof(RegExp)]), "credentialPatterns must be an array of globs or RegExps")).optional(),
  /** Mask secrets in read_file output (default `true`). */
  redactSecrets: z.boolean("redactSecrets must be a boolean").optional(),
  /**
   * Files up to this size get their total line count before read_file answers (default 32 MiB);
   * bigger files answer at once with "at least N lines" while the count runs in the background
   * and is cached per (path, size, mtime) for the next read.
   */
  countLinesInlineMaxBytes: positiveInt("countLinesInlineMaxBytes"),
  /** Home directory for `~` and the write-deny list (default `os.homedir()`). */
  homeDir: z.string("homeDir must be an absolute path").refine((p) => path.isAbsolute(p), "homeDir must be an absolute path").optional(),
  /**
   * Read files that have more than one hard link (default `false`: refused, because another
   * name of the same file may be a credential file). See README "Security model".
   */
  allowHardLinks: z.boolean("allowHardLinks must be a boolean").optional(),
  /**
   * Workspace paths write_file and patch never write (shell rc files, `.git/config`,
   * `.git/hooks/`, `.vscode/`…; the list in src/guards/protectedPaths.ts, the same the sandbox
   * binds read-only): `{ paths?, extra?, allowGitConfig?, protectAgentInstructions? }`, or `false`.
   */
  protectedPaths: protectedPathsOptionSchema.optional(),
  /**
   * Where read_file keeps line counts and line indexes between calls (default: a new one per
   * tool). Tools given the same caches share them; its `close()` releases them.
   */
  caches: z.instanceof(FileToolCaches, { error: "caches must be a FileToolCaches" }).optional(),
};

/** The one check across fields: `maxImageBytes` only matters (and is only checked) when images are on. */
function checkImageBytes(o: { readImages?: boolean | undefined; maxImageBytes?: number | undefined }, ctx: z.RefinementCtx): void {
  const bytes = o.maxImageBytes;
  if (o.readImages !== false && bytes !== undefined && !(Number.isInteger(bytes) && bytes >= 1)) {
    ctx.addIssue({ code: "custom", message: "maxImageBytes must be a positive integer", path: ["maxImageBytes"] });
  }
}

/**
 * The checks on {@link FileToolOptions}, whose type is inferred from it. `fileOps` is checked by
 * `assertFileOperations`, which names the missing methods.
 */
export const fileToolOptionsSchema = z.strictObject(fileToolOptionsShape, "file tool options must be an object").superRefine(checkImageBytes);

/** Options of {@link createFileTools} and of each file tool (what callers write: the schema's input). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface FileToolOptions extends z.input<typeof fileToolOptionsSchema> {}

/** Applies defaults and validates; throws a TypeError naming the bad options (at construction, not per call). */
export function resolveFileToolOptions(options: FileToolOptions = {}): ResolvedFileToolOptions {
  parseOptions(fileToolOptionsSchema, options, "Invalid file tool options");
  return fileToolSettings(options);
}

/**
 * Defaults applied to options already checked with {@link fileToolOptionsSchema} (or a schema
 * extending it): no second parse. `environments` is the caller's when it resolved the
 * environment already (one per workbench); else one is made from `environment` / `fileOps`.
 */
export function fileToolSettings(options: FileToolOptions, environments?: ThreadEnvironments): ResolvedFileToolOptions {
  const fileOps = options.fileOps ?? environments?.fileOps;
  const environment = options.environment ?? environments?.environment;
  assertUsableRootDir(resolveRootDir(options.rootDir), { local: rootDirIsLocal({ environment, fileOps }) });
  assertFileOperations(fileOps, FILE_TOOL_METHODS);
  environments ??= new ThreadEnvironments({ environment, fileOps });
  return {
    rootDir: options.rootDir,
    confine: options.confine ?? true,
    fileOps: environments.fixedFileOps ?? new LocalFileOperations(),
    environments,
    maxReadChars: options.maxReadChars ?? LIMITS.readMaxChars,
    maxImageBytes: options.readImages === false ? 0 : (options.maxImageBytes ?? LIMITS.imageMaxBytes),
    credentialPatterns: options.credentialPatterns ?? [],
    redactSecrets: options.redactSecrets ?? true,
    countLinesInlineMaxBytes: options.countLinesInlineMaxBytes ?? LIMITS.readCountLinesMaxBytes,
    homeDir: options.homeDir ?? os.homedir(),
    allowHardLinks: options.allowHardLinks === true,
    protectedPaths: protectedPathList(options.protectedPaths),
    caches: options.caches ?? new FileToolCaches(),
  };
}

/**
 * The options for one call: `fileOps` becomes the calling thread's (its environment's file
 * access). Same object when every thread shares one backend. Rejects with a guiding message
 * when the thread's environment cannot be prepared.
 */
export async function threadFileOptions(opts: ResolvedFileToolOptions, config: unknown): Promise<ResolvedFileToolOptions> {
  if (opts.environments.fixedFileOps) return opts;
  const ws = workspaceFromConfig(config, opts.rootDir);
  try {
    return { ...opts, fileOps: await opts.environments.fileOpsFor(ws.threadId) };
  } catch (err) {
    throw new FileToolError((err as Error).message);
  }
}

/** An error whose message tells the model how to fix its call. */
export class FileToolError extends WorkbenchError {
  readonly code = "FILE_TOOL";
  override readonly name = "FileToolError";
  constructor(
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A resolved tool target. */
export interface FileTarget {
  ws: Workspace;
  /** Absolute system path. */
  systemPath: string;
  /** What the model sees: workspace-relative inside the workspace, absolute (open mode) elsewhere. */
  display: string;
}

/** Maps the model's path to a system path in confined or open mode; throws {@link FileToolError}. */
export async function resolveFileTarget(rawPath: unknown, config: unknown, opts: ResolvedFileToolOptions): Promise<FileTarget> {
  if (typeof rawPath !== "string" || rawPath.trim() === "") {
    throw new FileToolError('Missing "path": give a file path relative to the workspace, e.g. "notes/todo.md".');
  }
  const ws = workspaceFromConfig(config, opts.rootDir);
  if (opts.confine) {
    try {
      const systemPath = await ws.resolve(rawPath, opts.fileOps);
      return { ws, systemPath, display: ws.toAgentPath(systemPath) };
    } catch (err) {
      if (err instanceof WorkspacePathError) throw new FileToolError(err.message);
      throw err;
    }
  }
  if (rawPath.includes("\0")) throw new FileToolError(`Path "${rawPath.replace(/\0/g, "\\0")}" is not allowed: it contains a NUL byte.`);
  await ws.ensure(opts.fileOps);
  const trimmed = rawPath.trim();
  const expanded = trimmed === "~" ? opts.homeDir : /^~[\\/]/.test(trimmed) ? path.join(opts.homeDir, trimmed.slice(2)) : trimmed;
  const systemPath = path.resolve(ws.dir, expanded);
  return { ws, systemPath, display: ws.toAgentPath(systemPath) };
}

/** The access policy (src/guards/access.ts) for a resolved target's workspace. */
export function accessPolicyFor(target: FileTarget, opts: ResolvedFileToolOptions): AccessPolicy {
  return {
    workspaceDir: target.ws.realDirectory(),
    confine: opts.confine,
    credentialPatterns: opts.credentialPatterns,
    homeDir: opts.homeDir,
    allowHardLinks: opts.allowHardLinks,
    protectedPaths: opts.protectedPaths,
  };
}

/** The guard passed to FileOperations reads and writes: checked on what was actually opened. */
export function openGuardFor(kind: "read" | "write", target: FileTarget, opts: ResolvedFileToolOptions): OpenGuard {
  return accessOpenGuard(kind, accessPolicyFor(target, opts));
}

/**
 * Remote FileOperations (SSH, Docker, shell) cannot verify the descriptor they read from, so
 * after a read the target's real path is resolved and judged again: a link swapped to a
 * credential or outside file during the read turns the answer into a refusal. Local reads are
 * verified on the descriptor itself and skip this.
 */
export async function recheckAfterRead(target: FileTarget, opts: ResolvedFileToolOptions): Promise<void> {
  if (isLocalFileOperations(opts.fileOps)) return;
  const real = await opts.fileOps.realpath(target.systemPath).catch(() => undefined);
  const reason = real === undefined ? "was moved or removed while it was being read. Try again." : contentAccessReason(real, accessPolicyFor(target, opts));
  if (reason) throw new FileToolError(`"${target.display}" ${reason}`);
}

/** The real location a write would land on: the real path of the deepest existing ancestor plus the rest. */
export async function realTargetPath(fileOps: FileOperations, systemPath: string): Promise<string> {
  const rest: string[] = [];
  for (let probe = systemPath; ; ) {
    try {
      return path.join(await fileOps.realpath(probe), ...rest);
    } catch {
      const parent = path.dirname(probe);
      if (parent === probe) return systemPath;
      rest.unshift(path.basename(probe));
      probe = parent;
    }
  }
}

/**
 * Open mode only: refuses system paths and credential stores (raw and real path). Targets
 * inside the thread's own workspace are always allowed (the operator chose that root).
 */
export async function assertWritableTarget(target: FileTarget, opts: ResolvedFileToolOptions): Promise<void> {
  if (opts.confine) return;
  const real = await realTargetPath(opts.fileOps, target.systemPath);
  const inside = (p: string) => target.ws.toAgentPath(p) !== p;
  if (inside(target.systemPath) && inside(real)) return;
  const reason = writeTargetReason([target.systemPath, real], opts.homeDir);
  if (reason) throw new FileToolError(reason.replace(target.systemPath, target.display));
}

/**
 * A file tool's answer: its JSON payload ({@link toolAnswer}); a failure in the one error shape
 * ({@link toolError}: `payload.error` first, the rest as details); a successful answer with media
 * (an image block) is the JSON text block followed by the blocks.
 */
export function fileToolResult(
  toolName: string,
  config: unknown,
  payload: Record<string, unknown>,
  isError = false,
  blocks: readonly Record<string, unknown>[] = [],
): string | ToolMessage | Record<string, unknown>[] {
  if (isError) return toolError(toolName, config, String(payload.error), payload);
  const content = JSON.stringify(payload);
  // Media (an image block) follows the JSON text block; the model sees both.
  return blocks.length > 0 ? [{ type: "text", text: content }, ...blocks] : toolAnswer(toolName, config, content);
}

/** Turns anything thrown into a guiding error payload, with system paths rewritten to agent paths. */
export function errorPayload(err: unknown, ws: Workspace | undefined, display?: string): Record<string, unknown> {
  if (err instanceof FileToolError) return { error: err.message, ...(display ? { path: display } : {}), ...err.extra };
  if (err instanceof OpenRefusedError) return { error: `${display ? `"${display}"` : "The file"} ${err.reason}`, ...(display ? { path: display } : {}) };
  const e = err as NodeJS.ErrnoException;
  const code = e?.code;
  const where = display ? `"${display}"` : "the file";
  let message: string;
  if (code === "EACCES" || code === "EPERM") message = `Permission denied for ${where}. Choose a file you can access.`;
  else if (code === "EISDIR") message = `${where} is a directory, not a file.`;
  else if (code === "ENOSPC") message = "The disk is full; nothing was written.";
  else if (code === "ENAMETOOLONG") message = "The path is too long. Use a shorter name.";
  else message = `${where} could not be accessed: ${e?.message ?? String(err)}`;
  return { error: ws ? ws.rewrite(message) : message, ...(display ? { path: display } : {}) };
}

/** What a file tool's core returns: the JSON payload, and whether it answers an error. */
export interface FileToolOutcome {
  payload: Record<string, unknown>;
  isError: boolean;
  /** Content blocks after the JSON (e.g. an image block), on success only. */
  blocks?: Record<string, unknown>[];
}

/**
 * Builds one file tool: runs `run`, answers with {@link fileToolResult} (JSON; an error
 * ToolMessage when the call failed) and registers the guards' probe for it.
 */
export function defineFileTool<S extends z.ZodObject>(spec: {
  name: string;
  description: string;
  schema: S;
  run: (args: z.infer<S>, config: unknown) => Promise<FileToolOutcome>;
  probe: FileToolProbe;
}) {
  const fileTool = tool(
    async (args: z.infer<S>, config: unknown) => {
      let outcome: FileToolOutcome;
      try {
        outcome = await spec.run(args, config);
      } catch (err) {
        // e.g. the thread's environment could not be prepared: an answer, never a crash.
        outcome = { payload: errorPayload(err, undefined), isError: true };
      }
      return fileToolResult(spec.name, config, outcome.payload, outcome.isError, outcome.blocks);
    },
    { name: spec.name, description: spec.description, schema: spec.schema },
  );
  return registerFileToolProbe(fileTool, spec.probe);
}

/** Current mtime of a resolved target, `null` when missing or unresolvable. */
export async function probeTarget(rawPath: unknown, config: unknown, resolved: ResolvedFileToolOptions): Promise<FileToolTarget[]> {
  try {
    const opts = await threadFileOptions(resolved, config);
    const target = await resolveFileTarget(rawPath, config, opts);
    const s = await opts.fileOps.stat(target.systemPath).catch(() => null);
    return [{ key: target.systemPath, display: target.display, mtimeMs: s?.type === "file" ? s.mtimeMs : null }];
  } catch {
    return [];
  }
}
