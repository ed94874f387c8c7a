/**
 * The store's writer of small blobs, in a worker thread with synchronous calls: a baseline of
 * 100k files costs about 12 system calls a file (open, fstat, read, close; then the blob's
 * existence check, temp write and rename), and each async call pays two libuv pool hand-offs on
 * top (100k small files: ~16-30 s async on the main thread, ~4.6 s synchronous here).
 *
 * Requests: `readFiles` reads regular files of the workspace *by descriptor* — each directory
 * reached from the root with `O_DIRECTORY | O_NOFOLLOW` relative to its parent (`/proc/self/fd/N`
 * on Linux), each file opened `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` and read only when its `fstat`
 * is the regular file the caller listed (same device and inode) — and stores each as a blob;
 * `storeBuffers` stores given bytes; `storeHashed` stores what a list worker read and hashed by
 * the same rules (listWorker.ts `readListedFiles`: while reads wait, the list workers take some,
 * so a baseline's reads use two cores; {@link readFilesIntoStore} shares them out). All hash with
 * sha256 and store a blob once: brotli-compressed
 * when at least `compressFrom` bytes and the result saves 1/32, else raw; appended to this
 * process's pack when the stored form is at most `packMax` bytes (one write per MiB of entries,
 * done before the reply), else one file under `zblobs/` or `blobs/` (temporary name, renamed).
 * The worker also holds each store's pack index (hash → pack, offset; ~100 bytes a blob, in the
 * worker's capped heap, not the main thread's) and serves packed reads (`getPacked`, restores'
 * `putEntries`), sizes and the packs' GC, and reads the store's tree texts for a cold start
 * (`readStoreFiles`). One worker per process, unreferenced while idle.
 * Pack format: format.ts.
 */
import { EvalWorker } from "../environment/evalWorker.js";
import { LIST_WORKERS, readListedFiles } from "../environment/listWorker.js";
import { WORKER_DIR_WALK } from "../environment/workerDirWalk.js";

/**
 * The worker's heap is capped: it holds one batch at a time, and a small old and young generation
 * make V8 collect before the process's memory grows (measured: peak RSS of a 100k-file baseline;
 * a young generation of 4 MB instead of 16 saves ~10 MiB of it, no slower).
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 4 };
/** Negative counts in a {@link ReadBatch}: indexes into READ_CODES, from 1. */
const CHANGED = -1;
const UNREADABLE = -2;
const GONE = -3;

