/**
 * The one way a factory checks its options: parse with its zod schema and, on failure, throw a
 * `TypeError` whose message lists every bad field (`z.prettifyError`), at construction time.
 * Options objects are strict at every level: an unknown key is named, with a "did you mean" when
 * one accepted key is close, and the accepted keys of that object are listed.
 */
import { channel } from "node:diagnostics_channel";
import { z } from "zod";

/**
 * Published once per {@link parseOptions} call with `{ label }` (free when nobody listens): lets a
 * test count how often a factory checks its options, e.g. once per object per `createWorkbench`.
 */
export const OPTIONS_PARSE_CHANNEL = "langgraph-workbench:options-parse";
const parses = channel(OPTIONS_PARSE_CHANNEL);

/** Parses `options` with `schema`; throws `TypeError("<label>: <every problem>")` when they do not fit. */
export function parseOptions<S extends z.ZodType>(schema: S, options: unknown, label: string): z.output<S> {
  if (parses.hasSubscribers) parses.publish({ label });
  const parsed = schema.safeParse(options);
  if (!parsed.success) throw new TypeError(`${label}: ${formatOptionsError(schema, parsed.error)}`);
  return parsed.data;
}

/** Every problem of `error`, unknown keys spelled out with the keys `schema` accepts there. */
function formatOptionsError(schema: z.ZodType, error: z.ZodError): string {
  const issues = error.issues.map((issue) =>
    issue.code === "unrecognized_keys" ? { ...issue, message: unknownKeysMessage(issue.keys, acceptedKeysAt(schema, issue.path, issue.keys)) } : issue,
  );
  return z.prettifyError(new z.ZodError(issues));
}

/** `unknown key "timetravel" (did you mean "timeTravel"?). Accepted keys: rootDir, fileOps, …` */
function unknownKeysMessage(keys: readonly string[], accepted: readonly string[] | undefined): string {
  const named = keys.map((key) => {
    const near = accepted && closestKey(key, accepted);
    return near ? `"${key}" (did you mean "${near}"?)` : `"${key}"`;
  });
  const head = `unknown key${keys.length === 1 ? "" : "s"} ${named.join(", ")}`;
  if (accepted === undefined) return head;
  return `${head}. Accepted keys: ${accepted.length ? accepted.join(", ") : "none"}`;
}

/**
 * The accepted key spelled like `key` but for case, else the nearest within a small edit
 * distance, else one that starts the other (`redactSecrets` → `redact`, at least 4 characters).
 */
function closestKey(key: string, accepted: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const sameCase = accepted.find((a) => a.toLowerCase() === lower);
  if (sameCase) return sameCase;
  let best: string | undefined;
  let bestDistance = lower.length <= 4 ? 2 : 3;
  for (const candidate of accepted) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  if (best) return best;
  const prefixed = accepted.filter((a) => {
    const [short, long] = a.length < lower.length ? [a.toLowerCase(), lower] : [lower, a.toLowerCase()];
    return short.length >= 4 && long.startsWith(short);
  });
  return prefixed.sort((a, b) => Math.abs(a.length - lower.length) - Math.abs(b.length - lower.length))[0];
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** The fields of a zod definition this module walks through. */
interface WalkedDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  options?: readonly z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  getter?: () => z.ZodType;
}

const WRAPPERS = new Set(["optional", "nullable", "default", "prefault", "nonoptional", "readonly", "catch"]);

/** The object schemas `schema` may be at `path` (through wrappers, unions, arrays and records). */
function objectSchemasAt(schema: z.ZodType, path: readonly PropertyKey[]): Array<Record<string, z.ZodType>> {
  const def = schema.def as unknown as WalkedDef;
  if (WRAPPERS.has(def.type) && def.innerType) return objectSchemasAt(def.innerType, path);
  if (def.type === "pipe" && def.in) return objectSchemasAt(def.in, path);
  if (def.type === "lazy" && def.getter) return objectSchemasAt(def.getter(), path);
  if (def.type === "union" && def.options) return def.options.flatMap((o) => objectSchemasAt(o, path));
  if (def.type === "intersection" && def.left && def.right) return [...objectSchemasAt(def.left, path), ...objectSchemasAt(def.right, path)];
  if (path.length === 0) return def.type === "object" && def.shape ? [def.shape] : [];
  const [head, ...rest] = path;
  if (def.type === "object" && def.shape && typeof head === "string" && Object.hasOwn(def.shape, head)) return objectSchemasAt(def.shape[head]!, rest);
  if (def.type === "array" && def.element) return objectSchemasAt(def.element, rest);
  if (def.type === "record" && def.valueType) return objectSchemasAt(def.valueType, rest);
  return [];
}

/** The keys of the object schema at `path` that rejected `unknown`; `undefined` when it cannot be found. */
function acceptedKeysAt(schema: z.ZodType, path: readonly PropertyKey[], unknown: readonly string[]): string[] | undefined {
  const shapes = objectSchemasAt(schema, path);
  const shape = shapes.find((s) => unknown.every((k) => !Object.hasOwn(s, k))) ?? shapes[0];
  return shape && Object.keys(shape);
}

/** A key of a {@link strictKeys} object: `true` (any value, checked by whoever uses it) or the value's own schema. */
type KeySchema = true | z.ZodType;

/**
 * A schema whose run-time check is `schema`'s and whose type is `T`: for an option whose keys are
 * checked here and whose values are checked by the code that reads them, so the inferred
 * options type still says what the values are.
 */
export function checkedAs<T>(schema: z.ZodType): z.ZodType<T, T> {
  return schema as unknown as z.ZodType<T, T>;
}

/**
 * A strict object schema with exactly the keys listed (tsc checks the list against `T`: every
 * key of `T`, no other), typed as `T`: for options objects whose values are checked by the code
 * that reads them, so only an unknown key fails here. A key given a schema (e.g. a nested
 * `strictKeys`) is checked with it; absent keys are always fine.
 */
export function strictKeys<T extends object>(keys: { [K in keyof Required<T>]: KeySchema }): z.ZodType<T, T> {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, value] of Object.entries(keys as Record<string, KeySchema>)) shape[key] = (value === true ? z.unknown() : value).optional();
  return checkedAs<T>(z.strictObject(shape));
}

/**
 * The keys of `schema` (an object schema) as a strict schema that accepts any value for them,
 * typed as `schema`'s input (give it a narrower type with {@link checkedAs}).
 */
export function keysOf<S extends z.ZodObject>(schema: S): z.ZodType<z.input<S>, z.input<S>> {
  return checkedAs<z.input<S>>(z.strictObject(Object.fromEntries(Object.keys(schema.shape).map((k) => [k, z.unknown().optional()]))));
}
