/**
 * Lists a directory tree with every entry's `lstat`, in a worker thread with synchronous calls:
 * an async `lstat` per file pays two libuv pool hand-offs on top of the system call (a stat pass
 * of 100k files: about 2 s async on the main thread, 0.35 s synchronous here, off the event loop).
 *
 * The walk treats the tree as hostile, like {@link DirHandle}: each directory is opened
 * `O_DIRECTORY | O_NOFOLLOW` relative to its parent's descriptor (`/proc/self/fd/N/name` on Linux),
 * so it never descends through a link. Entries are `lstat`ed by their real path only where the walk
 * has proven that path names the directory it holds (the ctimes of every directory above, read
 * before and after, on a local file system; see `statEntries`), else by descriptor path: the
 * proof saves ~2 µs a file (100k files: ~100 ms of a 300 ms listing). Names are read as strings,
 * a directory again as bytes when one decoded to U+FFFD (a name that is not UTF-8 comes back
 * raw); a listing opens nothing but directories (no FIFO, device or file). One worker per
 * process, started on first use, unreferenced while idle so it never keeps a process alive.
 *
 * The same workers also read files for the snapshot store ({@link readListedFiles}, the second
 * core's share of a baseline's reads): only by descriptor, each file opened `O_NOFOLLOW |
 * O_NONBLOCK` relative to a directory reached by `O_NOFOLLOW` descriptors, and read only when its
 * `fstat` is the regular file listed.
 */
import { EvalWorker } from "./evalWorker.js";
import { WORKER_DIR_WALK } from "./workerDirWalk.js";

/** Entry kinds, as numbers in the worker's reply. */
const KINDS = ["file", "symlink", "directory", "other"] as const;
export type ListedKind = (typeof KINDS)[number];

/** One entry with its `lstat` (zeros for directories and other kinds). */
export interface ListedEntry {
  /** The name, or undefined when it is not UTF-8 (see `raw`). */
  name: string | undefined;
  raw?: Buffer;
  kind: ListedKind;
  size: number;
  mtimeMs: number;
  mode: number;
  ino: number;
  dev: number;
  blocks: number;
  /** The inode change time (moves on every write, chmod, link or rename; the agent cannot set it). */
  ctimeMs: number;
}

/** One directory of the listing (parents come before their children). */
export interface ListedDir {
  rel: string;
  /** A digest of the listing (names, kinds, sizes, mtimes, modes). */
  sig: string;
  /** Undefined when `sig` is the one the caller said it knows: nothing there changed. */
  entries: ListedEntry[] | undefined;
  /** The directory's ctime right after it was read (moves when an entry is added, removed or renamed). */
  ctimeMs: number;
}

export interface TreeListing {
  dirs: ListedDir[];
  /** Directories below {@link MAX_LIST_DEPTH} levels, not descended into. */
  tooDeep: string[];
}

/**
 * How far an inode's ctime may trail the wall clock read just before the change that set it
 * (the kernel stamps inodes from a coarse clock, one tick behind at most: 4 ms at HZ=250).
 */
export const CTIME_SLACK_MS = 20;

/** Directories deeper than this below the start are not descended into (each level holds a descriptor). */
export const MAX_LIST_DEPTH = 512;

const FIELDS = 9; // kind, utf8 flag, size, mtimeMs, mode, ino, dev, blocks, ctimeMs