// CommonJS or ES module (an eval worker inherits the parent's --input-type): no top-level import.
const WORKER_SOURCE = `
(async () => {
  const { parentPort } = await import("node:worker_threads");
  const fs = await import("node:fs");
  const path = await import("node:path");
  const zlib = await import("node:zlib");
  const { createHash, randomBytes } = await import("node:crypto");
  const C = fs.constants;
${WORKER_DIR_WALK}
  const CHANGED = ${CHANGED}, UNREADABLE = ${UNREADABLE}, GONE = ${GONE};
  const made = new Set();
  // Temporary names unique in this process (O_EXCL / "wx" guard against anyone else).
  const tmpPrefix = randomBytes(4).toString("hex") + "-";
  let tmpSeq = 0;
  // ---- packs: small blobs appended to pack files (format.ts) --------------------------------
  // One pack written at a time per store per process, named <pid>-<random>-<seq>.pack and opened
  // O_EXCL | O_APPEND: no other writer ever appends to it. Every pack of the store is indexed
  // (hash -> pack number * 2^27 + offset) by scanning its entries; an entry whose header, length
  // or crc32 does not check out ends the scan of that pack there (a torn tail, or one still being
  // written by another process: scanned again from there on the next refresh).
  const HEAD = 48;
  const MAGIC = 0x57425031; // "WBP1"
  const SLOT = 134217728; // 2^27: offsets within a pack stay below
  const ROLL = 67108864; // a pack past 64 MiB is closed; the next blob starts a new one
  const FLUSH = 1048576;
  // No entry is larger (the writers' packMax is far below): a length past it is not an entry.
  const MAX_BODY = 1048576;
  // A pack of another process is collected only when that process is gone and the pack untouched this long.
  const FOREIGN_IDLE_MS = 600000;
  let scanBuf;
  const MAX_STATES = 8;
  const CRC = new Int32Array(256);
  for (let n = 0; n < 256; n++) { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; CRC[n] = c; }
  const crc32 = (buf, start, end, crc) => { let c = ~crc; for (let i = start; i < end; i++) c = CRC[(c ^ buf[i]) & 0xff] ^ (c >>> 8); return ~c >>> 0; };
  const states = new Map();
  let packSeq = 0;
  const isPackName = (n) => n.endsWith(".pack") && n.split("-").length === 3 && !n.startsWith(".");
  const stateOf = (msg) => {
    const key = msg.storeDir;
    let s = states.get(key);
    if (s) { states.delete(key); states.set(key, s); return s; }
    s = { dir: path.join(key, "packs"), packs: new Map(), byNo: new Map(), index: new Map(), nextNo: 0, own: new Set(), write: undefined, fans: new Set() };
    states.set(key, s);
    if (states.size > MAX_STATES) { const [oldKey, old] = states.entries().next().value; seal(old); for (const p of old.packs.values()) closePack(p); states.delete(oldKey); }
    return s;
  };
  // The fan-out directories of loose blobs (a blob outside them is not looked for loose).
  const refreshFans = (s, msg) => {
    s.fans.clear();
    for (const base of [msg.blobs, msg.zblobs]) {
      try { for (const n of fs.readdirSync(base)) s.fans.add(path.join(base, n)); } catch {}
    }
  };
  const closePack = (p) => { try { fs.closeSync(p.fd); } catch {} };
  const dropPack = (s, p) => {
    // A pack gone from under its writer (deleted by hand): later blobs go to a new one.
    if (s.write && s.write.p === p) { try { fs.closeSync(s.write.fd); } catch {} s.write = undefined; }
    s.packs.delete(p.name); s.byNo.delete(p.no);
    for (const [h, loc] of s.index) if (Math.floor(loc / SLOT) === p.no) s.index.delete(h);
    closePack(p);
  };
  const addPack = (s, name, fd) => {
    const p = { name, no: s.nextNo++, fd, scanned: 0 };
    s.packs.set(name, p); s.byNo.set(p.no, p);
    return p;
  };
  // Header check of the entry at buf[i..]: its body length, or -1.
  const headerAt = (buf, i) => {
    if (buf.readUInt32BE(i) !== MAGIC || buf[i + 4] > 1 || buf[i + 5] !== 0 || buf[i + 6] !== 0 || buf[i + 7] !== 0) return -1;
    const len = buf.readUInt32BE(i + 8);
    return len > MAX_BODY ? -1 : len;
  };
  // Reads a pack's entries from p.scanned on; calls each(hash, offset, total bytes) for those that check out.
  const walkPack = (p, from, each) => {
    let size;
    try { size = fs.fstatSync(p.fd).size; } catch { return from; }
    let off = from;
    if (off + HEAD > size) return off;
    const buf = (scanBuf ??= Buffer.allocUnsafe(FLUSH + HEAD + MAX_BODY));
    while (off + HEAD <= size) {
      const n = fs.readSync(p.fd, buf, 0, Math.min(buf.length, size - off), off);
      let i = 0;
      for (;;) {
        if (i + HEAD > n) break;
        const len = headerAt(buf, i);
        if (len < 0) return off + i;
        if (i + HEAD + len > n) break;
        if (crc32(buf, i + HEAD, i + HEAD + len, crc32(buf, i + 4, i + 44, 0)) !== buf.readUInt32BE(i + 44)) return off + i;
        each(buf.toString("hex", i + 12, i + 44), off + i, HEAD + len);
        i += HEAD + len;
      }
      if (i === 0) return off;
      off += i;
    }
    return off;
  };
  const scanPack = (s, p) => {
    p.scanned = walkPack(p, p.scanned, (h, off) => { if (!s.index.has(h)) s.index.set(h, p.no * SLOT + off); });
  };
  // Packs come and go (other processes write new ones; a GC rewrites and deletes): brings the index up to date.
  const refresh = (s) => {
    let names = [];
    try { names = fs.readdirSync(s.dir).filter(isPackName); } catch {}
    const present = new Set(names);
    for (const p of [...s.packs.values()]) if (!present.has(p.name)) dropPack(s, p);
    for (const name of names) {
      let p = s.packs.get(name);
      // Shorter than indexed (truncated behind our back): indexed afresh, and written no more.
      if (p && p.scanned > 0 && fileSize(p) < p.scanned) {
        dropPack(s, p);
        p = undefined;
      }
      if (!p) {
        let fd;
        try { fd = fs.openSync(path.join(s.dir, name), C.O_RDONLY | (C.O_NOFOLLOW || 0)); } catch { continue; }
        p = addPack(s, name, fd);
      }
      if (!s.write || s.write.p !== p) scanPack(s, p);
    }
  };
  const fileSize = (p) => { try { return fs.fstatSync(p.fd).size; } catch { return 0; } };
  const seal = (s) => {
    const w = s.write;
    if (!w) return;
    flush(s);
    s.write = undefined;
    try { fs.closeSync(w.fd); } catch {}
  };
  const writerOf = (s) => {
    if (s.write && s.write.size + s.write.pendingBytes < ROLL) return s.write;
    seal(s);
    fs.mkdirSync(s.dir, { recursive: true });
    const name = process.pid + "-" + randomBytes(4).toString("hex") + "-" + (++packSeq).toString(16) + ".pack";
    const file = path.join(s.dir, name);
    const fd = fs.openSync(file, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_APPEND | (C.O_NOFOLLOW || 0), 0o600);
    const p = addPack(s, name, fs.openSync(file, C.O_RDONLY));
    s.own.add(name);
    s.write = { p, fd, size: 0, pending: [], pendingBytes: 0, pendingIdx: new Map() };
    return s.write;
  };
  // Appends what is pending in one write; indexes it only then (a reply names a blob only once it is written).
  const flush = (s) => {
    const w = s.write;
    if (!w || w.pending.length === 0) return;
    const data = w.pending.length === 1 ? w.pending[0] : Buffer.concat(w.pending, w.pendingBytes);
    try {
      let off = 0;
      while (off < data.length) off += fs.writeSync(w.fd, data, off, data.length - off);
    } catch (e) {
      // What reached the file is a tail the scan ignores or indexes; this pack takes no more, and
      // the request fails as a whole (its reply would name blobs that were not written).
      w.pending = []; w.pendingBytes = 0; w.pendingIdx = new Map();
      s.write = undefined;
      s.failed = e;
      try { fs.closeSync(w.fd); } catch {}
      throw e;
    }
    for (const [h, off] of w.pendingIdx) if (!s.index.has(h)) s.index.set(h, w.p.no * SLOT + off);
    w.size += data.length;
    w.p.scanned = w.size;
    w.pending = []; w.pendingBytes = 0; w.pendingIdx = new Map();
  };
  const append = (s, h, body, kind) => {
    const w = writerOf(s);
    const head = Buffer.alloc(HEAD);
    head.writeUInt32BE(MAGIC, 0);
    head[4] = kind;
    head.writeUInt32BE(body.length, 8);
    head.write(h, 12, 32, "hex");
    head.writeUInt32BE(crc32(body, 0, body.length, crc32(head, 4, 44, 0)), 44);
    w.pendingIdx.set(h, w.size + w.pendingBytes);
    w.pending.push(head, body);
    w.pendingBytes += HEAD + body.length;
    if (w.pendingBytes >= FLUSH) flush(s);
  };
  const packedHas = (s, h) => s.index.has(h) || (s.write !== undefined && s.write.pendingIdx.has(h));
  // The raw bytes of packed blob h (lengths, crc and the content's sha256 checked), or undefined.
  const readPacked = (s, h) => {
    const loc = s.index.get(h);
    if (loc === undefined) return undefined;
    const p = s.byNo.get(Math.floor(loc / SLOT));
    if (!p) return undefined;
    const off = loc % SLOT;
    const head = Buffer.allocUnsafe(HEAD);
    if (fs.readSync(p.fd, head, 0, HEAD, off) !== HEAD) return undefined;
    const len = headerAt(head, 0);
    if (len < 0 || head.toString("hex", 12, 44) !== h) return undefined;
    const body = Buffer.allocUnsafe(len);
    if (len > 0 && fs.readSync(p.fd, body, 0, len, off + HEAD) !== len) return undefined;
    if (crc32(body, 0, len, crc32(head, 4, 44, 0)) !== head.readUInt32BE(44)) return undefined;
    const raw = head[4] === 1 ? zlib.brotliDecompressSync(body) : body;
    return createHash("sha256").update(raw).digest("hex") === h ? raw : undefined;
  };
  const packedSize = (s, h) => {
    const loc = s.index.get(h);
    const p = loc === undefined ? undefined : s.byNo.get(Math.floor(loc / SLOT));
    if (!p) return -1;
    const head = Buffer.allocUnsafe(HEAD);
    if (fs.readSync(p.fd, head, 0, HEAD, loc % SLOT) !== HEAD) return -1;
    const len = headerAt(head, 0);
    return len < 0 ? -1 : HEAD + len;
  };
  // Whether the process that wrote pack "name" may still append to it (its pid is alive).
  const writerAlive = (s, name) => {
    if (s.own.has(name)) return false;
    const pid = Number(name.split("-")[0]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return true;
    try { if (Date.now() - fs.fstatSync(s.packs.get(name).fd).mtimeMs < FOREIGN_IDLE_MS) return true; } catch { return true; }
    try { process.kill(pid, 0); return true; } catch (e) { return !e || e.code !== "ESRCH"; }
  };
  // Rewrites each pack no writer appends to any more whose dead bytes (blobs not in "live", and a
  // torn tail) reach deadRatio of it: live entries copied into a new pack (written, synced, renamed
  // into place), then the old one deleted. Returns the bytes reclaimed.
  const gcPacks = (msg) => {
    const s = stateOf(msg);
    seal(s);
    refresh(s);
    const live = new Set(msg.live);
    let reclaimed = 0;
    for (const p of [...s.packs.values()]) {
      if (writerAlive(s, p.name)) continue;
      let size;
      try { size = fs.fstatSync(p.fd).size; } catch { continue; }
      const keep = [];
      let liveBytes = 0;
      walkPack(p, 0, (h, off, total) => { if (live.has(h)) { keep.push([h, off, total]); liveBytes += total; } });
      const dead = size - liveBytes;
      if (dead === 0 || (keep.length > 0 && dead < size * msg.deadRatio)) continue;
      let fresh;
      if (keep.length > 0) {
        const name = process.pid + "-" + randomBytes(4).toString("hex") + "-" + (++packSeq).toString(16) + ".pack";
        const tmp = path.join(s.dir, ".tmp-" + name);
        const out = fs.openSync(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | (C.O_NOFOLLOW || 0), 0o600);
        try {
          for (const [, off, total] of keep) {
            const buf = Buffer.allocUnsafe(total);
            if (fs.readSync(p.fd, buf, 0, total, off) !== total) throw new Error("pack " + p.name + " shrank while collected");
            let w = 0;
            while (w < total) w += fs.writeSync(out, buf, w, total - w);
          }
          fs.fsyncSync(out);
        } catch (e) { fs.closeSync(out); try { fs.unlinkSync(tmp); } catch {} throw e; }
        fs.closeSync(out);
        fs.renameSync(tmp, path.join(s.dir, name));
        // The new name durable before the old pack goes.
        try { const d = fs.openSync(s.dir, C.O_RDONLY | (C.O_DIRECTORY || 0)); try { fs.fsyncSync(d); } finally { fs.closeSync(d); } } catch {}
        s.own.add(name);
        fresh = addPack(s, name, fs.openSync(path.join(s.dir, name), C.O_RDONLY));
      }
      try { fs.unlinkSync(path.join(s.dir, p.name)); } catch (e) { if (!e || e.code !== "ENOENT") throw e; }
      dropPack(s, p);
      if (fresh) scanPack(s, fresh);
      reclaimed += dead;
    }
    // Blobs whose only copy went away are no longer indexed: nothing here claims them any more.
    refresh(s);
    return reclaimed;
  };
  const looseAt = (base, h) => path.join(base, h.slice(0, 2), h.slice(2));
  const looseHas = (s, msg, h) => {
    // No fan-out directory yet (a first baseline): nothing loose to look for.
    if (s.fans.size === 0) return false;
    for (const base of [msg.zblobs, msg.blobs]) {
      const p = looseAt(base, h);
      if (s.fans.has(path.dirname(p)) && fs.existsSync(p)) return true;
    }
    return false;
  };
  // Stores one blob once: packed when its stored form is at most packMax bytes, else loose.
  const store = (msg, data, known) => {
    const s = msg.state;
    const h = known ?? createHash("sha256").update(data).digest("hex");
    if (packedHas(s, h) || looseHas(s, msg, h)) return h;
    let body = data;
    let base = msg.blobs;
    if (data.length >= msg.compressFrom) {
      const packed = zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: msg.quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } });
      if (packed.length <= data.length - data.length / 32) { body = packed; base = msg.zblobs; }
    }
    if (body.length <= msg.packMax) {
      append(s, h, body, base === msg.zblobs ? 1 : 0);
      return h;
    }
    const p = looseAt(base, h);
    const dir = path.dirname(p);
    if (!made.has(dir)) { fs.mkdirSync(dir, { recursive: true }); made.add(dir); s.fans.add(dir); }
    const tmp = p + ".tmp-" + tmpPrefix + (++tmpSeq).toString(16);
    fs.writeFileSync(tmp, body, { mode: 0o600, flag: "wx" });
    fs.renameSync(tmp, p);
    return h;
  };
  // File i of dir d: opened O_NOFOLLOW | O_NONBLOCK relative to the held directory, read only when
  // its fstat is the regular file listed (same device and inode), at most the listed size.
  // Results: out.hashes[k], out.nums[3k] = bytes read (or a negative code), out.nums[3k + 1] = mtimeMs, out.nums[3k + 2] = ctimeMs.
  const readOne = (msg, via, d, i, out, k) => {
    let fd;
    try { fd = fs.openSync(via + "/" + d.names[i], FILE); }
    catch (e) { out.nums[3 * k] = e && e.code === "ELOOP" ? CHANGED : e && e.code === "ENOENT" ? GONE : UNREADABLE; return; }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile() || st.ino !== d.stats[3 * i] || st.dev !== d.stats[3 * i + 1]) { out.nums[3 * k] = CHANGED; return; }
      const size = Math.min(st.size, d.stats[3 * i + 2]);
      const buf = Buffer.allocUnsafe(size);
      let got = 0;
      while (got < size) { const n = fs.readSync(fd, buf, got, size - got, got); if (n === 0) break; got += n; }
      out.hashes[k] = store(msg, got === size ? buf : buf.subarray(0, got));
      out.nums[3 * k] = got;
      out.nums[3 * k + 1] = st.mtimeMs;
      out.nums[3 * k + 2] = st.ctimeMs;
    } catch { out.hashes[k] = ""; out.nums[3 * k] = UNREADABLE; }
    finally { fs.closeSync(fd); }
  };
  // A restore's entry: the blob's raw bytes to a temporary file in the store, modes and mtime set,
  // then renamed to the name of a recorded entry (never following a link there) or linked to a
  // free name. The recorded entry is unlinked first, not renamed over: ext4 (auto_da_alloc)
  // flushes a file renamed over another at once, ~1 ms a file, and blocks allocated so are freed
  // again by the next restore (measured: 1,000 files 1.1 s, 0.1 s unlinked first).
  const putOne = (msg, via, item) => {
    let data = packedOrRefreshed(msg, item.h);
    if (data === undefined) {
      try { data = zlib.brotliDecompressSync(fs.readFileSync(looseAt(msg.zblobs, item.h))); }
      catch (e) { if (!e || e.code !== "ENOENT") throw e; data = fs.readFileSync(looseAt(msg.blobs, item.h)); }
    }
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
      if (item.replace) {
        // Gone already: the name is free all the same (rename still replaces what raced in).
        try { fs.unlinkSync(via + "/" + item.name); } catch (e) { if (!e || e.code !== "ENOENT") throw e; }
        fs.renameSync(tmp, via + "/" + item.name);
        placed = true;
      } else { fs.linkSync(tmp, via + "/" + item.name); }
      return "ok";
    } catch (e) {
      // Only a descriptor still ours: a closed number may already belong to another thread.
      if (open) { try { fs.closeSync(fd); } catch {} }
      if (e && (e.code === "EISDIR" || e.code === "ENOTEMPTY" || e.code === "EEXIST")) return "kept";
      throw e;
    } finally { if (!placed) { try { fs.unlinkSync(tmp); } catch {} } }
  };
  // A packed blob; a miss looks at the packs again once per request (another process may have written it since).
  const packedOrRefreshed = (msg, h) => {
    const s = msg.state;
    let data = readPacked(s, h);
    if (data === undefined && !msg.refreshed) { msg.refreshed = true; refresh(s); data = readPacked(s, h); }
    return data;
  };
  const handle = (msg) => {
    msg.state = stateOf(msg);
    msg.state.failed = undefined;
    refresh(msg.state);
    if (msg.op === "readFiles" || msg.op === "storeBuffers" || msg.op === "storeHashed") refreshFans(msg.state, msg);
    if (msg.op === "getPacked") {
      const blobs = msg.hashes.map((h) => packedOrRefreshed(msg, h) ?? null);
      return { id: msg.id, blobs };
    }
    if (msg.op === "packedSizes") return { id: msg.id, sizes: msg.hashes.map((h) => packedSize(msg.state, h)) };
    if (msg.op === "gcPacks") return { id: msg.id, reclaimed: gcPacks(msg) };
    return undefined;
  };
  parentPort.on("message", (msg) => {
    if (msg.op === "readStoreFiles") {
      // Store files (trees): the host's own, read whole, back to back in one transferred buffer;
      // ends[i] where file i ends, -1 where one cannot be read.
      const parts = msg.paths.map((p) => { try { return fs.readFileSync(p); } catch { return null; } });
      const data = Buffer.allocUnsafeSlow(parts.reduce((n, b) => n + (b ? b.length : 0), 0));
      const ends = new Float64Array(parts.length);
      let at = 0;
      parts.forEach((b, i) => { if (b) { b.copy(data, at); at += b.length; ends[i] = at; } else ends[i] = -1; });
      parentPort.postMessage({ id: msg.id, data, ends }, [data.buffer, ends.buffer]);
      return;
    }
    try {
      const done = handle(msg);
      if (done) { parentPort.postMessage(done); return; }
      if (msg.op === "putEntries") {
        parentPort.postMessage({ id: msg.id, results: [msg.items.map((item) => putOne(msg, msg.via, item))] });
        return;
      }
      if (msg.op === "storeHashed") {
        // Read and hashed by a list worker: data holds the contents back to back.
        const data = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
        let at = 0;
        msg.hashes.forEach((h, i) => {
          const len = msg.nums[3 * i];
          if (len < 0) return;
          store(msg, data.subarray(at, at + len), h);
          at += len;
        });
        flush(msg.state);
        if (msg.state.failed) throw msg.state.failed;
        parentPort.postMessage({ id: msg.id });
        return;
      }
      if (msg.op === "storeBuffers") {
        const hashes = msg.buffers.map((b) => store(msg, Buffer.from(b.buffer, b.byteOffset, b.byteLength)));
        flush(msg.state);
        parentPort.postMessage({ id: msg.id, hashes });
        return;
      }
      let total = 0;
      for (const d of msg.dirs) total += d.names.length;
      const out = { hashes: new Array(total).fill(""), nums: new Float64Array(3 * total) };
      let k = 0;
      for (const d of msg.dirs) {
        let held;
        try { held = openDir(msg.root, d.rel); } catch { for (let i = 0; i < d.names.length; i++) out.nums[3 * k++] = GONE; continue; }
        try {
          const via = viaFd ? "/proc/self/fd/" + held.fd : held.real;
          for (let i = 0; i < d.names.length; i++) readOne(msg, via, d, i, out, k++);
        } finally { fs.closeSync(held.fd); }
      }
      // Every blob named in the reply is written before the reply (see format.ts on durability).
      flush(msg.state);
      if (msg.state.failed) throw msg.state.failed;
      parentPort.postMessage({ id: msg.id, batch: out }, [out.nums.buffer]);
    } catch (err) {
      parentPort.postMessage({ id: msg.id, error: String((err && err.message) || err) });
    }
  });
})();
`;

