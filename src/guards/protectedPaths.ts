/**
 * Protected paths inside a workspace: files and directories that other programs run or obey
 * later (shell rc files, git's config and hooks, editor and agent configuration), a known
 * persistence route for a compromised agent. The one list: the bubblewrap sandbox binds them
 * read-only (and removes any it finds created during a call), the file tools refuse to write them.
 * `@anthropic-ai/sandbox-runtime` always denies writes to the same set; `.git/objects`, `refs` and
 * `index` stay writable so git keeps working.
 */
import { z } from "zod";

/** Workspace-relative paths protected by default; a trailing `/` marks a directory (all of it). */
export const DEFAULT_PROTECTED_PATHS: readonly string[] = [
  ".bashrc",
  ".bash_profile",
  ".bash_login",
  ".bash_logout",
  ".zshrc",
  ".zprofile",
  ".zshenv",
  ".zlogin",
  ".profile",
  ".gitconfig",
  ".gitmodules",
  ".ripgreprc",
  ".mcp.json",
  ".vscode/",
  ".idea/",
  ".git/hooks/",
];
/** git's own configuration: protected unless `allowGitConfig`. */
export const GIT_CONFIG_PATHS: readonly string[] = [".git/config"];
/** Agent instruction files: protected only with `protectAgentInstructions` (deepagents' memory edits AGENTS.md on purpose). */
export const AGENT_INSTRUCTION_PATHS: readonly string[] = ["AGENTS.md", "CLAUDE.md", ".cursorrules"];

const relativeEntry = z
  .string()
  .min(1)
  .refine((p) => !p.includes("\0") && !p.startsWith("/") && !p.split("/").some((s) => s === ".." || s === "."), "must be a workspace-relative path without '.', '..' or NUL");

/** The `protectedPaths` options (strict: unknown keys throw). */
export const protectedPathsOptionsSchema = z.strictObject({
  /** Replace the default list (each workspace-relative; a trailing `/` protects a whole directory). */
  paths: z.array(relativeEntry).optional(),
  /** More paths on top of the list. */
  extra: z.array(relativeEntry).optional(),
  /** Let commands and file tools write `.git/config` (default false). */
  allowGitConfig: z.boolean().optional(),
  /** Protect AGENTS.md, CLAUDE.md and .cursorrules too (default false). */
  protectAgentInstructions: z.boolean().optional(),
});
export type ProtectedPathsOptions = z.input<typeof protectedPathsOptionsSchema>;

/** `false` turns protection off; an object adjusts the list. */
export const protectedPathsOptionSchema = z.union([z.literal(false), protectedPathsOptionsSchema]);
export type ProtectedPathsOption = z.input<typeof protectedPathsOptionSchema>;

/** A resolved list: each entry without its trailing `/`, and whether it is a whole directory. */
export interface ProtectedPath {
  path: string;
  directory: boolean;
}

/** The protected paths for an option value (undefined: the defaults). */
export function protectedPathList(option: ProtectedPathsOption | undefined = {}): ProtectedPath[] {
  if (option === false) return [];
  const entries = [
    ...(option.paths ?? DEFAULT_PROTECTED_PATHS),
    ...(option.allowGitConfig ? [] : GIT_CONFIG_PATHS),
    ...(option.protectAgentInstructions ? AGENT_INSTRUCTION_PATHS : []),
    ...(option.extra ?? []),
  ];
  const seen = new Map<string, ProtectedPath>();
  for (const entry of entries) {
    const directory = entry.endsWith("/");
    const p = entry.replace(/\/+$/, "");
    if (p !== "" && !seen.has(p)) seen.set(p, { path: p, directory });
  }
  return [...seen.values()];
}

/**
 * Why writing the workspace-relative `relPath` (`/` separators) is refused, or `undefined`: it is
 * a protected path, lies below a protected directory, or is a directory holding one (deleting or
 * moving it would take the protected path along). A predicate: callers put the path first.
 */
export function protectedPathReason(relPath: string, list: readonly ProtectedPath[] = protectedPathList()): string | undefined {
  const rel = relPath.replace(/\/+$/, "");
  if (rel === "" || rel === "." || rel.startsWith("../") || rel === "..") return undefined;
  for (const entry of list) {
    const hit = rel === entry.path || rel.startsWith(`${entry.path}/`) || entry.path.startsWith(`${rel}/`);
    if (hit) return PROTECTED_PATH_REASON(entry.path + (entry.directory ? "/" : ""));
  }
  return undefined;
}

const PROTECTED_PATH_REASON = (entry: string) =>
  `is protected (${entry}: shell start-up files, git config and hooks, editor and agent configuration run or steer other programs later), ` +
  "so the agent does not write, move or delete it. Put the content in an ordinary file and ask the user to install it.";
