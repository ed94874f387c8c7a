/**
 * Line windowing and counting over a stream of byte chunks, shared by the backends that read
 * chunk by chunk (native fs, SFTP) so every backend answers a window the same way.
 */

const NEWLINE = 0x0a;

export interface LineWindow {
  offset: number;
  limit: number;
  maxLineChars: number;
}

export interface LinesResult {
  lines: string[];
  cutLines: number[];
  hasMore: boolean;
  totalLines?: number;
}

/** Decodes one line's bytes, dropping the `\r` of a CRLF ending. */
function decodeLine(bytes: Buffer): string {
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
  return bytes.toString("utf8", 0, end);
}

/**
 * Collects lines `offset .. offset+limit-1` (1-based) from chunks fed in file order. `push`
 * returns a result as soon as the window is full and another line starts (the caller stops
 * reading); otherwise `end()` gives the result with the total, once the file is exhausted.
 * Chunks may be reused by the caller after `push` returns: kept bytes are copied.
 */
export class LineWindowCollector {
  private readonly first: number;
  private readonly last: number;
  private readonly maxLineChars: number;
  /** A UTF-8 char is at most 4 bytes: keeping 4×max bytes per line is always enough to cut it. */
  private readonly maxLineBytes: number;
  private readonly lines: string[] = [];
  private readonly cutLines: number[] = [];
  private lineNo = 1;
  private parts: Buffer[] = [];
  private partBytes = 0;
  private cut = false;
  private sawAny = false;
  private lastByteWasNewline = false;

  /** `startLine`: the line the first chunk begins with (a read from an indexed offset). */
  constructor(window: LineWindow, startLine = 1) {
    this.lineNo = Math.max(1, Math.floor(startLine));
    this.first = Math.max(1, Math.floor(window.offset));
    this.last = this.first + Math.max(0, Math.floor(window.limit)) - 1;
    this.maxLineChars = window.maxLineChars;
    this.maxLineBytes = Math.max(1, window.maxLineChars) * 4;
  }

  /** Feeds the next chunk; a result means the window is complete and reading can stop. */
  push(view: Buffer): LinesResult | undefined {
    const length = view.length;
    if (length === 0) return undefined;
    this.sawAny = true;
    this.lastByteWasNewline = view[length - 1] === NEWLINE;
    let pos = 0;
    // Lines before the window: only count newlines (the hot loop of a deep offset).
    while (this.lineNo < this.first) {
      const nl = view.indexOf(NEWLINE, pos);
      if (nl === -1) {
        pos = length;
        break;
      }
      this.lineNo++;
      pos = nl + 1;
    }
    while (pos < length) {
      const nl = view.indexOf(NEWLINE, pos);
      const end = nl === -1 ? length : nl;
      if (this.lineNo > this.last) {
        // The window is full and another line starts here: there is more to read.
        return { lines: this.lines, cutLines: this.cutLines, hasMore: true };
      }
      if (this.lineNo >= this.first) this.keep(view.subarray(pos, end));
      if (end === length) break;
      if (this.lineNo >= this.first) this.finishLine();
      this.lineNo++;
      pos = end + 1;
    }
    return undefined;
  }

  /** End of file. A final line without a newline still counts as a line. */
  end(): LinesResult {
    let total = this.lineNo - 1;
    if (this.sawAny && !this.lastByteWasNewline) {
      total = this.lineNo;
      if (this.lineNo >= this.first && this.lineNo <= this.last) this.finishLine();
    }
    return { lines: this.lines, cutLines: this.cutLines, hasMore: false, totalLines: total };
  }

  private keep(slice: Buffer): void {
    if (this.partBytes >= this.maxLineBytes) {
      if (slice.length > 0) this.cut = true;
      return;
    }
    const room = this.maxLineBytes - this.partBytes;
    if (slice.length > room) this.cut = true;
    const kept = slice.length > room ? slice.subarray(0, room) : slice;
    // Copy: the chunk buffer may be reused by the next read.
    this.parts.push(Buffer.from(kept));
    this.partBytes += kept.length;
  }

  private finishLine(): void {
    const max = this.maxLineChars;
    let text = decodeLine(this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts));
    if (this.cut || text.length > max) {
      // Never split a surrogate pair (an emoji cut in half is not valid text).
      const high = text.charCodeAt(max - 1);
      text = text.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
      this.cutLines.push(this.lineNo);
    }
    this.lines.push(text);
    this.parts = [];
    this.partBytes = 0;
    this.cut = false;
  }
}

/** Counts lines over chunks; a last line without a newline still counts. */
export class LineCounter {
  private count = 0;
  private lastByte = NEWLINE;

  push(view: Buffer): void {
    if (view.length === 0) return;
    let pos = view.indexOf(NEWLINE, 0);
    while (pos !== -1) {
      this.count++;
      pos = view.indexOf(NEWLINE, pos + 1);
    }
    this.lastByte = view[view.length - 1]!;
  }

  get total(): number {
    return this.lastByte === NEWLINE ? this.count : this.count + 1;
  }
}