/** Where a store keeps blobs, and how it compresses them. */
export interface BlobLayout {
  /** The store directory (its packs are under `packs/`). */
  storeDir: string;
  blobs: string;
  zblobs: string;
  compressFrom: number;
  quality: number;
  /** Blobs whose stored form is at most this many bytes are appended to a pack. */
  packMax: number;
}

/** A file to read: its name in directory `rel` and what its listing said. */
export interface FileToRead {
  name: string;
  ino: number;
  dev: number;
  size: number;
}

/** A stored file (`[hash, bytes read, mtimeMs, ctimeMs]`, the times of the descriptor read) or why it was not read. */
export type ReadResult = [string, number, number, number] | "changed-while-read" | "unreadable" | "gone";

/**
 * The results of one read request, one column each (no object per file on either side of the
 * message): file k (in request order) has `hashes[k]`, `nums[3k]` bytes read or a negative
 * {@link READ_CODES} index, `nums[3k + 1]` its mtimeMs, `nums[3k + 2]` its ctimeMs.
 */
export interface ReadBatch {
  hashes: string[];
  nums: Float64Array;
}
const READ_CODES = ["changed-while-read", "unreadable", "gone"] as const;

/** File k of a batch as a {@link ReadResult}. */
export function readResultAt(batch: ReadBatch, k: number): ReadResult {
  const n = batch.nums[3 * k];
  if (n === undefined) return "unreadable";
  return n < 0 ? (READ_CODES[-n - 1] ?? "unreadable") : [batch.hashes[k]!, n, batch.nums[3 * k + 1]!, batch.nums[3 * k + 2]!];
}