// CommonJS or ES module (an eval worker inherits the parent's --input-type): no top-level import.
const WORKER_SOURCE = `
(async () => {
  const { parentPort } = await import("node:worker_threads");
  const fs = await import("node:fs");
  const { isUtf8 } = await import("node:buffer");
  const { createHash } = await import("node:crypto");
  const C = fs.constants;
${WORKER_DIR_WALK}
  // ---- reads: files of directories reached from the root by O_NOFOLLOW descriptors -----------
  // File i of dir d into data at "at": opened O_NOFOLLOW | O_NONBLOCK, read only when its fstat
  // is the regular file listed (same device and inode), at most the listed size; hashed here.
  // Results as the blob worker's: hashes[k], nums[3k] bytes read (or a negative code), nums[3k + 1] mtimeMs, nums[3k + 2] ctimeMs.
  const readInto = (via, d, i, data, at, out, k) => {
    let fd;
    try { fd = fs.openSync(via + "/" + d.names[i], FILE); }
    catch (e) { out.nums[3 * k] = e && e.code === "ELOOP" ? -1 : e && e.code === "ENOENT" ? -3 : -2; return 0; }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile() || st.ino !== d.stats[3 * i] || st.dev !== d.stats[3 * i + 1]) { out.nums[3 * k] = -1; return 0; }
      const size = Math.min(st.size, d.stats[3 * i + 2]);
      let got = 0;
      while (got < size) { const n = fs.readSync(fd, data, at + got, size - got, got); if (n === 0) break; got += n; }
      out.hashes[k] = createHash("sha256").update(data.subarray(at, at + got)).digest("hex");
      out.nums[3 * k] = got;
      out.nums[3 * k + 1] = st.mtimeMs;
      out.nums[3 * k + 2] = st.ctimeMs;
      return got;
    } catch { out.hashes[k] = ""; out.nums[3 * k] = -2; return 0; }
    finally { fs.closeSync(fd); }
  };
  const readFiles = (msg) => {
    let total = 0;
    let count = 0;
    for (const d of msg.dirs) { count += d.names.length; for (let i = 0; i < d.names.length; i++) total += d.stats[3 * i + 2]; }
    // Its own ArrayBuffer (not the pool's): transferred, not copied.
    const data = Buffer.allocUnsafeSlow(total);
    const out = { hashes: new Array(count).fill(""), nums: new Float64Array(3 * count) };
    let at = 0;
    let k = 0;
    for (const d of msg.dirs) {
      let held;
      try { held = openDir(msg.root, d.rel); } catch { for (let i = 0; i < d.names.length; i++) out.nums[3 * k++] = -3; continue; }
      try {
        const via = viaFd ? "/proc/self/fd/" + held.fd : held.real;
        for (let i = 0; i < d.names.length; i++) at += readInto(via, d, i, data, at, out, k++);
      } finally { fs.closeSync(held.fd); }
    }
    parentPort.postMessage({ id: msg.id, batch: out, data }, [data.buffer, out.nums.buffer]);
  };
  // ---- the listing's lstat by real path, and its proof ------------------------------------------
  // The real path of a directory names the directory held by descriptor as long as no entry of
  // any directory above it (from the trusted start down) changes: each was opened O_NOFOLLOW by
  // its name in the one above, after that one's ctime was read, and every add, remove, rename or
  // swap of an entry moves the ctime of the directory holding it (no process can set a ctime
  // back). So: the ctimes of the ancestors (anc), read before their children were opened, are
  // read again after the lstats; all the same, every lstat named an entry of this directory; one
  // moved, the lstats are done again by descriptor. A ctime that may share the coarse clock tick
  // of its read (CTIME_SLACK) proves nothing: the subtree below it goes by descriptor.
  // Only on local file systems known to keep directory ctimes so (ext2-4, tmpfs, xfs, btrfs,
  // overlayfs, f2fs; not a FUSE or network one), and never across a mount point (another dev).
  const CTIME_SLACK = ${CTIME_SLACK_MS};
  const MAX_REAL = 3000;
  const PROVING_FS = new Set([0xef53, 0x01021994, 0x58465342, 0x9123683e, 0x794c7630, 0xf2f52010]);
  let provingDev = -1;
  const provesAt = (fd) => {
    try {
      const st = fs.fstatSync(fd);
      provingDev = viaFd && PROVING_FS.has(fs.statfsSync("/proc/self/fd/" + fd).type) ? st.dev : -1;
    } catch { provingDev = -1; }
  };
  const provable = (anc, ctime, dev) => anc !== null && dev === provingDev && ctime > 0 && ctime < Date.now() - CTIME_SLACK;
  const provenUnchanged = (anc) => {
    for (const a of anc) {
      let ctime;
      try { ctime = fs.fstatSync(a.fd).ctimeMs; } catch { return false; }
      if (ctime !== a.ctime) return false;
    }
    return true;
  };
  // Fills each row's kind and lstat into nums (the utf8 flags are there already). True when it
  // went by the real path: asked to, on a platform with descriptor paths, in a provable subtree,
  // and the path not too long for one.
  const statEntries = (ents, names, nums, ignore, via, real, anc, fast) => {
    const byReal = fast && viaFd && anc !== null && real.length < MAX_REAL;
    const at = byReal ? real : via;
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i];
      const name = names[i];
      const o = i * ${FIELDS};
      const utf8 = nums[o + 1] === 1;
      nums.fill(0, o + 2, o + ${FIELDS});
      let kind = e.isFile() ? 0 : e.isSymbolicLink() ? 1 : e.isDirectory() ? 2 : 3;
      if (utf8 && ignore.has(name)) kind = -1;
      else if (kind <= 1) {
        let s;
        try { s = fs.lstatSync(at + "/" + name, { throwIfNoEntry: false }); } catch { s = null; }
        // By the real path, an odd failure (a name too long for it, say) is asked again by descriptor.
        if (s === null && byReal) { try { s = fs.lstatSync(via + "/" + name, { throwIfNoEntry: false }); } catch { s = undefined; } }
        if (!s) kind = -1;
        else if (s.isDirectory()) kind = 2;
        else if (!s.isFile() && !s.isSymbolicLink()) kind = 3;
        else {
          kind = s.isFile() ? 0 : 1;
          nums[o + 2] = s.size; nums[o + 3] = s.mtimeMs; nums[o + 4] = s.mode & 0o7777;
          nums[o + 5] = s.ino; nums[o + 6] = s.dev; nums[o + 7] = s.blocks || 0; nums[o + 8] = s.ctimeMs;
        }
      }
      nums[o] = kind;
    }
    return byReal;
  };
  parentPort.on("message", (msg) => {
    if (msg.op === "read") {
      try { readFiles(msg); } catch (err) { parentPort.postMessage({ id: msg.id, error: String((err && err.message) || err) }); }
      return;
    }
    let dirs = [];
    // Streamed: every "chunk" entries the directories listed so far go out on msg.port.
    let listed = 0;
    const send = (last) => {
      msg.port.postMessage({ dirs, last }, dirs.filter((d) => d.nums).map((d) => d.nums.buffer));
      dirs = [];
      listed = 0;
    };
    const tooDeep = [];
    const ignore = new Set(msg.ignoreNames);
    const known = new Map(msg.known);
    // anc: the directories from the trusted start down to this one's parent, each { fd, ctime }
    // with the ctime read before its children were opened (null: this subtree is stat'ed by
    // descriptor path only). See statEntries.
    const walk = (fd, real, rel, depth, anc) => {
      const via = viaFd ? "/proc/self/fd/" + fd : real;
      // Names as strings (no Buffer per entry); a directory where one decoded to U+FFFD (bytes that
      // are not UTF-8, or that character itself) is listed again by raw bytes.
      let ents;
      let bytes = false;
      try {
        ents = fs.readdirSync(via, { withFileTypes: true });
        if (ents.some((e) => e.name.includes("\\uFFFD"))) { ents = fs.readdirSync(via, { withFileTypes: true, encoding: "buffer" }); bytes = true; }
      } catch { return; }
      const names = [];
      const nums = new Float64Array(ents.length * ${FIELDS});
      const raws = [];
      for (let i = 0; i < ents.length; i++) {
        const e = ents[i];
        const utf8 = !bytes || isUtf8(e.name);
        const name = !bytes ? e.name : utf8 ? e.name.toString("utf8") : "";
        if (!utf8) raws.push([i, e.name]);
        names.push(name);
        nums[i * ${FIELDS} + 1] = utf8 ? 1 : 0;
      }
      // Each entry's lstat: by the real path where that is proven to name this directory (an
      // lstat through /proc/self/fd costs ~2 us more: ~200 ms per 100k files), else by descriptor.
      const fast = statEntries(ents, names, nums, ignore, via, real, anc, true);
      if (fast && !provenUnchanged(anc)) statEntries(ents, names, nums, ignore, via, real, anc, false);
      const subdirs = [];
      for (let i = 0; i < ents.length; i++) if (nums[i * ${FIELDS}] === 2 && nums[i * ${FIELDS} + 1] === 1) subdirs.push(names[i]);
      // The listing's signature: a directory the caller already knows in this state comes back
      // without its rows. Two updates per directory (the names, then kind, utf8 flag, size, mtime
      // and mode of each entry as bytes; not ino, dev, blocks or ctime), not one per entry: a full
      // look hashes every directory.
      const h = createHash("sha1");
      const kept = [];
      const sigNums = new Float64Array(names.length * 5);
      for (let i = 0; i < names.length; i++) {
        const o = i * ${FIELDS};
        if (nums[o] < 0) continue;
        sigNums.set(nums.subarray(o, o + 5), kept.length * 5);
        kept.push(names[i]);
      }
      h.update(kept.join("\\0")).update(new Uint8Array(sigNums.buffer, 0, kept.length * 40));
      for (const [i, raw] of raws) h.update(raw).update(String(i));
      const sig = h.digest("base64");
      // Read after the entries: a directory changed while (or after) it was read shows a later ctime.
      let ctime = 0;
      let dev = -2;
      try { const st = fs.fstatSync(fd); ctime = st.ctimeMs; dev = st.dev; } catch {}
      const childAnc = provable(anc, ctime, dev) ? [...anc, { fd, ctime }] : null;
      dirs.push(known.get(rel) === sig ? { rel, sig, ctime, subdirs } : { rel, sig, ctime, subdirs, names, nums, raws });
      listed += names.length + 1;
      if (msg.port && listed >= msg.chunk) send(false);
      for (const name of subdirs) {
        const childRel = rel === "" ? name : rel + "/" + name;
        if (depth >= msg.maxDepth) { if (msg.reportDeep) tooDeep.push(childRel); continue; }
        let child;
        try { child = fs.openSync(via + "/" + name, DIR); } catch { continue; }
        try { walk(child, real + "/" + name, childRel, depth + 1, childAnc); } finally { fs.closeSync(child); }
      }
    };
    // A start named by its relative path under the trusted root: reached O_NOFOLLOW component
    // by component, each directory's ctime read before its child is opened, and the provable
    // ones held as the start's ancestors (as walk does for a subdirectory). A component that is
    // gone or not a directory: nothing is listed.
    const walkDown = (root, rel) => {
      const held = [];
      let anc = [];
      let fd;
      try {
        fd = fs.openSync(root, C.O_RDONLY | (C.O_DIRECTORY || 0));
        provesAt(fd);
        let real = root;
        for (const seg of rel === "" ? [] : rel.split("/")) {
          let ctime = 0;
          let dev = -2;
          try { const st = fs.fstatSync(fd); ctime = st.ctimeMs; dev = st.dev; } catch {}
          const next = fs.openSync((viaFd ? "/proc/self/fd/" + fd : real) + "/" + seg, DIR);
          const above = fd;
          fd = next;
          real = real + "/" + seg;
          if (provable(anc, ctime, dev)) { anc = [...anc, { fd: above, ctime }]; held.push(above); }
          else { anc = null; fs.closeSync(above); }
        }
        walk(fd, real, rel, 0, anc);
      } catch {
        // Gone, or not a directory on the way.
      } finally {
        if (fd !== undefined) fs.closeSync(fd);
        for (const h of held) fs.closeSync(h);
      }
    };
    try {
      // The trusted root the starts were named under (a split listing's halves): held, and its
      // ctime read before any start is opened, so its entries can vouch for the starts' paths.
      let base = null;
      provingDev = -1;
      if (msg.trustedRoot !== undefined) {
        try {
          const rfd = fs.openSync(msg.trustedRoot, C.O_RDONLY | (C.O_DIRECTORY || 0));
          const st = fs.fstatSync(rfd);
          base = { fd: rfd, ctime: st.ctimeMs, dev: st.dev };
          provesAt(rfd);
        } catch { base = null; }
      }
      try {
        for (const start of msg.starts) {
          if (msg.walkRoot !== undefined) { walkDown(msg.walkRoot, start.rel); continue; }
          let fd;
          try { fd = fs.openSync(start.dir, msg.follow ? C.O_RDONLY | (C.O_DIRECTORY || 0) : DIR); } catch { fd = undefined; }
          // A start the caller trusts is its own proof; a half is proven by the root above it.
          if (fd !== undefined && msg.follow) provesAt(fd);
          const anc = msg.follow ? [] : base && provable([], base.ctime, base.dev) ? [base] : null;
          if (fd !== undefined) {
            try { walk(fd, start.dir, start.rel, 0, anc); } finally { fs.closeSync(fd); }
          }
        }
      } finally { if (base) fs.closeSync(base.fd); }
      if (msg.port) send(true);
      parentPort.postMessage({ id: msg.id, dirs, tooDeep }, dirs.filter((d) => d.nums).map((d) => d.nums.buffer));
    } catch (err) {
      parentPort.postMessage({ id: msg.id, error: String((err && err.message) || err) });
    }
  });
})();
`;

