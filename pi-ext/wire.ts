// The intercom wire format, as the TypeScript side sees it: every message type of protocol 1
// as a strict discriminated union mirroring core/src/protocol (ClientMsg, ServerMsg and the
// records inside them), checked decoders that turn untrusted JSON into those types (or say
// which field is wrong), and the framing: a 4-byte big-endian body length, then one UTF-8
// JSON object. Pure code: no sockets, no Pi. docs/PROTOCOL.md is the prose contract; the
// golden fixtures in tests/fixtures/protocol/ are checked against this file by the tests.
//
// Field conventions, following serde on the Rust side:
// - Records the core sends are normalized: an `Option` field is `T | null` (absent reads as
//   null) and a defaulted list is always an array.
// - Client messages keep what they were built with: an optional field is either absent or,
//   where Rust accepts it, null. Fields Rust defaults without `Option` (ask.options,
//   register.session.context/status/role/subagent, list_*.all, verdict.text) must never be
//   null.
// - Unknown fields are dropped on decode (the protocol lets peers add optional fields).

export const PROTOCOL_VERSION = 1;
/** Bytes in the length prefix. */
export const HEADER_LEN = 4;
/** The core's default largest body (1 MiB, `core.limits.max_frame_bytes`). */
export const DEFAULT_MAX_FRAME = 1024 * 1024;

// ---------------------------------------------------------------------------------------
// JSON

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

// ---------------------------------------------------------------------------------------
// Records (core/src/protocol/types.rs)

export type ClientKind = "pi" | "bridge" | "cli";
export const CLIENT_KINDS: readonly ClientKind[] = ["pi", "bridge", "cli"];

export type Role = "lead" | "manager" | "chief" | "supervisor";
export const ROLES: readonly Role[] = ["lead", "manager", "chief", "supervisor"];

/** Context fill as Pi reports it; every part may be unknown (right after a compaction). */
export interface ContextUsage {
  tokens?: number | null;
  window?: number | null;
  percent?: number | null;
}

/** What a Pi session says about itself in `register`. Only session_id and cwd are required. */
export interface Registration {
  session_id: string;
  name?: string | null;
  cwd: string;
  pid?: number | null;
  model?: string | null;
  context?: ContextUsage;
  /** `idle`, `thinking` or `tool:<name>`. */
  status?: string;
  role?: Role;
  session_file?: string | null;
  /** A pi-subagents child (`PI_SUBAGENT_CHILD` set): never offered as a worker. */
  subagent?: boolean;
}

/** A session as the core knows it. */
export interface SessionInfo {
  id: string;
  name: string;
  cwd: string;
  pid: number | null;
  model: string | null;
  status: string;
  role: Role;
  connected: boolean;
  context_tokens: number | null;
  context_window: number | null;
  context_percent: number | null;
  repo: string | null;
  branch: string | null;
  head: string | null;
  worktree: boolean;
  session_file: string | null;
  subagent: boolean;
  open_asks: number;
  pending_messages: number;
  first_seen: number;
  last_seen: number;
}

export type AskState = "open" | "answered";
export const ASK_STATES: readonly AskState[] = ["open", "answered"];

export interface Ask {
  id: number;
  session_id: string;
  session_name: string;
  question: string;
  options: string[];
  details: string | null;
  state: AskState;
  answer: string | null;
  answered_by: string | null;
  created_at: number;
  answered_at: number | null;
}

/** `view` and `brief` go to supervisors (docs/PROTOCOL.md, Supervision). */
export type DeliveryKind = "steer" | "message" | "answer" | "view" | "brief";
export const DELIVERY_KINDS: readonly DeliveryKind[] = ["steer", "message", "answer", "view", "brief"];

/** Who sent a delivery, stamped by the core from the sender's connection. */
export interface Sender {
  kind: ClientKind;
  session_id: string | null;
  name: string;
}

/** One message for a session; `id` is unique within the store named by `welcome.store_id`. */
export interface Delivery {
  id: number;
  kind: DeliveryKind;
  text: string;
  from: Sender;
  ask_id: number | null;
  question: string | null;
  /** For `view` and `brief`, and for steers from a supervisor: the pairing. */
  pairing_id: number | null;
  /** For `view`: the look's number within the pairing (1, 2, …). */
  look: number | null;
  created_at: number;
}

export interface Report {
  id: number;
  session_id: string;
  session_name: string;
  text: string;
  created_at: number;
}

export interface BridgeInfo {
  name: string;
  pid: number | null;
  connected_since: number;
}