/** A directory's files to read, one column each: `stats` holds ino, dev and size per file. */
export interface DirToRead {
  rel: string;
  names: string[];
  stats: Float64Array;
}

export function dirToRead(rel: string, files: readonly FileToRead[]): DirToRead {
  const stats = new Float64Array(3 * files.length);
  files.forEach((f, i) => stats.set([f.ino, f.dev, f.size], 3 * i));
  return { rel, names: files.map((f) => f.name), stats };
}

interface Reply {
  id: number;
  error?: string;
  results?: ("ok" | "kept")[][];
  batch?: ReadBatch;
  hashes?: string[];
  blobs?: (Uint8Array | null)[];
  sizes?: number[];
  reclaimed?: number;
  data?: Uint8Array;
  ends?: Float64Array;
}

let shared: EvalWorker<Reply> | undefined;

async function request(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
  const reply = await (shared ??= new EvalWorker<Reply>(WORKER_SOURCE, "blob", WORKER_LIMITS)).request(message, transfer);
  if (reply.error !== undefined) throw new Error(`storing blobs failed: ${reply.error}`);
  return reply;
}

/** Reads the listed files of the workspace `root` by descriptor and stores them; results in file order. */
export function readFilesIntoStore(root: string, dirs: DirToRead[], layout: BlobLayout): Promise<ReadBatch> {
  return new Promise((resolve, reject) => {
    jobs.push({ root, dirs, layout, resolve, reject });
    kick();
  });
}

