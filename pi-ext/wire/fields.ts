// Checked reading of untrusted JSON, the toolkit of the generated decoders
// (wire/generated/decoders.ts): converters for one value (`str`, `u64`, `oneOf`, `arrayOf`,
// …), field readers saying what absence and null mean for one field of an object (`req`,
// `nullable`, `withDefault`, `optional`, `maybeNull`, `maybe`), and `record`, which turns
// one reader per field into the decoder of a whole object. Anything wrong throws a
// FieldError naming its path (`register.session.role: expected …`).
//
// Field conventions, following serde on the Rust side (core/src/protocol/wire_gen picks the
// reader of each field from its Rust attributes):
// - Records the core sends are normalized: an `Option` field is `T | null` (absent reads as
//   null), a `#[serde(default)]` field absent reads as its default (a list as empty), and a
//   field the core leaves out (`skip_serializing_if`) is optional (`key?:`), null reading as
//   absent for an `Option`.
// - Client messages keep what they were built with: an `Option` field is either absent,
//   null or a value; a field Rust defaults without `Option` (ask.options,
//   register.session.context/status/role/subagent, list_*.all, verdict.text) is absent or a
//   value, never null.
// - Unknown fields are dropped on decode (the protocol lets peers add optional fields).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** Thrown by converters and field readers; decode.ts turns it into an `invalid_message`. */
export class FieldError extends Error {}

/** Checks one JSON value found at `path` and returns it typed, or throws a FieldError. */
export type Conv<T> = (value: unknown, path: string) => T;

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function fail(path: string, expected: string, value: unknown): never {
  throw new FieldError(`${path}: expected ${expected}, got ${typeName(value)}`);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------
// Converters

export const str: Conv<string> = (v, p) => (typeof v === "string" ? v : fail(p, "a string", v));
export const bool: Conv<boolean> = (v, p) => (typeof v === "boolean" ? v : fail(p, "a boolean", v));
export const f64: Conv<number> = (v, p) => (typeof v === "number" && Number.isFinite(v) ? v : fail(p, "a number", v));
/** u64 on the Rust side; here limited to what a JS number holds exactly. */
export const u64: Conv<number> = (v, p) =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : fail(p, "a non-negative integer", v);
export const u32: Conv<number> = (v, p) => {
  const n = u64(v, p);
  return n <= 0xffff_ffff ? n : fail(p, "an unsigned 32-bit integer", v);
};
export function oneOf<T extends string>(values: readonly T[]): Conv<T> {
  return (v, p) => {
    const s = str(v, p);
    const found = values.find((x) => x === s);
    return found ?? fail(p, `one of ${values.join(", ")}`, `"${s}"`);
  };
}
export function arrayOf<T>(item: Conv<T>): Conv<T[]> {
  return (v, p) => (Array.isArray(v) ? v.map((x, i) => item(x, `${p}[${i}]`)) : fail(p, "an array", v));
}
export const json: Conv<Json> = (v, p) => {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : fail(p, "a JSON number", v);
  if (Array.isArray(v)) return v.map((x, i) => json(x, `${p}[${i}]`));
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) out[k] = json(x, `${p}.${k}`);
    return out;
  }
  return fail(p, "a JSON value", v);
};

// ---------------------------------------------------------------------------------------
// Field readers

/** What an optional reader returns for a field left out: the decoded object leaves it out too. */
const ABSENT: unique symbol = Symbol("absent");

type Obj = Record<string, unknown>;

/** Reads a field the decoded object always has (`obj` is the object found at `path`). */
export interface Req<T> {
  readonly optional: false;
  read(obj: Obj, key: string, path: string): T;
}

/** Reads a field that may be left out, and is then left out again. */
export interface Opt<T> {
  readonly optional: true;
  read(obj: Obj, key: string, path: string): T | typeof ABSENT;
}

/** Required, not null. */
export function req<T>(conv: Conv<T>): Req<T> {
  return {
    optional: false,
    read(obj, key, path) {
      if (!(key in obj)) throw new FieldError(`${path}.${key}: missing field`);
      return conv(obj[key], `${path}.${key}`);
    },
  };
}

/** `Option<T>` in a record the core sends: absent or null reads as null. */
export function nullable<T>(conv: Conv<T>): Req<T | null> {
  return {
    optional: false,
    read(obj, key, path) {
      const v = obj[key];
      return v === undefined || v === null ? null : conv(v, `${path}.${key}`);
    },
  };
}

/** `#[serde(default)] T` in a record the core sends: absent reads as a fresh `fallback()`. */
export function withDefault<T>(conv: Conv<T>, fallback: () => T): Req<T> {
  return {
    optional: false,
    read(obj, key, path) {
      const v = obj[key];
      return v === undefined ? fallback() : conv(v, `${path}.${key}`);
    },
  };
}

/** `Option<T>` the core leaves out when `None` (`skip_serializing_if`): absent or null reads as absent. */
export function optional<T>(conv: Conv<T>): Opt<T> {
  return {
    optional: true,
    read(obj, key, path) {
      const v = obj[key];
      return v === undefined || v === null ? ABSENT : conv(v, `${path}.${key}`);
    },
  };
}

/** Optional field of a client message, `Option<T>` in Rust: kept absent, null or a value. */
export function maybeNull<T>(conv: Conv<T>): Opt<T | null> {
  return {
    optional: true,
    read(obj, key, path) {
      if (!(key in obj)) return ABSENT;
      const v = obj[key];
      return v === null ? null : conv(v, `${path}.${key}`);
    },
  };
}

/**
 * Optional field that Rust defaults but never accepts as null: a client message's, or a
 * record's field the core leaves out when empty (`skip_serializing_if`).
 */
export function maybe<T>(conv: Conv<T>): Opt<T> {
  return {
    optional: true,
    read(obj, key, path) {
      if (!(key in obj)) return ABSENT;
      return conv(obj[key], `${path}.${key}`);
    },
  };
}

// ---------------------------------------------------------------------------------------
// Records

/**
 * One reader per field of `T`, in the order they are read: a required field of `T` takes a
 * `Req` of its exact type, an optional one (`key?:`) an `Opt`, and every field needs one.
 */
export type Fields<T> = {
  readonly [K in keyof T]-?: {} extends Pick<T, K> ? Opt<Exclude<T[K], undefined>> : Req<T[K]>;
};

/**
 * The decoder of an object with these fields: checks that the value is an object, reads
 * each field in order (the first wrong one throws) and drops fields it does not name.
 */
export function record<T>(fields: NoInfer<Fields<T>>): Conv<T> {
  const readers: [string, Req<unknown> | Opt<unknown>][] = Object.entries(fields);
  return (value, path) => {
    if (!isObject(value)) fail(path, "an object", value);
    const out: Obj = {};
    for (const [key, reader] of readers) {
      const v = reader.read(value, key, path);
      if (v !== ABSENT) out[key] = v;
    }
    // Sound because `Fields<T>` gave every key of T a reader of its type.
    return out as T;
  };
}

/** One decoder per message `type` of the union `M`, of every field but `type`. */
export type Bodies<M extends { type: string }> = {
  readonly [T in M["type"]]: Conv<Omit<Extract<M, { type: T }>, "type">>;
};