export interface CoreStatus {
  core_version: string;
  protocol: number;
  pid: number;
  started_at: number;
  uptime_ms: number;
  state_dir: string;
  socket: string;
  sessions_connected: number;
  sessions_known: number;
  open_asks: number;
  bridges: BridgeInfo[];
}

export type PairingState = "active" | "ended";
export const PAIRING_STATES: readonly PairingState[] = ["active", "ended"];

/** A supervisor session watching a worker session toward a goal; held by the core. */
export interface Pairing {
  id: number;
  supervisor_id: string;
  supervisor_name: string;
  worker_id: string;
  worker_name: string;
  cwd: string;
  goal: string | null;
  goal_file: string | null;
  state: PairingState;
  looks: number;
  steers: number;
  created_at: number;
  last_look_at: number | null;
  ended_at: number | null;
  /** `done` or `stopped`. */
  end_reason: string | null;
  ended_by: string | null;
  evidence: string | null;
  supervisor_connected: boolean;
  worker_connected: boolean;
}

export type VerdictKind = "steer" | "let_it_run" | "done";
export const VERDICT_KINDS: readonly VerdictKind[] = ["steer", "let_it_run", "done"];

export interface Verdict {
  kind: VerdictKind;
  text: string;
  /** The look it answered (0 before the first view). */
  look: number;
  created_at: number;
}

export type ViewReason = "paired" | "stopped" | "timer" | "look" | "request";
export const VIEW_REASONS: readonly ViewReason[] = ["paired", "stopped", "timer", "look", "request"];

/** What the worker did since the previous view, compacted by the core. */
export interface View {
  pairing_id: number;
  look: number;
  reason: ViewReason;
  text: string;
  entries: number;
  pending_tool_calls: number;
  unchanged: boolean;
  created_at: number;
}

export type PairingChange = "started" | "goal" | "verdict" | "look" | "ended" | "presence";
export const PAIRING_CHANGES: readonly PairingChange[] = ["started", "goal", "verdict", "look", "ended", "presence"];

/** Stable error codes (core/src/protocol/error_code.rs). */
export const ERROR_CODES = [
  "frame_too_large",
  "truncated_frame",
  "malformed_frame",
  "unknown_type",
  "invalid_message",
  "hello_required",
  "hello_timeout",
  "protocol_mismatch",
  "already_greeted",
  "not_registered",
  "forbidden",
  "session_taken",
  "replaced",
  "unknown_session",
  "ambiguous_session",
  "unknown_ask",
  "already_answered",
  "limit_exceeded",
  "invalid_argument",
  "slow_consumer",
  "shutting_down",
  "already_paired",
  "not_paired",
  "no_candidate",
  "goal_unreadable",
  "verdict_refused",
  "runaway",
  "store_failed",
  "internal",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
/** A code this client may not know yet: new codes are a compatible protocol change. */
export type WireErrorCode = ErrorCode | (string & {});

/** Codes after which the core closes the connection. */
export const CLOSING_ERROR_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  "frame_too_large",
  "truncated_frame",
  "malformed_frame",
  "hello_required",
  "hello_timeout",
  "protocol_mismatch",
  "replaced",
  "slow_consumer",
  "shutting_down",
]);

// ---------------------------------------------------------------------------------------
// Messages (core/src/protocol/messages.rs)

export type HelloMsg = { type: "hello"; id: number; protocol: number; client: ClientKind; client_name?: string | null };
export type RegisterMsg = { type: "register"; id: number; session: Registration };
export type UpdateMsg = {
  type: "update";
  id: number;
  name?: string | null;
  model?: string | null;
  context?: ContextUsage | null;
  status?: string | null;
  cwd?: string | null;
  role?: Role | null;
  session_file?: string | null;
};
export type AskMsg = { type: "ask"; id: number; question: string; options?: string[]; details?: string | null };
export type ReportMsg = { type: "report"; id: number; text: string };
export type AnswerMsg = { type: "answer"; id: number; ask: number; text: string; by?: string | null };
export type SendMsg = { type: "send"; id: number; to: string; text: string; by?: string | null };
export type AckMsg = { type: "ack"; ids: number[] };
export type ListSessionsMsg = { type: "list_sessions"; id: number; all?: boolean };
export type ListAsksMsg = { type: "list_asks"; id: number; all?: boolean };
export type StatusMsg = { type: "status"; id: number };
export type SubscribeMsg = { type: "subscribe"; id: number };
export type PingMsg = { type: "ping"; id: number };
export type SuperviseMsg = {
  type: "supervise";
  id: number;
  worker?: string | null;
  supervisor?: string | null;
  goal?: string | null;
  cwd?: string | null;
  by?: string | null;
};
export type UnpairMsg = { type: "unpair"; id: number; session?: string | null; by?: string | null };
export type SetGoalMsg = {
  type: "set_goal";
  id: number;
  goal: string;
  session?: string | null;
  cwd?: string | null;
  by?: string | null;
};
export type LookMsg = { type: "look"; id: number; session?: string | null; by?: string | null };
export type WorkerViewMsg = { type: "worker_view"; id: number };
export type VerdictMsg = { type: "verdict"; id: number; verdict: VerdictKind; text?: string };
export type ListPairingsMsg = { type: "list_pairings"; id: number; all?: boolean };

