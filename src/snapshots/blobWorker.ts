/**
 * The store's writer of small blobs, in a worker thread with synchronous calls: a baseline of
 * 100k files costs about 12 system calls a file (open, fstat, read, close; then the blob's
 * existence check, temp write and rename), and each async call pays two libuv pool hand-offs on
 * top (100k small files: ~16-30 s async on the main thread, ~4.6 s synchronous here).
 *
 * Two requests: `readFiles` reads regular files of the workspace *by descriptor* — each directory
 * reached from the root with `O_DIRECTORY | O_NOFOLLOW` relative to its parent (`/proc/self/fd/N`
 * on Linux), each file opened `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` and read only when its `fstat`
 * is the regular file the caller listed (same device and inode) — and stores each as a blob;
 * `storeBuffers` stores given bytes. Both hash with sha256 and store a blob once: brotli-compressed
 * under `zblobs/` when at least `compressFrom` bytes and the result saves 1/32, else raw under
 * `blobs/`, each written to a temporary name and renamed. One worker per process, unreferenced
 * while idle.
 */
import { EvalWorker } from "../environment/evalWorker.js";

/**
 * The worker's heap is capped: it holds one batch at a time, and a small old generation makes V8
 * collect before the process's memory grows (measured: peak RSS of a 100k-file baseline).
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 };

// CommonJS or ES module (an eval worker inherits the parent's --input-type): no top-level import.
const WORKER_SOURCE = `
(async () => {
  const { parentPort } = await import("node:worker_threads");
  const fs = await import("node:fs");
  const path = await import("node:path");
  const zlib = await import("node:zlib");
  const { createHash, randomBytes } = await import("node:crypto");
  const C = fs.constants;
  const DIR = C.O_RDONLY | (C.O_DIRECTORY || 0) | (C.O_NOFOLLOW || 0);
  const FILE = C.O_RDONLY | (C.O_NOFOLLOW || 0) | (C.O_NONBLOCK || 0) | (C.O_NOCTTY || 0);
  const viaFd = process.platform === "linux";
  const made = new Set();
  // Temporary names unique in this process (O_EXCL / "wx" guard against anyone else).
  const tmpPrefix = randomBytes(4).toString("hex") + "-";
  let tmpSeq = 0;
  const store = (msg, data) => {
    const h = createHash("sha256").update(data).digest("hex");
    const at = (base) => path.join(base, h.slice(0, 2), h.slice(2));
    if (fs.existsSync(at(msg.zblobs)) || fs.existsSync(at(msg.blobs))) return h;
    let body = data;
    let base = msg.blobs;
    if (data.length >= msg.compressFrom) {
      const packed = zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: msg.quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } });
      if (packed.length <= data.length - data.length / 32) { body = packed; base = msg.zblobs; }
    }
    const p = at(base);
    const dir = path.dirname(p);
    if (!made.has(dir)) { fs.mkdirSync(dir, { recursive: true }); made.add(dir); }
    const tmp = p + ".tmp-" + tmpPrefix + (++tmpSeq).toString(16);
    fs.writeFileSync(tmp, body, { mode: 0o600, flag: "wx" });
    fs.renameSync(tmp, p);
    return h;
  };
  const openDir = (root, rel) => {
    let fd = fs.openSync(root, C.O_RDONLY | (C.O_DIRECTORY || 0));
    let real = root;
    if (rel === "") return { fd, real };
    for (const seg of rel.split("/")) {
      let next;
      try { next = fs.openSync((viaFd ? "/proc/self/fd/" + fd : real) + "/" + seg, DIR); }
      catch (e) { fs.closeSync(fd); throw e; }
      fs.closeSync(fd);
      fd = next;
      real = real + "/" + seg;
    }
    return { fd, real };
  };
  const readOne = (via, f) => {
    let fd;
    try { fd = fs.openSync(via + "/" + f.name, FILE); }
    catch (e) { return e && e.code === "ELOOP" ? "changed-while-read" : e && e.code === "ENOENT" ? "gone" : "unreadable"; }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile() || st.ino !== f.ino || st.dev !== f.dev) return "changed-while-read";
      const size = Math.min(st.size, f.size);
      const buf = Buffer.allocUnsafe(size);
      let got = 0;
      while (got < size) { const n = fs.readSync(fd, buf, got, size - got, got); if (n === 0) break; got += n; }
      const data = got === size ? buf : buf.subarray(0, got);
      return [store(f.msg, data), data.length, st.mtimeMs];
    } catch { return "unreadable"; }
    finally { fs.closeSync(fd); }
  };
  // A restore's entry: the blob's raw bytes to a temporary file in the store, modes and mtime set,
  // then renamed over a recorded entry (never following a link there) or linked to a free name.
  const putOne = (msg, via, item) => {
    const at = (base) => path.join(base, item.h.slice(0, 2), item.h.slice(2));
    let data;
    try { data = zlib.brotliDecompressSync(fs.readFileSync(at(msg.zblobs))); }
    catch (e) { if (!e || e.code !== "ENOENT") throw e; data = fs.readFileSync(at(msg.blobs)); }
    // One descriptor for write, mode and mtime; a name unique in this process (O_EXCL guards the rest).
    const tmp = path.join(msg.storeDir, "restore-tmp-" + tmpPrefix + (++tmpSeq).toString(16));
    const fd = fs.openSync(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | (C.O_NOFOLLOW || 0), 0o600);
    let placed = false;
    let open = true;
    try {
      let off = 0;
      while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
      fs.fchmodSync(fd, item.m & 0o777);
      fs.futimesSync(fd, item.t / 1000, item.t / 1000);
      open = false;
      fs.closeSync(fd);
      if (item.replace) { fs.renameSync(tmp, via + "/" + item.name); placed = true; }
      else { fs.linkSync(tmp, via + "/" + item.name); }
      return "ok";
    } catch (e) {
      // Only a descriptor still ours: a closed number may already belong to another thread.
      if (open) { try { fs.closeSync(fd); } catch {} }
      if (e && (e.code === "EISDIR" || e.code === "ENOTEMPTY" || e.code === "EEXIST")) return "kept";
      throw e;
    } finally { if (!placed) { try { fs.unlinkSync(tmp); } catch {} } }
  };
  parentPort.on("message", (msg) => {
    try {
      if (msg.op === "putEntries") {
        parentPort.postMessage({ id: msg.id, results: [msg.items.map((item) => putOne(msg, msg.via, item))] });
        return;
      }
      if (msg.op === "storeBuffers") {
        parentPort.postMessage({ id: msg.id, hashes: msg.buffers.map((b) => store(msg, Buffer.from(b.buffer, b.byteOffset, b.byteLength))) });
        return;
      }
      const results = [];
      for (const d of msg.dirs) {
        let held;
        try { held = openDir(msg.root, d.rel); } catch { results.push(d.files.map(() => "gone")); continue; }
        try {
          const via = viaFd ? "/proc/self/fd/" + held.fd : held.real;
          results.push(d.files.map((f) => readOne(via, { ...f, msg })));
        } finally { fs.closeSync(held.fd); }
      }
      parentPort.postMessage({ id: msg.id, results });
    } catch (err) {
      parentPort.postMessage({ id: msg.id, error: String((err && err.message) || err) });
    }
  });
})();
`;

/** Where a store keeps blobs, and how it compresses them. */
export interface BlobLayout {
  blobs: string;
  zblobs: string;
  compressFrom: number;
  quality: number;
}

