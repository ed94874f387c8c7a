/**
 * The one way a factory checks its options: parse with its zod schema and, on failure, throw a
 * `TypeError` whose message lists every bad field (`z.prettifyError`), at construction time.
 */
import { z } from "zod";

/** Parses `options` with `schema`; throws `TypeError("<label>: <every problem>")` when they do not fit. */
export function parseOptions<S extends z.ZodType>(schema: S, options: unknown, label: string): z.output<S> {
  const parsed = schema.safeParse(options);
  if (!parsed.success) throw new TypeError(`${label}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