/** Client → core. */
export type ClientMsg =
  | HelloMsg
  | RegisterMsg
  | UpdateMsg
  | AskMsg
  | ReportMsg
  | AnswerMsg
  | SendMsg
  | AckMsg
  | ListSessionsMsg
  | ListAsksMsg
  | StatusMsg
  | SubscribeMsg
  | PingMsg
  | SuperviseMsg
  | UnpairMsg
  | SetGoalMsg
  | LookMsg
  | WorkerViewMsg
  | VerdictMsg
  | ListPairingsMsg;

export const CLIENT_TYPES: readonly ClientMsg["type"][] = [
  "hello",
  "register",
  "update",
  "ask",
  "report",
  "answer",
  "send",
  "ack",
  "list_sessions",
  "list_asks",
  "status",
  "subscribe",
  "ping",
  "supervise",
  "unpair",
  "set_goal",
  "look",
  "worker_view",
  "verdict",
  "list_pairings",
];

export type WelcomeMsg = { type: "welcome"; id: number; protocol: number; core_version: string; store_id: string; pid: number };
export type RegisteredMsg = {
  type: "registered";
  id: number;
  session: SessionInfo;
  pending: number;
  /** Active pairings this session is in, on either side. */
  pairings: Pairing[];
};
export type UpdatedMsg = { type: "updated"; id: number; session: SessionInfo };
export type AskedMsg = { type: "asked"; id: number; ask: Ask };
export type ReportedMsg = { type: "reported"; id: number; report: Report };
export type AnsweredMsg = { type: "answered"; id: number; ask: Ask };
export type SentMsg = {
  type: "sent";
  id: number;
  message_id: number;
  session_id: string;
  session_name: string;
  connected: boolean;
};
export type SessionsMsg = { type: "sessions"; id: number; sessions: SessionInfo[] };
export type AsksMsg = { type: "asks"; id: number; asks: Ask[] };
export type CoreStatusMsg = { type: "core_status"; id: number; status: CoreStatus };
export type SubscribedMsg = { type: "subscribed"; id: number };
export type PongMsg = { type: "pong"; id: number };
export type ErrorMsg = { type: "error"; id: number | null; code: WireErrorCode; message: string; details: Json };
export type DeliverMsg = { type: "deliver"; message: Delivery };
export type SessionJoinedMsg = { type: "session_joined"; session: SessionInfo };
export type SessionChangedMsg = { type: "session_changed"; session: SessionInfo };
export type SessionLeftMsg = { type: "session_left"; session: SessionInfo };
export type AskOpenedMsg = { type: "ask_opened"; ask: Ask };
export type AskAnsweredMsg = { type: "ask_answered"; ask: Ask };
export type ReportPostedMsg = { type: "report_posted"; report: Report };
export type PairedMsg = { type: "paired"; id: number; pairing: Pairing };
export type UnpairedMsg = { type: "unpaired"; id: number; pairing: Pairing };
export type GoalSetMsg = { type: "goal_set"; id: number; pairing: Pairing };
export type LookRequestedMsg = { type: "look_requested"; id: number; pairing: Pairing };
export type ViewMsg = { type: "view"; id: number; view: View };
export type VerdictAcceptedMsg = {
  type: "verdict_accepted";
  id: number;
  pairing: Pairing;
  verdict: Verdict;
  /** Set when a steer repeats a recent one. */
  hint: string | null;
};
export type PairingsMsg = { type: "pairings"; id: number; pairings: Pairing[] };
export type PairingEventMsg = {
  type: "pairing_event";
  change: PairingChange;
  pairing: Pairing;
  verdict: Verdict | null;
  by: string | null;
};