/**
 * Reads go to whichever reader is idle: this worker (reads and stores), or, while more requests
 * wait, the two list workers (read and hash there; this worker stores what they read), so a
 * baseline's reads use both cores. A reader takes one request at a time.
 */
interface ReadJob {
  root: string;
  dirs: DirToRead[];
  layout: BlobLayout;
  resolve(r: ReadBatch | Promise<ReadBatch>): void;
  reject(e: unknown): void;
}
const jobs: ReadJob[] = [];
const busy: boolean[] = [false, ...Array.from({ length: LIST_WORKERS }, () => false)];

function kick(): void {
  busy.forEach((b, reader) => {
    // A helper only for a backlog: a lone read never starts the list workers.
    if (!b && jobs.length > (reader === 0 ? 0 : 1)) void drain(reader);
  });
}

async function drain(reader: number): Promise<void> {
  busy[reader] = true;
  try {
    for (let job = jobs.shift(); job; job = jobs.shift()) {
      try {
        // A helper is free for the next request once it has read; the store of what it read follows here.
        job.resolve(reader === 0 ? (await request({ op: "readFiles", root: job.root, dirs: job.dirs, ...job.layout })).batch! : storeRead(job, await readListedFiles(reader - 1, job.root, job.dirs)));
      } catch (err) {
        job.reject(err);
      }
      if (reader > 0 && jobs.length === 0) break;
    }
  } finally {
    busy[reader] = false;
  }
}

