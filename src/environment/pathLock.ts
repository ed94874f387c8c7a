/**
 * A per-path async lock: callers that touch the same file run one after another, callers on
 * different files run freely. In-process only (parallel tool calls of one agent run share the
 * process); it does not lock against other processes — atomic rename covers those.
 */
const tails = new Map<string, Promise<void>>();

/** Runs `fn` once every earlier holder of `key` (usually an absolute path) has finished. */
export async function withPathLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = previous.then(() => mine);
  tails.set(key, tail);
  try {
    await previous;
    return await fn();
  } finally {
    release();
    // The map stays small: the last holder removes its entry.
    if (tails.get(key) === tail) tails.delete(key);
  }
}

/** Locks several keys in a fixed (sorted) order, so two multi-file writers cannot deadlock. */
export async function withPathLocks<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
  const sorted = [...new Set(keys)].sort();
  const run = (i: number): Promise<T> => (i >= sorted.length ? fn() : withPathLock(sorted[i]!, () => run(i + 1)));
  return run(0);
}
