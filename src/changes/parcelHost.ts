/**
 * Hosts the process's `@parcel/watcher` subscriptions in one worker thread. The native watcher's
 * callback handle keeps the thread that owns it alive and offers no `unref`; a worker thread can
 * be unreferenced, so a process that forgets `close()` still exits once its own work is done.
 * The worker is referenced only while a subscribe/unsubscribe is in flight (an awaited `start()`
 * must not be cut short).
 *
 * A worker torn down while parcel still watches crashes the whole process (its native threads
 * outlive the addon: SIGABRT or SIGSEGV at exit; parcel-bundler/watcher#264). So when the process
 * is about to exit with subscriptions left (`beforeExit`: its app never called `close()`), they are
 * all unsubscribed first (quietly: the process is going away; its trackers get no more events).
 *
 * The worker's code is inline (`eval: true`) and `require`s the addon by absolute path, so it
 * runs the same under tsx, the ESM build and the CJS build.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** An event as parcel reports it. */
export interface ParcelEvent {
  type: "create" | "update" | "delete";
  path: string;
}

interface Subscriber {
  onEvents(events: ParcelEvent[]): void;
  onError(err: Error): void;
}

interface Request {
  resolve(): void;
  reject(err: Error): void;
}

type Reply =
  | { id: number; op: "ready" | "closed" }
  | { id: number; op: "failed"; message: string }
  | { id: number; op: "events"; events: ParcelEvent[] }
  | { id: number; op: "error"; message: string };

// Works as CommonJS or as an ES module (an eval worker inherits the parent's --input-type).
const WORKER_SOURCE = `
(async () => {
  const { parentPort, workerData } = await import("node:worker_threads");
  const { createRequire } = await import("node:module");
  const text = (e) => String((e && e.message) || e);
  let watcher;
  const subs = new Map();
  parentPort.on("message", (msg) => {
    if (msg.op === "subscribe") {
      const sub = (async () => {
        watcher ??= createRequire(workerData.parcel)(workerData.parcel);
        return watcher.subscribe(msg.dir, (err, events) => {
          if (err) parentPort.postMessage({ id: msg.id, op: "error", message: text(err) });
          else parentPort.postMessage({ id: msg.id, op: "events", events: events.map((e) => ({ type: e.type, path: e.path })) });
        }, { ignore: msg.ignore });
      })();
      subs.set(msg.id, sub);
      sub.then(
        () => parentPort.postMessage({ id: msg.id, op: "ready" }),
        (err) => { subs.delete(msg.id); parentPort.postMessage({ id: msg.id, op: "failed", message: text(err) }); },
      );
    } else if (msg.op === "closeAll") {
      const all = [...subs.values()];
      subs.clear();
      Promise.all(all.map((sub) => Promise.resolve(sub).then((s) => s && s.unsubscribe()).catch(() => undefined)))
        .then(() => parentPort.postMessage({ id: msg.id, op: "closed" }));
    } else if (msg.op === "unsubscribe") {
      const sub = subs.get(msg.id);
      subs.delete(msg.id);
      Promise.resolve(sub)
        .then((s) => s && s.unsubscribe())
        .catch(() => undefined)
        .then(() => parentPort.postMessage({ id: msg.id, op: "closed" }));
    }
  });
})();
`;

function parcelPath(): string {
  // The CJS build has a real `require` (and no `import.meta.url`); ESM and tsx have the reverse.
  const load = typeof require === "function" && typeof require.resolve === "function" ? require : createRequire(import.meta.url);
  return load.resolve("@parcel/watcher");
}

class ParcelHost {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly subscribers = new Map<number, Subscriber>();
  private readonly requests = new Map<number, Request>();

  /** Subscribes to `dir`; resolves with the unsubscribe function once parcel is watching. */
  async subscribe(dir: string, ignore: string[], subscriber: Subscriber): Promise<() => Promise<void>> {
    const id = this.nextId++;
    this.subscribers.set(id, subscriber);
    try {
      await this.request(id, { op: "subscribe", id, dir, ignore });
      this.watching.add(id);
    } catch (err) {
      this.subscribers.delete(id);
      throw err;
    }
    return async () => {
      if (!this.subscribers.delete(id)) return;
      this.watching.delete(id);
      await this.request(id, { op: "unsubscribe", id }).catch(() => undefined);
    };
  }

  private request(id: number, message: Record<string, unknown>): Promise<void> {
    const worker = (this.worker ??= this.start());
    return new Promise<void>((resolve, reject) => {
      this.requests.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage(message);
    }).finally(() => {
      if (this.requests.size === 0) this.worker?.unref();
    });
  }

  /** How many subscriptions parcel holds now. */
  get watchingCount(): number {
    return this.watching.size;
  }

  private exitHook: (() => void) | undefined;
  /** Subscriptions parcel holds now (ready, not yet unsubscribed or closed at exit). */
  private readonly watching = new Set<number>();

  /**
   * The process is about to exit (its event loop is empty) with subscriptions left: unsubscribes
   * them all, keeping the worker referenced until parcel has stopped (then `beforeExit` comes
   * again, with nothing left to do). Their trackers fall back as when the thread dies.
   */
  private beforeExit(): void {
    if (!this.worker || this.watching.size === 0) return;
    this.watching.clear();
    const id = this.nextId++;
    void this.request(id, { op: "closeAll", id }).catch(() => undefined);
  }

  private start(): Worker {
    if (!this.exitHook) process.on("beforeExit", (this.exitHook = () => this.beforeExit()));
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { parcel: parcelPath() } });
    worker.unref();
    worker.on("message", (reply: Reply) => this.onReply(reply));
    worker.on("error", (err) => this.lost(worker, err));
    worker.on("exit", (code) => this.lost(worker, new Error(`parcel watcher thread exited (${code})`)));
    return worker;
  }

  private onReply(reply: Reply): void {
    if (reply.op === "events") {
      this.subscribers.get(reply.id)?.onEvents(reply.events);
      return;
    }
    if (reply.op === "error") {
      this.subscribers.get(reply.id)?.onError(new Error(reply.message));
      return;
    }
    const request = this.requests.get(reply.id);
    this.requests.delete(reply.id);
    if (reply.op === "failed") request?.reject(new Error(reply.message));
    else request?.resolve();
  }

  /** The thread died: every subscriber falls back (their trackers poll), the next use restarts it. */
  private lost(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    const requests = [...this.requests];
    const subscribers = [...this.subscribers];
    this.requests.clear();
    this.subscribers.clear();
    this.watching.clear();
    for (const [, r] of requests) r.reject(err);
    // A subscription still being set up learns of it through its rejected request.
    for (const [id, s] of subscribers) if (!requests.some(([rid]) => rid === id)) s.onError(err);
  }
}

let host: ParcelHost | undefined;

/** The process-wide host (the worker starts on the first subscription). */
export function parcelHost(): ParcelHost {
  return (host ??= new ParcelHost());
}
