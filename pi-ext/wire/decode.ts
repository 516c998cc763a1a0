// Decoding: one frame body (bytes or text) into a checked ClientMsg or ServerMsg, or a
// WireDecodeError with the code the core would give (`malformed_frame`, `unknown_type`,
// `invalid_message` naming the wrong field), following the field conventions at the top of
// wire/records.ts.

import { CLIENT_TYPES, SERVER_TYPES, type ClientMsg, type ServerMsg } from "./messages.ts";
import {
  ASK_STATES,
  CLIENT_KINDS,
  DELIVERY_KINDS,
  PAIRING_CHANGES,
  PAIRING_STATES,
  ROLES,
  VERDICT_KINDS,
  VIEW_REASONS,
  type Ask,
  type BridgeInfo,
  type ClientKind,
  type ContextUsage,
  type CoreStatus,
  type Delivery,
  type Json,
  type JsonObject,
  type Pairing,
  type Registration,
  type Report,
  type Role,
  type Sender,
  type SessionInfo,
  type Verdict,
  type VerdictKind,
  type View,
} from "./records.ts";

export type DecodeErrorCode = "malformed_frame" | "unknown_type" | "invalid_message";

/** Why a frame body is not a message; `requestId` is set when the body's id could be read. */
export class WireDecodeError extends Error {
  readonly code: DecodeErrorCode;
  readonly requestId: number | null;
  constructor(code: DecodeErrorCode, message: string, requestId: number | null) {
    super(message);
    this.name = "WireDecodeError";
    this.code = code;
    this.requestId = requestId;
  }
}

/** Thrown by field readers; turned into an `invalid_message` WireDecodeError. */
class FieldError extends Error {}