/** What a list worker read and hashed, stored here (the data transferred, not copied). */
async function storeRead(job: ReadJob, read: { batch: ReadBatch; data: Buffer }): Promise<ReadBatch> {
  const bytes = new Uint8Array(read.data.buffer, read.data.byteOffset, read.data.byteLength);
  await request({ op: "storeHashed", hashes: read.batch.hashes, nums: read.batch.nums, data: bytes, ...job.layout }, [bytes.buffer as ArrayBuffer]);
  return read.batch;
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
export async function putEntries(via: string, items: EntryToPut[], layout: BlobLayout): Promise<("ok" | "kept")[]> {
  return ((await request({ op: "putEntries", via, items, ...layout })).results?.[0] ?? []) as ("ok" | "kept")[];
}

/** Stores `buffers` as blobs; returns their hashes. */
export async function storeBuffers(buffers: Buffer[], layout: BlobLayout): Promise<string[]> {
  return (await request({ op: "storeBuffers", buffers, ...layout })).hashes ?? [];
}

/** The raw content of packed blobs (null: in no pack; lengths, crc32 and sha256 checked). */
export async function readPacked(hashes: string[], layout: BlobLayout): Promise<(Buffer | null)[]> {
  const blobs = (await request({ op: "getPacked", hashes, ...layout })).blobs ?? [];
  return hashes.map((_, i) => {
    const b = blobs[i];
    return b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength) : null;
  });
}

