/**
 * A hostile PDF: one page whose content stream is a flate bomb (`decodedBytes` of spaces,
 * deflated ~1000:1, so 1 GiB decoded is a ~1 MB file). Built by streaming through zlib, so making
 * it costs the test process a few MB, not the decoded size.
 */
import { Readable } from "node:stream";
import zlib from "node:zlib";

async function deflatedSpaces(decodedBytes: number): Promise<Buffer> {
  const chunk = Buffer.alloc(4 * 1024 * 1024, 0x20);
  let left = decodedBytes;
  const source = Readable.from(
    (function* () {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        yield chunk.subarray(0, n);
      }
    })(),
  );
  const out: Buffer[] = [];
  for await (const piece of source.pipe(zlib.createDeflate({ level: 9 }))) out.push(piece as Buffer);
  return Buffer.concat(out);
}

export async function flateBombPdf(decodedBytes: number): Promise<Buffer> {
  const stream = await deflatedSpaces(decodedBytes);
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
  ];
  const parts: Buffer[] = [];
  let length = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    length += b.length;
  };
  const offsets: number[] = [];
  push(Buffer.from("%PDF-1.4\n", "latin1"));
  objects.forEach((o, i) => {
    offsets.push(length);
    push(Buffer.from(`${i + 1} 0 obj\n${o}\nendobj\n`, "latin1"));
  });
  offsets.push(length);
  push(Buffer.from(`5 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, "latin1"));
  push(stream);
  push(Buffer.from("\nendstream\nendobj\n", "latin1"));
  const xref = length;
  const table = offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  push(Buffer.from(`xref\n0 6\n0000000000 65535 f \n${table}trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`, "latin1"));
  return Buffer.concat(parts);
}