type Conv<T> = (value: unknown, path: string) => T;

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function fail(path: string, expected: string, value: unknown): never {
  throw new FieldError(`${path}: expected ${expected}, got ${typeName(value)}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const str: Conv<string> = (v, p) => (typeof v === "string" ? v : fail(p, "a string", v));
const bool: Conv<boolean> = (v, p) => (typeof v === "boolean" ? v : fail(p, "a boolean", v));
const f64: Conv<number> = (v, p) => (typeof v === "number" && Number.isFinite(v) ? v : fail(p, "a number", v));
/** u64 on the Rust side; here limited to what a JS number holds exactly. */
const u64: Conv<number> = (v, p) =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : fail(p, "a non-negative integer", v);
const u32: Conv<number> = (v, p) => {
  const n = u64(v, p);
  return n <= 0xffff_ffff ? n : fail(p, "an unsigned 32-bit integer", v);
};
function oneOf<T extends string>(values: readonly T[]): Conv<T> {
  return (v, p) => {
    const s = str(v, p);
    const found = values.find((x) => x === s);
    return found ?? fail(p, `one of ${values.join(", ")}`, `"${s}"`);
  };
}
function arrayOf<T>(item: Conv<T>): Conv<T[]> {
  return (v, p) => (Array.isArray(v) ? v.map((x, i) => item(x, `${p}[${i}]`)) : fail(p, "an array", v));
}
const json: Conv<Json> = (v, p) => {
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

/** Reads the fields of one JSON object, naming the path of anything wrong. */
class Fields {
  readonly #obj: Record<string, unknown>;
  readonly #path: string;
  constructor(value: unknown, path: string) {
    if (!isObject(value)) fail(path, "an object", value);
    this.#obj = value;
    this.#path = path;
  }
  #at(key: string): string {
    return `${this.#path}.${key}`;
  }
  /** Required, not null. */
  req<T>(key: string, conv: Conv<T>): T {
    if (!(key in this.#obj)) throw new FieldError(`${this.#at(key)}: missing field`);
    return conv(this.#obj[key], this.#at(key));
  }
  /** `Option<T>` in a record the core sends: absent or null reads as null. */
  nullable<T>(key: string, conv: Conv<T>): T | null {
    const v = this.#obj[key];
    return v === undefined || v === null ? null : conv(v, this.#at(key));
  }
  /** `#[serde(default)] T` in a record the core sends: absent reads as the default. */
  withDefault<T>(key: string, conv: Conv<T>, fallback: T): T {
    const v = this.#obj[key];
    return v === undefined ? fallback : conv(v, this.#at(key));
  }
  /** Optional field of a client message, `Option<T>` in Rust: kept absent, null or a value. */
  maybeNull<T>(key: string, conv: Conv<T>): { present: false } | { present: true; value: T | null } {
    if (!(key in this.#obj)) return { present: false };
    const v = this.#obj[key];
    return { present: true, value: v === null ? null : conv(v, this.#at(key)) };
  }
  /** Optional field of a client message that Rust defaults but never accepts as null. */
  maybe<T>(key: string, conv: Conv<T>): { present: false } | { present: true; value: T } {
    if (!(key in this.#obj)) return { present: false };
    return { present: true, value: conv(this.#obj[key], this.#at(key)) };
  }
}

type Maybe<T> = { present: false } | { present: true; value: T };
/** Spreads `{[key]: value}` only when the field was present. */
function opt<K extends string, T>(key: K, field: Maybe<T>): { [P in K]?: T } {
  const out: { [P in K]?: T } = {};
  if (field.present) out[key] = field.value;
  return out;
}

const contextUsage: Conv<ContextUsage> = (v, p) => {
  const f = new Fields(v, p);
  return {
    ...opt("tokens", f.maybeNull("tokens", u64)),
    ...opt("window", f.maybeNull("window", u64)),
    ...opt("percent", f.maybeNull("percent", f64)),
  };
};

const role: Conv<Role> = oneOf(ROLES);
const clientKind: Conv<ClientKind> = oneOf(CLIENT_KINDS);

const registration: Conv<Registration> = (v, p) => {
  const f = new Fields(v, p);
  return {
    session_id: f.req("session_id", str),
    ...opt("name", f.maybeNull("name", str)),
    cwd: f.req("cwd", str),
    ...opt("pid", f.maybeNull("pid", u32)),
    ...opt("model", f.maybeNull("model", str)),
    ...opt("context", f.maybe("context", contextUsage)),
    ...opt("status", f.maybe("status", str)),
    ...opt("role", f.maybe("role", role)),
    ...opt("session_file", f.maybeNull("session_file", str)),
    ...opt("subagent", f.maybe("subagent", bool)),
  };
};

const sessionInfo: Conv<SessionInfo> = (v, p) => {
  const f = new Fields(v, p);
  return {
    id: f.req("id", str),
    name: f.req("name", str),
    cwd: f.req("cwd", str),
    pid: f.nullable("pid", u32),
    model: f.nullable("model", str),
    status: f.req("status", str),
    role: f.req("role", role),
    connected: f.req("connected", bool),
    context_tokens: f.nullable("context_tokens", u64),
    context_window: f.nullable("context_window", u64),
    context_percent: f.nullable("context_percent", f64),
    repo: f.nullable("repo", str),
    branch: f.nullable("branch", str),
    head: f.nullable("head", str),
    worktree: f.req("worktree", bool),
    session_file: f.nullable("session_file", str),
    subagent: f.withDefault("subagent", bool, false),
    open_asks: f.req("open_asks", u32),
    pending_messages: f.req("pending_messages", u32),
    first_seen: f.req("first_seen", u64),
    last_seen: f.req("last_seen", u64),
  };
};

const ask: Conv<Ask> = (v, p) => {
  const f = new Fields(v, p);
  return {
    id: f.req("id", u64),
    session_id: f.req("session_id", str),
    session_name: f.req("session_name", str),
    question: f.req("question", str),
    options: f.withDefault("options", arrayOf(str), []),
    details: f.nullable("details", str),
    state: f.req("state", oneOf(ASK_STATES)),
    answer: f.nullable("answer", str),
    answered_by: f.nullable("answered_by", str),
    created_at: f.req("created_at", u64),
    answered_at: f.nullable("answered_at", u64),
  };
};

const sender: Conv<Sender> = (v, p) => {
  const f = new Fields(v, p);
  return { kind: f.req("kind", clientKind), session_id: f.nullable("session_id", str), name: f.req("name", str) };
};

const delivery: Conv<Delivery> = (v, p) => {
  const f = new Fields(v, p);
  return {
    id: f.req("id", u64),
    kind: f.req("kind", oneOf(DELIVERY_KINDS)),
    text: f.req("text", str),
    from: f.req("from", sender),
    ask_id: f.nullable("ask_id", u64),
    question: f.nullable("question", str),
    pairing_id: f.nullable("pairing_id", u64),
    look: f.nullable("look", u32),
    created_at: f.req("created_at", u64),
  };
};

const pairing: Conv<Pairing> = (v, p) => {
  const f = new Fields(v, p);
  return {
    id: f.req("id", u64),
    supervisor_id: f.req("supervisor_id", str),
    supervisor_name: f.req("supervisor_name", str),
    worker_id: f.req("worker_id", str),
    worker_name: f.req("worker_name", str),
    cwd: f.req("cwd", str),
    goal: f.nullable("goal", str),
    goal_file: f.nullable("goal_file", str),
    state: f.req("state", oneOf(PAIRING_STATES)),
    looks: f.req("looks", u32),
    steers: f.req("steers", u32),
    created_at: f.req("created_at", u64),
    last_look_at: f.nullable("last_look_at", u64),
    ended_at: f.nullable("ended_at", u64),
    end_reason: f.nullable("end_reason", str),
    ended_by: f.nullable("ended_by", str),
    evidence: f.nullable("evidence", str),
    supervisor_connected: f.req("supervisor_connected", bool),
    worker_connected: f.req("worker_connected", bool),
  };
};

const verdictKind: Conv<VerdictKind> = oneOf(VERDICT_KINDS);

const verdict: Conv<Verdict> = (v, p) => {
  const f = new Fields(v, p);
  return {
    kind: f.req("kind", verdictKind),
    text: f.req("text", str),
    look: f.req("look", u32),
    created_at: f.req("created_at", u64),
  };
};

const view: Conv<View> = (v, p) => {
  const f = new Fields(v, p);
  return {
    pairing_id: f.req("pairing_id", u64),
    look: f.req("look", u32),
    reason: f.req("reason", oneOf(VIEW_REASONS)),
    text: f.req("text", str),
    entries: f.req("entries", u32),
    pending_tool_calls: f.req("pending_tool_calls", u32),
    unchanged: f.req("unchanged", bool),
    created_at: f.req("created_at", u64),
  };
};

const report: Conv<Report> = (v, p) => {
  const f = new Fields(v, p);
  return {
    id: f.req("id", u64),
    session_id: f.req("session_id", str),
    session_name: f.req("session_name", str),
    text: f.req("text", str),
    created_at: f.req("created_at", u64),
  };
};

const bridgeInfo: Conv<BridgeInfo> = (v, p) => {
  const f = new Fields(v, p);
  return { name: f.req("name", str), pid: f.nullable("pid", u32), connected_since: f.req("connected_since", u64) };
};

const coreStatus: Conv<CoreStatus> = (v, p) => {
  const f = new Fields(v, p);
  return {
    core_version: f.req("core_version", str),
    protocol: f.req("protocol", u32),
    pid: f.req("pid", u32),
    started_at: f.req("started_at", u64),
    uptime_ms: f.req("uptime_ms", u64),
    state_dir: f.req("state_dir", str),
    socket: f.req("socket", str),
    sessions_connected: f.req("sessions_connected", u32),
    sessions_known: f.req("sessions_known", u32),
    open_asks: f.req("open_asks", u32),
    bridges: f.req("bridges", arrayOf(bridgeInfo)),
  };
};

function decodeClientFields(type: ClientMsg["type"], f: Fields): ClientMsg {
  switch (type) {
    case "hello":
      return {
        type,
        id: f.req("id", u64),
        protocol: f.req("protocol", u32),
        client: f.req("client", clientKind),
        ...opt("client_name", f.maybeNull("client_name", str)),
      };
    case "register":
      return { type, id: f.req("id", u64), session: f.req("session", registration) };
    case "update":
      return {
        type,
        id: f.req("id", u64),
        ...opt("name", f.maybeNull("name", str)),
        ...opt("model", f.maybeNull("model", str)),
        ...opt("context", f.maybeNull("context", contextUsage)),
        ...opt("status", f.maybeNull("status", str)),
        ...opt("cwd", f.maybeNull("cwd", str)),
        ...opt("role", f.maybeNull("role", role)),
        ...opt("session_file", f.maybeNull("session_file", str)),
      };
    case "ask":
      return {
        type,
        id: f.req("id", u64),
        question: f.req("question", str),
        ...opt("options", f.maybe("options", arrayOf(str))),
        ...opt("details", f.maybeNull("details", str)),
      };
    case "report":
      return { type, id: f.req("id", u64), text: f.req("text", str) };
    case "answer":
      return {
        type,
        id: f.req("id", u64),
        ask: f.req("ask", u64),
        text: f.req("text", str),
        ...opt("by", f.maybeNull("by", str)),
      };
    case "send":
      return {
        type,
        id: f.req("id", u64),
        to: f.req("to", str),
        text: f.req("text", str),
        ...opt("by", f.maybeNull("by", str)),
      };
    case "ack":
      return { type, ids: f.req("ids", arrayOf(u64)) };
    case "list_sessions":
    case "list_asks":
      return { type, id: f.req("id", u64), ...opt("all", f.maybe("all", bool)) };
    case "status":
    case "subscribe":
    case "ping":
    case "worker_view":
      return { type, id: f.req("id", u64) };
    case "supervise":
      return {
        type,
        id: f.req("id", u64),
        ...opt("worker", f.maybeNull("worker", str)),
        ...opt("supervisor", f.maybeNull("supervisor", str)),
        ...opt("goal", f.maybeNull("goal", str)),
        ...opt("cwd", f.maybeNull("cwd", str)),
        ...opt("by", f.maybeNull("by", str)),
      };
    case "unpair":
    case "look":
      return {
        type,
        id: f.req("id", u64),
        ...opt("session", f.maybeNull("session", str)),
        ...opt("by", f.maybeNull("by", str)),
      };
    case "set_goal":
      return {
        type,
        id: f.req("id", u64),
        goal: f.req("goal", str),
        ...opt("session", f.maybeNull("session", str)),
        ...opt("cwd", f.maybeNull("cwd", str)),
        ...opt("by", f.maybeNull("by", str)),
      };
    case "verdict":
      return {
        type,
        id: f.req("id", u64),
        verdict: f.req("verdict", verdictKind),
        ...opt("text", f.maybe("text", str)),
      };
    case "list_pairings":
      return { type, id: f.req("id", u64), ...opt("all", f.maybe("all", bool)) };
  }
}

function decodeServerFields(type: ServerMsg["type"], f: Fields): ServerMsg {
  switch (type) {
    case "welcome":
      return {
        type,
        id: f.req("id", u64),
        protocol: f.req("protocol", u32),
        core_version: f.req("core_version", str),
        store_id: f.req("store_id", str),
        pid: f.req("pid", u32),
      };
    case "registered":
      return {
        type,
        id: f.req("id", u64),
        session: f.req("session", sessionInfo),
        pending: f.req("pending", u32),
        pairings: f.withDefault("pairings", arrayOf(pairing), []),
      };
    case "updated":
      return { type, id: f.req("id", u64), session: f.req("session", sessionInfo) };
    case "asked":
    case "answered":
      return { type, id: f.req("id", u64), ask: f.req("ask", ask) };
    case "reported":
      return { type, id: f.req("id", u64), report: f.req("report", report) };
    case "sent":
      return {
        type,
        id: f.req("id", u64),
        message_id: f.req("message_id", u64),
        session_id: f.req("session_id", str),
        session_name: f.req("session_name", str),
        connected: f.req("connected", bool),
      };
    case "sessions":
      return { type, id: f.req("id", u64), sessions: f.req("sessions", arrayOf(sessionInfo)) };
    case "asks":
      return { type, id: f.req("id", u64), asks: f.req("asks", arrayOf(ask)) };
    case "core_status":
      return { type, id: f.req("id", u64), status: f.req("status", coreStatus) };
    case "subscribed":
    case "pong":
      return { type, id: f.req("id", u64) };
    case "error":
      return {
        type,
        id: f.nullable("id", u64),
        code: f.req("code", str),
        message: f.req("message", str),
        details: f.withDefault("details", json, null),
      };
    case "deliver":
      return { type, message: f.req("message", delivery) };
    case "session_joined":
    case "session_changed":
    case "session_left":
      return { type, session: f.req("session", sessionInfo) };
    case "ask_opened":
    case "ask_answered":
      return { type, ask: f.req("ask", ask) };
    case "report_posted":
      return { type, report: f.req("report", report) };
    case "paired":
    case "unpaired":
    case "goal_set":
    case "look_requested":
      return { type, id: f.req("id", u64), pairing: f.req("pairing", pairing) };
    case "view":
      return { type, id: f.req("id", u64), view: f.req("view", view) };
    case "verdict_accepted":
      return {
        type,
        id: f.req("id", u64),
        pairing: f.req("pairing", pairing),
        verdict: f.req("verdict", verdict),
        hint: f.nullable("hint", str),
      };
    case "pairings":
      return { type, id: f.req("id", u64), pairings: f.req("pairings", arrayOf(pairing)) };
    case "pairing_event":
      return {
        type,
        change: f.req("change", oneOf(PAIRING_CHANGES)),
        pairing: f.req("pairing", pairing),
        verdict: f.nullable("verdict", verdict),
        by: f.nullable("by", str),
      };
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Parse a body into a JSON object with a known `type`, as the core's `frame::parse_object`. */
function parseTyped<T extends string>(
  body: Uint8Array | string,
  known: readonly T[],
): { type: T; fields: Fields; id: number | null } {
  let text: string;
  if (typeof body === "string") {
    text = body;
  } else {
    try {
      text = utf8.decode(body);
    } catch (e) {
      throw new WireDecodeError("malformed_frame", `frame body is not UTF-8: ${String(e)}`, null);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new WireDecodeError("malformed_frame", `frame body is not JSON: ${String(e)}`, null);
  }
  if (!isObject(value)) throw new WireDecodeError("malformed_frame", "frame body is not a JSON object", null);
  const rawId = value["id"];
  const id = typeof rawId === "number" && Number.isSafeInteger(rawId) && rawId >= 0 ? rawId : null;
  const rawType = value["type"];
  if (rawType === undefined) throw new WireDecodeError("invalid_message", "missing `type`", id);
  if (typeof rawType !== "string") throw new WireDecodeError("invalid_message", "`type` must be a string", id);
  const type = known.find((t) => t === rawType);
  if (type === undefined) throw new WireDecodeError("unknown_type", `unknown message type "${rawType}"`, id);
  return { type, fields: new Fields(value, type), id };
}

function withFieldErrors<T>(type: string, id: number | null, run: () => T): T {
  try {
    return run();
  } catch (e) {
    if (e instanceof FieldError) throw new WireDecodeError("invalid_message", `invalid ${type} message: ${e.message}`, id);
    throw e;
  }
}

/** Decode one frame body sent by the core. Throws WireDecodeError. */
export function decodeServerMsg(body: Uint8Array | string): ServerMsg {
  const { type, fields, id } = parseTyped(body, SERVER_TYPES);
  return withFieldErrors(type, id, () => decodeServerFields(type, fields));
}

/** Decode one frame body sent by a client (used by tests and fakes). Throws WireDecodeError. */
export function decodeClientMsg(body: Uint8Array | string): ClientMsg {
  const { type, fields, id } = parseTyped(body, CLIENT_TYPES);
  return withFieldErrors(type, id, () => decodeClientFields(type, fields));
}