/** Core → client: responses (with the request's id) and events (without). */
export type ServerMsg =
  | WelcomeMsg
  | RegisteredMsg
  | UpdatedMsg
  | AskedMsg
  | ReportedMsg
  | AnsweredMsg
  | SentMsg
  | SessionsMsg
  | AsksMsg
  | CoreStatusMsg
  | SubscribedMsg
  | PongMsg
  | ErrorMsg
  | DeliverMsg
  | SessionJoinedMsg
  | SessionChangedMsg
  | SessionLeftMsg
  | AskOpenedMsg
  | AskAnsweredMsg
  | ReportPostedMsg
  | PairedMsg
  | UnpairedMsg
  | GoalSetMsg
  | LookRequestedMsg
  | ViewMsg
  | VerdictAcceptedMsg
  | PairingsMsg
  | PairingEventMsg;

export const SERVER_TYPES: readonly ServerMsg["type"][] = [
  "welcome",
  "registered",
  "updated",
  "asked",
  "reported",
  "answered",
  "sent",
  "sessions",
  "asks",
  "core_status",
  "subscribed",
  "pong",
  "error",
  "deliver",
  "session_joined",
  "session_changed",
  "session_left",
  "ask_opened",
  "ask_answered",
  "report_posted",
  "paired",
  "unpaired",
  "goal_set",
  "look_requested",
  "view",
  "verdict_accepted",
  "pairings",
  "pairing_event",
];

/** The id of the request a server message answers; null for events and connection errors. */
export function responseId(msg: ServerMsg): number | null {
  return "id" in msg ? msg.id : null;
}

// ---------------------------------------------------------------------------------------
// Decoding

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

// ---------------------------------------------------------------------------------------
// Framing

/** A frame whose body is over the limit (encoding, or announced by a length prefix). */
export class FrameTooLargeError extends Error {
  readonly size: number;
  readonly max: number;
  constructor(size: number, max: number) {
    super(`frame body of ${size} bytes is over the ${max}-byte limit`);
    this.name = "FrameTooLargeError";
    this.size = size;
    this.max = max;
  }
}

/** The stream ended inside a frame. */
export class TruncatedFrameError extends Error {
  constructor(buffered: number) {
    super(`stream ended inside a frame (${buffered} bytes buffered)`);
    this.name = "TruncatedFrameError";
  }
}

/** One complete frame: the big-endian body length, then the UTF-8 JSON body. */
export function encodeFrame(msg: ClientMsg | ServerMsg, maxBody: number = DEFAULT_MAX_FRAME): Buffer {
  const body = Buffer.from(JSON.stringify(msg), "utf8");
  if (body.length > maxBody) throw new FrameTooLargeError(body.length, maxBody);
  const frame = Buffer.allocUnsafe(HEADER_LEN + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, HEADER_LEN);
  return frame;
}

/**
 * Splits a byte stream into frame bodies. Feed it chunks as they arrive, in any sizes; it
 * returns every body completed so far. A length prefix over `maxBody` throws
 * FrameTooLargeError (the stream cannot be resynchronized after that).
 */
export class FrameDecoder {
  readonly maxBody: number;
  #chunks: Buffer[] = [];
  #buffered = 0;

  constructor(maxBody: number = DEFAULT_MAX_FRAME) {
    this.maxBody = maxBody;
  }

  /** Bytes received that do not yet form a whole frame. */
  get buffered(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): Buffer[] {
    if (chunk.length > 0) {
      this.#chunks.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer
      this.#buffered += chunk.length;
    }
    const bodies: Buffer[] = [];
    for (;;) {
      if (this.#buffered < HEADER_LEN) break;
      const len = this.#peekLength();
      if (len > this.maxBody) throw new FrameTooLargeError(len, this.maxBody);
      if (this.#buffered < HEADER_LEN + len) break;
      const frame = this.#take(HEADER_LEN + len);
      bodies.push(frame.subarray(HEADER_LEN));
    }
    return bodies;
  }

  /** Call at end of stream: throws TruncatedFrameError if a frame was cut off. */
  finish(): void {
    if (this.#buffered > 0) throw new TruncatedFrameError(this.#buffered);
  }

  #peekLength(): number {
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= HEADER_LEN) return first.readUInt32BE(0);
    return this.#flatten().readUInt32BE(0);
  }

  #flatten(): Buffer {
    if (this.#chunks.length !== 1) this.#chunks = [Buffer.concat(this.#chunks, this.#buffered)];
    const only = this.#chunks[0];
    return only ?? Buffer.alloc(0);
  }

  #take(n: number): Buffer {
    const all = this.#flatten();
    const out = Buffer.from(all.subarray(0, n));
    const rest = all.subarray(n);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    return out;
  }
}
