/**
 * A request/reply client for an `eval` worker thread (its code inline, so there is no separate
 * file in the build): replies are matched to requests by `id`, the worker is referenced only
 * while a request is in flight (an idle worker never keeps a process alive), and a worker that
 * dies rejects what it had and is started afresh on the next request.
 */
import { Worker, type ResourceLimits } from "node:worker_threads";

export class EvalWorker<Reply extends { id: number }> {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();

  constructor(
    private readonly source: string,
    /** Named in the error when the worker exits. */
    private readonly label: string,
    private readonly resourceLimits?: ResourceLimits,
  ) {}

  /** Posts `message` (with a fresh `id`); resolves with the worker's reply to it. */
  request(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...message, id }, transfer);
    }).finally(() => {
      if (this.pending.size === 0) this.worker?.unref();
    });
  }

  private start(): Worker {
    const worker = new Worker(this.source, { eval: true, ...(this.resourceLimits ? { resourceLimits: this.resourceLimits } : {}) });
    worker.unref();
    worker.on("message", (reply: Reply) => {
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      p?.resolve(reply);
    });
    const lost = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const pending = [...this.pending.values()];
      this.pending.clear();
      for (const p of pending) p.reject(err);
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the ${this.label} worker exited (${code})`)));
    return worker;
  }
}
