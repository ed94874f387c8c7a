/**
 * The descriptor walk the inline worker sources share (the list workers and the snapshot blob
 * worker are `eval` workers, so they cannot import): JavaScript source text, interpolated into
 * each worker's source, so the one rule for reaching a workspace directory exists once. It
 * expects `fs` and `C = fs.constants` in scope and defines:
 * - `DIR`, `FILE`: open flags for a directory and a regular file, never following a link
 *   (`O_NOFOLLOW`), never blocking on a FIFO (`O_NONBLOCK`), never taking a terminal;
 * - `viaFd`: on Linux each component is looked up relative to the held descriptor
 *   (`/proc/self/fd/N/name`), so only the last component is ever resolved by name;
 * - `openDir(root, rel)`: `{ fd, real }` of `root/rel`, every component opened `O_NOFOLLOW`
 *   from the one before; throws (closing what it held) where a component is not a directory.
 */
export const WORKER_DIR_WALK = `
  const DIR = C.O_RDONLY | (C.O_DIRECTORY || 0) | (C.O_NOFOLLOW || 0);
  const FILE = C.O_RDONLY | (C.O_NOFOLLOW || 0) | (C.O_NONBLOCK || 0) | (C.O_NOCTTY || 0);
  const viaFd = process.platform === "linux";
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
`;
