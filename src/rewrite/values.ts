/**
 * Applies a text rewrite to every string a tool result can carry: message content (a string or
 * content blocks of any type) and JSON-like artifacts. Copy-on-write: the same object comes back
 * when nothing changed, so unchanged results cost no allocation and keep their identity.
 */

/** Content-block keys holding binary payloads (base64 or raw bytes), never text. */
const PAYLOAD_KEYS = new Set(["data", "base64"]);
const MAX_DEPTH = 64;

type Rewrite = (text: string) => string;

/**
 * Every string field of every content block (text, `image_url`, `url`, nested objects such as
 * `image_url: { url }`, unknown block types), except binary payloads: a block's `data`/`base64`
 * field and `data:` URLs. A plain string content is rewritten as a whole.
 */
export function rewriteContent<T>(content: T, fn: Rewrite): T {
  if (typeof content === "string") return fn(content) as T;
  if (!Array.isArray(content)) return content;
  return rewriteArray(content, fn, true, 0) as T;
}

/**
 * Every string inside plain objects and arrays (deep), e.g. a ToolMessage `artifact`. Anything
 * else — class instances, Buffers, Maps, Dates — is kept as it is; `data:` URLs are kept too.
 */
export function rewriteJsonStrings<T>(value: T, fn: Rewrite): T {
  return rewriteValue(value, fn, false, 0) as T;
}

function rewriteValue(value: unknown, fn: Rewrite, blocks: boolean, depth: number): unknown {
  if (typeof value === "string") return value.startsWith("data:") ? value : fn(value);
  if (value === null || typeof value !== "object" || depth >= MAX_DEPTH) return value;
  if (Array.isArray(value)) return rewriteArray(value, fn, blocks, depth);
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    if (blocks && PAYLOAD_KEYS.has(key)) continue;
    const old = (value as Record<string, unknown>)[key];
    const next = rewriteValue(old, fn, blocks, depth + 1);
    if (next !== old) (copy ??= { ...(value as Record<string, unknown>) })[key] = next;
  }
  return copy ?? value;
}

function rewriteArray(items: readonly unknown[], fn: Rewrite, blocks: boolean, depth: number): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const old = items[i];
    const next = rewriteValue(old, fn, blocks, depth + 1);
    if (next !== old) (copy ??= items.slice())[i] = next;
  }
  return (copy ?? items) as unknown[];
}