type RawDir = { rel: string; sig: string; ctime: number; subdirs: string[]; names?: string[]; nums?: Float64Array; raws?: [number, Uint8Array][] };

interface Reply {
  id: number;
  error?: string;
  dirs?: RawDir[];
  tooDeep?: string[];
  /** A read's results (one column each) and the bytes read, back to back in file order. */
  batch?: { hashes: string[]; nums: Float64Array };
  data?: Uint8Array;
}

/** Two workers (the machines this targets have two cores or more): a whole-workspace listing is split between them. */
export const LIST_WORKERS = 2;
/**
 * A small young generation: a listing's rows and a read's buffers are short-lived, and V8's
 * default (up to 3 × 16 MB per isolate) is RSS the process keeps (measured on a 100k-file
 * baseline: about 15 MiB less peak RSS at 4 MB, no slower). The old generation is not capped:
 * a listing not streamed holds the whole tree.
 */
const LIMITS = { maxYoungGenerationSizeMb: 4 };
const pool: EvalWorker<Reply>[] = [];
const workerAt = (i: number) => (pool[i] ??= new EvalWorker<Reply>(WORKER_SOURCE, "listing", LIMITS));

/** Entries per streamed chunk of a listing. */
const STREAM_CHUNK = 2_000;

async function list(
  worker: EvalWorker<Reply>,
  starts: { dir: string; rel: string }[],
  ignoreNames: readonly string[],
  follow: boolean,
  known: [string, string][],
  maxDepth: number,
  reportDeep: boolean,
  onDirs?: (take: () => ListedDir[]) => void,
  trustedRoot?: string,
  walkRoot?: string,
): Promise<Reply> {
  const message = {
    starts,
    ignoreNames: [...ignoreNames],
    maxDepth,
    follow,
    known,
    reportDeep,
    ...(trustedRoot !== undefined ? { trustedRoot } : {}),
    ...(walkRoot !== undefined ? { walkRoot } : {}),
  };
  if (!onDirs) return worker.request(message);
  // Chunks come on a port of their own; the reply (on the worker's port) follows the last one
  // posted, but two ports keep no order between them: both are awaited.
  const { port1, port2 } = new MessageChannel();
  let failure: unknown;
  let lastSeen!: () => void;
  const last = new Promise<void>((resolve) => (lastSeen = resolve));
  port1.on("message", (m: { dirs: RawDir[]; last: boolean }) => {
    try {
      if (failure === undefined) onDirs(() => m.dirs.map(toListed));
    } catch (err) {
      failure = err;
    }
    if (m.last) lastSeen();
  });
  try {
    // A MessagePort is transferable like an ArrayBuffer (the client's parameter names only the latter).
    const reply = await worker.request({ ...message, port: port2, chunk: STREAM_CHUNK }, [port2 as unknown as ArrayBuffer]);
    if (reply.error === undefined) await last;
    if (failure !== undefined) throw failure;
    return reply;
  } finally {
    port1.close();
  }
}

