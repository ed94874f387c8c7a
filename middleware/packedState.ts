/**
 * Private state fields packed into one graph channel. LangGraph works on every channel of the
 * graph at every superstep, whatever it holds: it reads the channel into each node's input,
 * copies its version into every checkpoint and serialises it with it. Measured here, that is
 * 22–30 µs per channel per agent step (`npm run bench`, middleware section), so the
 * FileManager's seven private fields cost 0.1–0.2 ms a step as seven channels and a seventh of
 * that as one. The hooks keep seeing and returning the fields flat: `unpack` and `pack`
 * translate at the middleware's edge, and the packed channel applies each field's own reducer.
 */
import { Command, isCommand, ReducedValue } from "@langchain/langgraph";
import { z } from "zod";
import { copyCommand, type ToolCallResult } from "./toolResults.js";

/** A field as a `StateSchema` takes it: a plain zod schema (last write wins) or a `ReducedValue`. */
type FieldDefinition = z.ZodType | { readonly reducer: unknown };

/** The parts of a `ReducedValue` read here (its generics are the value types, not the schemas). */
interface ReducedParts {
  valueSchema: z.ZodType;
  inputSchema?: z.ZodType;
  reducer: Reducer;
}

type Reducer = (current: unknown, next: unknown) => unknown;

/** Several private fields kept in one channel named `channel`. */
export class PackedFields {
  /** The channel's definition, for a `StateSchema` (`{ [packed.channel]: packed.field }`). */
  readonly field: ReducedValue<Record<string, unknown>, Record<string, unknown>>;
  readonly keys: ReadonlySet<string>;
  private readonly reducers = new Map<string, Reducer>();

  constructor(
    readonly channel: string,
    fields: Record<string, FieldDefinition>,
  ) {
    const values: Record<string, z.ZodType> = {};
    const inputs: Record<string, z.ZodType> = {};
    for (const [key, def] of Object.entries(fields)) {
      if (ReducedValue.isInstance(def)) {
        const reduced = def as unknown as ReducedParts;
        this.reducers.set(key, reduced.reducer);
        values[key] = unwrapDefault(reduced.valueSchema).optional();
        inputs[key] = unwrapDefault(reduced.inputSchema ?? reduced.valueSchema).optional();
      } else {
        values[key] = (def as z.ZodType).optional();
        inputs[key] = (def as z.ZodType).optional();
      }
    }
    this.keys = new Set(Object.keys(fields));
    // The empty object as the initial value: LangGraph stores a channel's first write as it is,
    // without the reducer, and a first write may be a partial update (a `null` deleting a key).
    this.field = new ReducedValue(z.object(values).default(() => ({})) as unknown as z.ZodType<Record<string, unknown>>, {
      inputSchema: z.object(inputs) as unknown as z.ZodType<Record<string, unknown>>,
      reducer: (current: Record<string, unknown> | undefined, next: Record<string, unknown> | undefined) => this.reduce(current, next),
    });
  }

  private reduce(current: Record<string, unknown> | undefined, next: Record<string, unknown> | undefined): Record<string, unknown> {
    if (!next) return current ?? {};
    const out: Record<string, unknown> = { ...current };
    for (const [key, value] of Object.entries(next)) {
      const reducer = this.reducers.get(key);
      out[key] = reducer ? reducer(current?.[key], value) : value;
    }
    return out;
  }

  /** The state with the packed fields spread in (the view the hooks read). */
  unpack<S>(state: S): S {
    const packed = (state as Record<string, unknown> | undefined)?.[this.channel];
    if (!packed || typeof packed !== "object") return state;
    return { ...state, ...(packed as object) };
  }

  /** A state update with the packed fields moved into the channel (others, and `undefined`, as they are). */
  pack<U>(update: U): U {
    if (!update || typeof update !== "object" || Array.isArray(update)) return update;
    const split = this.split(Object.entries(update));
    return split ? ({ ...Object.fromEntries(split.rest), [this.channel]: split.packed } as U) : update;
  }

  /** A tool call's result with the packed fields of its state update moved into the channel. */
  packResult(result: ToolCallResult): ToolCallResult {
    if (!isCommand(result) || result.graph === Command.PARENT || result.update === undefined) return result;
    const update = result.update;
    if (!Array.isArray(update)) {
      const packed = this.pack(update as Record<string, unknown>);
      return packed === update ? result : copyCommand(result, packed as Command["update"]);
    }
    const split = this.split(update as [string, unknown][]);
    return split ? copyCommand(result, [...split.rest, [this.channel, split.packed]] as Command["update"]) : result;
  }

  /** A state hook that sees the fields flat and returns them flat, as one on the packed channel. */
  wrapHook<S, R, U>(hook: (state: S, runtime: R) => Promise<U>): (state: S, runtime: R) => Promise<U> {
    return async (state, runtime) => this.pack(await hook(this.unpack(state), runtime));
  }

  /** A `wrapToolCall` whose request state has the fields flat and whose result's update is packed. */
  wrapToolCall<Q extends { state?: unknown }, H>(wrap: (request: Q, handler: H) => Promise<ToolCallResult>): (request: Q, handler: H) => Promise<ToolCallResult> {
    return async (request, handler) => this.packResult(await wrap({ ...request, state: this.unpack(request.state) }, handler));
  }

  /** A `wrapModelCall` whose request state has the fields flat and whose Command result's update is packed. */
  wrapModelCall<Q extends { state?: unknown }, H, R>(wrap: (request: Q, handler: H) => Promise<R>): (request: Q, handler: H) => Promise<R> {
    return async (request, handler) => {
      const result = await wrap({ ...request, state: this.unpack(request.state) }, handler);
      return (isCommand(result) ? this.packResult(result) : result) as R;
    };
  }

  /** Update entries split into the packed fields and the rest; undefined when none is packed. */
  private split(entries: [string, unknown][]): { packed: Record<string, unknown>; rest: [string, unknown][] } | undefined {
    let packed: Record<string, unknown> | undefined;
    const rest: [string, unknown][] = [];
    for (const [key, value] of entries) {
      if (this.keys.has(key)) (packed ??= {})[key] = value;
      else rest.push([key, value]);
    }
    return packed && { packed, rest };
  }
}

/** A field's default belongs to the flat view; inside the channel an absent field stays absent. */
function unwrapDefault(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodDefault ? (schema.unwrap() as z.ZodType) : schema;
}
