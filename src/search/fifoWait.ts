/**
 * Notices a local ripgrep stuck on a FIFO. ripgrep opens every `.gitignore` it walks past with a
 * plain blocking open (ripgrep 13/14 check no file type first), so `mkfifo a/.gitignore` in a
 * workspace held each search for its whole time limit and returned nothing. No flag turns that
 * off short of ignoring every .gitignore, and finding the FIFOs first would cost a second walk of
 * the tree, so the search is watched instead: on Linux each of ripgrep's threads names its kernel
 * wait channel in `/proc/PID/task/TID/wchan`, and a thread waiting for a FIFO's writer
 * (`wait_for_partner`) or reading an empty pipe (`pipe_read`) is stuck for good. The caller stops
 * ripgrep and answers with the JS engine, which never opens a non-regular file.
 */
import { readdir, readFile } from "node:fs/promises";

/** How often ripgrep's threads are looked at (a few small /proc reads each time). */
const POLL_MS = 200;
/** Kernel functions a thread blocked on a FIFO or pipe waits in (ripgrep reads no pipe of its own). */
const FIFO_WAITS = new Set(["wait_for_partner", "fifo_open", "pipe_read", "anon_pipe_read"]);

/**
 * Calls `onStuck` once if a thread of process `pid` waits on a FIFO; returns the function that
 * stops watching. A no-op where `/proc` has no wait channels (not Linux).
 */
export function watchFifoWaits(pid: number, onStuck: () => void): () => void {
  if (process.platform !== "linux") return () => undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const look = async () => {
    const threads = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
    for (const tid of threads) {
      if (stopped) return;
      const wchan = await readFile(`/proc/${pid}/task/${tid}/wchan`, "utf8").catch(() => "");
      if (FIFO_WAITS.has(wchan.trim())) {
        stopped = true;
        onStuck();
        return;
      }
    }
    if (!stopped) timer = setTimeout(() => void look(), POLL_MS);
  };
  timer = setTimeout(() => void look(), POLL_MS);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