function toListed(d: RawDir): ListedDir {
  if (!d.names || !d.nums) return { rel: d.rel, sig: d.sig, entries: undefined, ctimeMs: d.ctime };
  const raws = d.raws && d.raws.length > 0 ? new Map(d.raws.map(([i, b]) => [i, Buffer.from(b)])) : undefined;
  const entries: ListedEntry[] = [];
  for (let i = 0; i < d.names.length; i++) {
    const o = i * FIELDS;
    const k = d.nums[o]!;
    if (k < 0) continue; // Gone between the listing and its lstat.
    const entry: ListedEntry = {
      name: d.nums[o + 1] === 1 ? d.names[i] : undefined,
      kind: KINDS[k]!,
      size: d.nums[o + 2]!,
      mtimeMs: d.nums[o + 3]!,
      mode: d.nums[o + 4]!,
      ino: d.nums[o + 5]!,
      dev: d.nums[o + 6]!,
      blocks: d.nums[o + 7]!,
      ctimeMs: d.nums[o + 8]!,
    };
    const raw = raws?.get(i);
    if (raw) entry.raw = raw;
    entries.push(entry);
  }
  return { rel: d.rel, sig: d.sig, entries, ctimeMs: d.ctime };
}

/**
 * Lists the tree under the directory `start` (named `rel` in the reply; "" for a workspace root):
 * every directory (parents first) with its entries' `lstat`. Entries named in `ignoreNames` are
 * left out and not descended into. `start` is opened with `O_NOFOLLOW` unless `followStart` (a
 * workspace root the caller trusts): pass a descriptor path (`DirHandle.at(name)`) for a subtree,
 * and hold that directory open until this resolves. A start that is not a plain directory lists
 * nothing. `known`: directory → the `sig` the caller last saw; such directories come back
 * without entries when their listing is the same. `maxDepth`: levels below the start to descend
 * (0: the start alone; default and most {@link MAX_LIST_DEPTH}, past which `tooDeep` names them).
 * `split`: a large workspace root's subtrees are shared out between two workers (for a small one
 * the extra round trips cost more than they save). `onDirs`: directories are handed to it in
 * chunks of a few thousand entries as the workers list them (each parent before its children;
 * the chunks of the two workers interleave), and the result's `dirs` is empty — a caller can
 * start reading files while the rest is listed, and never holds the whole listing at once.
 * `onChunk`: the same chunks, kept in the worker's columns until the caller takes them (`take()`:
 * one entry object per row from then on), so a caller that reads files slower than they are
 * listed holds rows, not objects.
 */