/**
 * The bytes of each of the store's own files `paths` (null where one cannot be read), read in the
 * worker: a cold start's ~1,000 tree texts at 100k files cost the main thread ~4 pool hand-offs
 * each as `readFile`s (~0.3 s of its time beside the listing); here one message, and one
 * transferred buffer the results are views of (no string made or copied on the main thread).
 */
export async function readStoreFiles(paths: string[]): Promise<(Buffer | null)[]> {
  const reply = await request({ op: "readStoreFiles", paths });
  const data = Buffer.from(reply.data!.buffer, reply.data!.byteOffset, reply.data!.byteLength);
  const ends = reply.ends!;
  let from = 0;
  return paths.map((_, i) => {
    const end = ends[i]!;
    if (end < 0) return null;
    const part = data.subarray(from, end);
    from = end;
    return part;
  });
}

/** What packed blobs take in their pack (header included); -1 for a blob in no pack. */
export async function packedSizes(hashes: string[], layout: BlobLayout): Promise<number[]> {
  return (await request({ op: "packedSizes", hashes, ...layout })).sizes ?? [];
}

/**
 * Rewrites the packs no live writer appends to whose dead bytes (blobs not in `live`) reach
 * `deadRatio` of their size; deletes packs with nothing live. Returns the bytes reclaimed.
 */
export async function collectPacks(live: string[], deadRatio: number, layout: BlobLayout): Promise<number> {
  return (await request({ op: "gcPacks", live, deadRatio, ...layout })).reclaimed ?? 0;
}
