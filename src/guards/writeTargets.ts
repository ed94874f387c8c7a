/**
 * Where write_file and patch may never write in open mode (`confine: false`): system
 * directories and the user's credential stores. Checked on both the path as given and its real
 * path, so a symlink in the workspace cannot smuggle a write into `~/.ssh`.
 */
import os from "node:os";
import path from "node:path";

/** System prefixes (and exact paths) that are never written. */
export const SENSITIVE_SYSTEM_PREFIXES: readonly string[] = [
  "/etc/", "/boot/", "/usr/lib/systemd/", "/lib/systemd/", "/private/etc/", "/private/var/", "/proc/", "/sys/", "/dev/",
];
export const SENSITIVE_SYSTEM_EXACT: readonly string[] = [
  "/var/run/docker.sock", "/run/docker.sock", "/etc/sudoers", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/hosts",
];

/** Home-relative entries (a trailing `/` means the whole directory). */
export const HOME_WRITE_DENY: readonly string[] = [
  ".ssh/", ".aws/", ".gnupg/", ".kube/", ".docker/", ".config/gh/", ".config/gcloud/", ".azure/",
  ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass",
  ".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile",
];

function posix(p: string): string {
  return path.posix.normalize(p.replace(/\\/g, "/"));
}

function deniedBy(candidate: string, home: string): string | undefined {
  const p = posix(candidate);
  for (const exact of SENSITIVE_SYSTEM_EXACT) if (p === exact) return exact;
  for (const prefix of SENSITIVE_SYSTEM_PREFIXES) if (p === prefix.slice(0, -1) || p.startsWith(prefix)) return prefix;
  const h = posix(home).replace(/\/+$/, "");
  for (const entry of HOME_WRITE_DENY) {
    const full = `${h}/${entry}`;
    if (entry.endsWith("/") ? p === full.slice(0, -1) || p.startsWith(full) : p === full) return `~/${entry}`;
  }
  return undefined;
}

/**
 * Why writing to any of `candidates` (the raw absolute path, its real path, …) is refused, or
 * `undefined`. `home` defaults to the current user's home directory.
 */
export function writeTargetReason(candidates: readonly string[], home: string = os.homedir()): string | undefined {
  for (const c of candidates) {
    if (typeof c !== "string" || c === "") continue;
    const hit = deniedBy(c, home);
    if (hit) {
      return `Writing to "${c}" is refused: it is under the protected location "${hit}" (system files and credential stores are never written by this tool). Write inside the workspace instead.`;
    }
  }
  return undefined;
}