export async function listTree(
  start: string,
  rel: string,
  ignoreNames: readonly string[],
  options: {
    followStart?: boolean;
    known?: ReadonlyMap<string, string>;
    maxDepth?: number;
    split?: boolean;
    onDirs?: (dirs: ListedDir[]) => void;
    onChunk?: (take: () => ListedDir[]) => void;
  } = {},
): Promise<TreeListing> {
  const depth = Math.min(options.maxDepth ?? MAX_LIST_DEPTH, MAX_LIST_DEPTH);
  const known = [...(options.known ?? [])];
  const follow = options.followStart ?? false;
  const given = options.onDirs;
  const onDirs = options.onChunk ?? (given ? (take: () => ListedDir[]) => given(take()) : undefined);
  const checked = (reply: Reply) => {
    if (reply.error !== undefined) throw new Error(`listing ${rel || "the workspace"} failed: ${reply.error}`);
    return reply;
  };
  let replies: Reply[];
  const deep = depth === MAX_LIST_DEPTH;
  if (!follow || depth === 0 || !options.split) replies = [checked(await list(workerAt(0), [{ dir: start, rel }], ignoreNames, follow, known, depth, deep, onDirs))];
  else {
    // A workspace root: itself first, then its subdirectories' trees shared out between the two
    // workers (each subdirectory opened O_NOFOLLOW under the root the caller trusts).
    const top = checked(await list(workerAt(0), [{ dir: start, rel }], ignoreNames, true, known, 0, false));
    const halves: { dir: string; rel: string }[][] = [[], []];
    (top.dirs?.[0]?.subdirs ?? []).forEach((name, i) => halves[i % 2]!.push({ dir: `${start}/${name}`, rel: rel === "" ? name : `${rel}/${name}` }));
    if (onDirs) {
      const dirs = top.dirs ?? [];
      onDirs(() => dirs.map(toListed));
      top.dirs = [];
    }
    const rest = await Promise.all(halves.map((h, i) => (h.length > 0 ? list(workerAt(i), h, ignoreNames, false, known, depth - 1, deep, onDirs, start) : Promise.resolve({ id: -1, dirs: [] } as Reply))));
    replies = [top, ...rest.map(checked)];
  }
  const tooDeep: string[] = [];
  for (const reply of replies) for (const r of reply.tooDeep ?? []) tooDeep.push(r);
  return { dirs: replies.flatMap((r) => r.dirs ?? []).map(toListed), tooDeep };
}

