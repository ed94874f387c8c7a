/**
 * WorkbenchBackend's options: one strict zod schema (types inferred from it), parsed once at
 * construction; unknown keys throw naming the accepted ones. The sandbox fields of `execute` are
 * run_command's own schemas (src/environment/runShellCommand.ts).
 */
import { z } from "zod";
import { commandSandboxSchema } from "../environment/runShellCommand.js";
import type { EnvironmentOption } from "../environment/environment.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption } from "../environment/threadEnvironment.js";
import type { FileOperations } from "../environment/fileOperations.js";
import type { CredentialPattern } from "../guards/credentials.js";

const positiveInt = (name: string) => {
  const message = `${name} must be a positive integer`;
  return z.number(message).int(message).min(1, message).optional();
};

/** Settings of WorkbenchBackend's `execute`. */
export const workbenchExecuteOptionsSchema = z.strictObject({
  /** Seconds before a command and its children are killed (default 60). */
  timeoutSeconds: z.number("execute.timeoutSeconds must be a positive number").positive("execute.timeoutSeconds must be a positive number").finite("execute.timeoutSeconds must be a positive number").optional(),
  /** Output cap in characters, head and tail kept (default 30,000). */
  maxOutputChars: positiveInt("execute.maxOutputChars"),
  /** Run commands the danger screen refuses (only behind human approval). Default false. */
  allowDangerous: z.boolean().optional(),
  /** Variables passed on purpose, added after scrubbing. */
  env: z.record(z.string(), z.string()).optional(),
  /** Sandbox for commands on this machine (default `"auto"`), as run_command's `sandbox` option. */
  sandbox: commandSandboxSchema.sandbox,
  /** Network inside the sandbox (default false), as run_command's `network` option (`true` or an allow-list). */
  network: commandSandboxSchema.network,
  /** Credentials commands see only as sentinels, as run_command's `secrets` option. */
  secrets: commandSandboxSchema.secrets,
});

/** Options of WorkbenchBackend. */
export const workbenchBackendOptionsSchema = z.strictObject(
  {
    /** Root holding the thread directories (else `WORKBENCH_ROOT`, else `./agent_files`). */
    rootDir: z.string("rootDir must be a non-empty string").min(1, "rootDir must be a non-empty string").optional(),
    /**
     * Pin the backend to one thread. Unset (the usual case), each call uses the thread of the run
     * it serves (`configurable.thread_id`), so one backend instance serves every thread.
     */
    threadId: z.string("threadId must be a string").optional(),
    /**
     * File operations (default: the environment's file access, else native local fs). Given with
     * `environment`, `fileOps` wins for file access and the environment runs `execute`.
     */
    fileOps: z.custom<FileOperations>((v) => typeof v === "object" && v !== null, "fileOps must implement FileOperations").optional(),
    /**
     * Where each thread's files are and its commands run: an Environment, or
     * `(threadId) => Environment` for one per thread. Default: this machine.
     */
    environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
    /**
     * Implement deepagents' sandbox protocol (`execute` + `id`), so createDeepAgent adds its
     * `execute` tool, run in the thread's environment exactly as `run_command` runs (danger screen,
     * scrubbed variables, timeout, output cap, secret masking, workspace paths). Default false:
     * a shell reaches beyond the file guards; enable it deliberately.
     */
    execute: z.union([z.boolean(), workbenchExecuteOptionsSchema], "execute must be true or an options object").optional(),
    /** Extra credential-file patterns (globs on the base name, or RegExps on the path). */
    credentialPatterns: z.array(z.custom<CredentialPattern>((v) => typeof v === "string" || v instanceof RegExp), "credentialPatterns must be an array of globs or RegExps").readonly().optional(),
    /** Redact secrets in read and grep output (default true). */
    redact: z.boolean("redact must be a boolean").optional(),
    /** Most characters one `read` returns before asking for a smaller window (default 100,000). */
    maxReadChars: positiveInt("maxReadChars"),
    /** Lines longer than this are cut in `read` and `grep` output (default 2,000). */
    maxLineChars: positiveInt("maxLineChars"),
    /** Largest PNG/JPEG/GIF/WebP file `read` returns as image bytes, in bytes (default 5 MiB). */
    maxImageBytes: positiveInt("maxImageBytes"),
    /** Return images for deepagents' image blocks (default true); false refuses them with guidance. */
    readImages: z.boolean("readImages must be a boolean").optional(),
    /**
     * Return audio and video files (recognised by their bytes, up to 10 MiB) for deepagents' audio
     * and video blocks, as deepagents' own backends do (default true); false refuses them.
     */
    readAudioVideo: z.boolean("readAudioVideo must be a boolean").optional(),
    /**
     * What `read` returns for a PDF: `"text"` (default) its extracted text, windowed by lines and
     * redacted — works with every model; `"file"` its bytes (up to 10 MiB), which deepagents'
     * read_file hands the model as a `file` block, as deepagents' own backends do (the model must
     * accept PDF input; the text is then not redacted).
     */
    pdfAs: z.enum(["text", "file"], 'pdfAs must be "text" or "file"').optional(),
    /** Most files `glob`/`grep` visit, and entries `delete` removes, before a truncated result or a refusal (default 20,000). */
    maxWalkFiles: positiveInt("maxWalkFiles"),
    /**
     * Ignored (deprecated): accepted so existing callers keep working.
     * @deprecated Ignored: `grep` runs on the package's search engine, whose per-file limit is
     * `LIMITS.searchJsMaxFileBytes` (ripgrep has none). Accepted so existing callers keep working.
     */
    maxGrepFileBytes: positiveInt("maxGrepFileBytes"),
    /** Directory names never entered when `glob` looks for symlinks to files (default `.git`, `node_modules`). */
    skipDirs: z.array(z.string(), "skipDirs must be an array of directory names").readonly().optional(),
    /** Read files with more than one hard link (default false: refused; see README "Security model"). */
    allowHardLinks: z.boolean("allowHardLinks must be a boolean").optional(),
    /** Largest file `uploadFiles`/`downloadFiles` move, in bytes (default 50 MB). */
    maxTransferBytes: positiveInt("maxTransferBytes"),
  },
  "WorkbenchBackend options must be an object",
);

/** Options of WorkbenchBackend (inferred from {@link workbenchBackendOptionsSchema}). */
export type WorkbenchBackendOptions = z.input<typeof workbenchBackendOptionsSchema>;
/** Settings of WorkbenchBackend's `execute` (inferred from {@link workbenchExecuteOptionsSchema}). */
export type WorkbenchExecuteOptions = z.input<typeof workbenchExecuteOptionsSchema>;
