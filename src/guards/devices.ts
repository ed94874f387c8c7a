/**
 * Paths that must never be opened by read_file: reading them blocks forever (`/dev/stdin`,
 * `/dev/tty`, a FIFO), never ends (`/dev/zero`, `/dev/urandom`) or leaks the process's own
 * secrets (`/proc/self/environ`). Checked on the literal path before anything is opened, and
 * again on the real path in open mode.
 */
import path from "node:path";
import type { FileStat } from "../environment/fileOperations.js";

const DEVICE_FILES = new Set([
  "zero", "random", "urandom", "full", "null", "stdin", "stdout", "stderr", "tty", "console",
  "ptmx", "mem", "kmem", "port", "kmsg",
]);
const PROC_SECRETS = new Set([
  "environ", "cmdline", "mem", "maps", "smaps", "smaps_rollup", "numa_maps", "map_files", "pagemap", "auxv", "syscall",
  "stack", "wchan", "personality", "timers", "io", "attr", "coredump_filter", "clear_refs",
]);
const PROC_PID = /^(?:self|thread-self|\d+)$/;

function posixNormal(p: string): string {
  return path.posix.normalize(p.replace(/\\/g, "/"));
}

/**
 * Why `literalPath` is a device or process-internal path (a guiding message), or `undefined`.
 * No symlink resolution: `/dev/stdin` must be refused by name, not followed.
 */
export function devicePathReason(literalPath: string): string | undefined {
  if (typeof literalPath !== "string" || !literalPath.startsWith("/")) return undefined;
  // Every refused path names a top directory `dev` or `proc`: most paths need no normalising.
  if (!literalPath.includes("dev") && !literalPath.includes("proc")) return undefined;
  const parts = posixNormal(literalPath).split("/").filter(Boolean);
  const [top, second, third] = parts;
  if (top === "dev") {
    if (second === "fd" || (second !== undefined && DEVICE_FILES.has(second)) || /^(tty|pts|vcs)/.test(second ?? "")) {
      return `"${literalPath}" is a device, not a file: reading it would block or never end. Read a regular file instead.`;
    }
    return undefined;
  }
  if (top === "proc") {
    if (second === "kcore" || second === "kmsg") return `"${literalPath}" is kernel memory, not a file. Read a regular file instead.`;
    if (second !== undefined && PROC_PID.test(second)) {
      // /proc/<pid>/task/<tid>/… has the same entries one level down.
      const rest = third === "task" && parts.length >= 5 ? parts.slice(4) : parts.slice(2);
      const [entry] = rest;
      if (entry === "fd" || entry === "fdinfo" || (entry !== undefined && (PROC_SECRETS.has(entry) || entry.startsWith("smaps")))) {
        return `"${literalPath}" exposes a process's file descriptors, environment or memory (which may hold secrets). It is never read.`;
      }
    }
  }
  return undefined;
}

/** Why a stat result is not a regular file (FIFO, socket, device, directory), or `undefined`. */
export function nonRegularFileReason(agentPath: string, s: FileStat): string | undefined {
  if (s.type === "file") return undefined;
  if (s.type === "directory") {
    return `"${agentPath}" is a directory. Use search_files with target="files" (or a tree/ls tool) to list it, then read one of its files.`;
  }
  return `"${agentPath}" is not a regular file (a FIFO, socket or device); reading it could block forever, so it is never opened.`;
}