/**
 * Lists directories `rels` of the workspace `root` (relative, "" for the root itself) in one
 * round trip: each reached from the root `O_DIRECTORY | O_NOFOLLOW` component by component, its
 * entries with their `lstat` (by real path where the ancestors' ctimes prove it, as a full
 * listing does; else by descriptor), nothing below it. A directory that is gone, or
 * where something other than a directory sits on the way, is not in the reply.
 */
export async function listDirs(root: string, rels: readonly string[], ignoreNames: readonly string[]): Promise<TreeListing> {
  if (rels.length === 0) return { dirs: [], tooDeep: [] };
  const starts = rels.map((rel) => ({ dir: "", rel }));
  const reply = await list(workerAt(0), starts, ignoreNames, false, [], 0, false, undefined, undefined, root);
  if (reply.error !== undefined) throw new Error(`listing ${rels.length} directories failed: ${reply.error}`);
  return { dirs: (reply.dirs ?? []).map(toListed), tooDeep: [] };
}

/**
 * Reads and hashes the listed files of directories `dirs` of the workspace `root` in list worker
 * `which` (0 or 1): each directory reached from the root `O_DIRECTORY | O_NOFOLLOW` relative to
 * its parent, each file opened `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` and read only when its `fstat`
 * is the regular file listed (same device and inode), at most its listed size. `stats`: ino, dev
 * and size per file. Results as blobWorker.ts's `ReadBatch`; `data`: the bytes read, back to back
 * in file order (one transferred buffer).
 */
export async function readListedFiles(
  which: number,
  root: string,
  dirs: { rel: string; names: string[]; stats: Float64Array }[],
): Promise<{ batch: { hashes: string[]; nums: Float64Array }; data: Buffer }> {
  const reply = await workerAt(which).request({ op: "read", root, dirs });
  if (reply.error !== undefined) throw new Error(`reading files failed: ${reply.error}`);
  const d = reply.data!;
  return { batch: reply.batch!, data: Buffer.from(d.buffer, d.byteOffset, d.byteLength) };
}