/** A file to read: its name in directory `rel` and what its listing said. */
export interface FileToRead {
  name: string;
  ino: number;
  dev: number;
  size: number;
}

/** A stored file (`[hash, bytes read, mtimeMs]`) or why it was not read. */
export type ReadResult = [string, number, number] | "changed-while-read" | "unreadable" | "gone";

interface Reply {
  id: number;
  error?: string;
  results?: (ReadResult | "ok" | "kept")[][];
  hashes?: string[];
}

let shared: EvalWorker<Reply> | undefined;

async function request(message: Record<string, unknown>): Promise<Reply> {
  const reply = await (shared ??= new EvalWorker<Reply>(WORKER_SOURCE, "blob", WORKER_LIMITS)).request(message);
  if (reply.error !== undefined) throw new Error(`storing blobs failed: ${reply.error}`);
  return reply;
}

/** Reads the listed files of the workspace `root` by descriptor and stores them; one result per file. */
export async function readFilesIntoStore(root: string, dirs: { rel: string; files: FileToRead[] }[], layout: BlobLayout): Promise<ReadResult[][]> {
  return ((await request({ op: "readFiles", root, dirs, ...layout })).results ?? []) as ReadResult[][];
}

/** An entry a restore writes: a regular file's blob, modes and mtime, and whether a recorded entry is replaced. */
export interface EntryToPut {
  name: string;
  h: string;
  m: number;
  t: number;
  replace: boolean;
}

/**
 * Writes restored files into the directory `via` (a descriptor path the caller holds open) from
 * the store; per entry `"ok"`, or `"kept"` when an unrecorded entry holds the name.
 */
export async function putEntries(via: string, items: EntryToPut[], layout: BlobLayout & { storeDir: string }): Promise<("ok" | "kept")[]> {
  return ((await request({ op: "putEntries", via, items, ...layout })).results?.[0] ?? []) as ("ok" | "kept")[];
}

/** Stores `buffers` as blobs; returns their hashes. */
export async function storeBuffers(buffers: Buffer[], layout: BlobLayout): Promise<string[]> {
  return (await request({ op: "storeBuffers", buffers, ...layout })).hashes ?? [];
}
