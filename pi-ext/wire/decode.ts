// Decoding: one frame body (bytes or text) into a checked ClientMsg or ServerMsg, or a
// WireDecodeError with the code the core would give (`malformed_frame`, `unknown_type`,
// `invalid_message` naming the wrong field). Each record and each message body is written
// once, as one field reader per field (wire/fields.ts), following the field conventions at
// the top of wire/records.ts.

import {
  arrayOf,
  bool,
  f64,
  FieldError,
  isObject,
  json,
  maybe,
  maybeNull,
  nullable,
  oneOf,
  record,
  req,
  str,
  u32,
  u64,
  withDefault,
  type Conv,
} from "./fields.ts";
import { CLIENT_TYPES, SERVER_TYPES, type ClientMsg, type ServerMsg } from "./messages.ts";
import {
  ASK_STATES,
  CLIENT_KINDS,
  DEF_SOURCES,
  DELIVERY_KINDS,
  EDGE_KINDS,
  LEAVE_REASONS,
  PAIRING_CHANGES,
  PAIRING_STATES,
  REPORT_KINDS,
  RESULTS_MODES,
  ROLES,
  SUPERIORS,
  THINKING_LEVELS,
  VERDICT_KINDS,
  VIEW_REASONS,
  type AgentDef,
  type Ask,
  type AskTo,
  type BridgeInfo,
  type ContextUsage,
  type CoreStatus,
  type Delivery,
  type EdgeMessage,
  type Pairing,
  type Registration,
  type Report,
  type ReportKind,
  type ReportsTo,
  type Sender,
  type SessionInfo,
  type StaffMember,
  type StaffView,
  type UsageReport,
  type Verdict,
  type View,
} from "./records.ts";
import { assignmentRecord, PROJECT_CLIENT_BODIES, PROJECT_SERVER_BODIES } from "./projects.ts";
import { lease, usageFields, usageTotals } from "./shared.ts";
import { workerRecord, WORKER_CLIENT_BODIES, WORKER_SERVER_BODIES } from "./workers.ts";

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

// ---------------------------------------------------------------------------------------
// Records

const role = oneOf(ROLES);
const clientKind = oneOf(CLIENT_KINDS);
const verdictKind = oneOf(VERDICT_KINDS);

const contextUsage: Conv<ContextUsage> = record({
  tokens: maybeNull(u64),
  window: maybeNull(u64),
  percent: maybeNull(f64),
});

const registration: Conv<Registration> = record({
  session_id: req(str),
  name: maybeNull(str),
  cwd: req(str),
  pid: maybeNull(u32),
  model: maybeNull(str),
  context: maybe(contextUsage),
  status: maybe(str),
  role: maybe(role),
  session_file: maybeNull(str),
  subagent: maybe(bool),
  launch: maybeNull(str),
});

const sessionInfo: Conv<SessionInfo> = record({
  id: req(str),
  name: req(str),
  cwd: req(str),
  pid: nullable(u32),
  model: nullable(str),
  status: req(str),
  role: req(role),
  connected: req(bool),
  context_tokens: nullable(u64),
  context_window: nullable(u64),
  context_percent: nullable(f64),
  repo: nullable(str),
  branch: nullable(str),
  head: nullable(str),
  worktree: req(bool),
  repo_id: nullable(str),
  project: nullable(str),
  session_file: nullable(str),
  subagent: withDefault(bool, () => false),
  open_asks: req(u32),
  pending_messages: req(u32),
  first_seen: req(u64),
  last_seen: req(u64),
});

const askTo: Conv<AskTo> = record({
  role: req(role),
  repo_id: nullable(str),
  project: nullable(str),
  session_id: nullable(str),
  session_name: nullable(str),
  // Only on a managed worker's ask_owner; absent otherwise (the core leaves it out).
  worker: maybe(u64),
});

const ask: Conv<Ask> = record({
  id: req(u64),
  session_id: req(str),
  session_name: req(str),
  question: req(str),
  options: withDefault(arrayOf(str), () => []),
  details: nullable(str),
  state: req(oneOf(ASK_STATES)),
  answer: nullable(str),
  answered_by: nullable(str),
  created_at: req(u64),
  answered_at: nullable(u64),
  // Absent (not null) for an ask to the human: the core leaves it out.
  to: maybe(askTo),
});

const reportsTo: Conv<ReportsTo> = record({
  to: req(oneOf(SUPERIORS)),
  session_id: nullable(str),
  session_name: nullable(str),
});

const staffMember: Conv<StaffMember> = record({ session: req(sessionInfo), reports_to: req(reportsTo) });

const edgeMessage: Conv<EdgeMessage> = record({
  kind: req(oneOf(EDGE_KINDS)),
  from_id: req(str),
  from_name: req(str),
  from_role: req(role),
  to_id: req(str),
  to_name: req(str),
  to_role: req(role),
  text: req(str),
  message_id: req(u64),
  created_at: req(u64),
});

const staffView: Conv<StaffView> = record({
  session_id: req(str),
  session_name: req(str),
  text: req(str),
  entries: req(u32),
});

const agentDef: Conv<AgentDef> = record({
  name: req(str),
  description: withDefault(str, () => ""),
  source: req(oneOf(DEF_SOURCES)),
  path: nullable(str),
  model: nullable(str),
  thinking: nullable(oneOf(THINKING_LEVELS)),
  tools: nullable(arrayOf(str)),
  exclude_tools: withDefault(arrayOf(str), () => []),
  agents: withDefault(arrayOf(str), () => []),
  enabled: withDefault(bool, () => true),
  error: nullable(str),
});

const usageReport: Conv<UsageReport> = record({
  sessions: req(
    arrayOf(
      record({
        session_id: req(str),
        name: req(str),
        file: nullable(str),
        ...usageFields,
        // Absent (not null) when the session was counted: the core leaves it out.
        error: maybe(str),
      }),
    ),
  ),
  models: req(arrayOf(record({ model: nullable(str), ...usageFields }))),
  total: req(usageTotals),
  complete: req(bool),
  missing: req(arrayOf(record({ session_id: req(str), reason: req(str) }))),
});

const sender: Conv<Sender> = record({ kind: req(clientKind), session_id: nullable(str), name: req(str) });

const delivery: Conv<Delivery> = record({
  id: req(u64),
  kind: req(oneOf(DELIVERY_KINDS)),
  text: req(str),
  from: req(sender),
  ask_id: nullable(u64),
  question: nullable(str),
  pairing_id: nullable(u64),
  look: nullable(u32),
  created_at: req(u64),
});

const pairing: Conv<Pairing> = record({
  id: req(u64),
  supervisor_id: req(str),
  supervisor_name: req(str),
  worker_id: req(str),
  worker_name: req(str),
  cwd: req(str),
  goal: nullable(str),
  goal_file: nullable(str),
  state: req(oneOf(PAIRING_STATES)),
  looks: req(u32),
  steers: req(u32),
  created_at: req(u64),
  last_look_at: nullable(u64),
  ended_at: nullable(u64),
  end_reason: nullable(str),
  ended_by: nullable(str),
  evidence: nullable(str),
  supervisor_connected: req(bool),
  worker_connected: req(bool),
});

const verdict: Conv<Verdict> = record({ kind: req(verdictKind), text: req(str), look: req(u32), created_at: req(u64) });

const view: Conv<View> = record({
  pairing_id: req(u64),
  look: req(u32),
  reason: req(oneOf(VIEW_REASONS)),
  text: req(str),
  entries: req(u32),
  pending_tool_calls: req(u32),
  unchanged: req(bool),
  created_at: req(u64),
});

const report: Conv<Report> = record({
  id: req(u64),
  session_id: req(str),
  session_name: req(str),
  text: req(str),
  created_at: req(u64),
  kind: withDefault(oneOf(REPORT_KINDS), (): ReportKind => "report"),
  announced: withDefault(bool, () => true),
});

const bridgeInfo: Conv<BridgeInfo> = record({ name: req(str), pid: nullable(u32), connected_since: req(u64) });

const coreStatus: Conv<CoreStatus> = record({
  core_version: req(str),
  protocol: req(u32),
  pid: req(u32),
  started_at: req(u64),
  uptime_ms: req(u64),
  state_dir: req(str),
  socket: req(str),
  sessions_connected: req(u32),
  sessions_known: req(u32),
  open_asks: req(u32),
  bridges: req(arrayOf(bridgeInfo)),
});

// ---------------------------------------------------------------------------------------
// Message bodies: every field but `type`, one decoder per type of each side

type Bodies<M extends { type: string }> = {
  readonly [T in M["type"]]: Conv<Omit<Extract<M, { type: T }>, "type">>;
};

/** A request with nothing but its id. */
const idOnly = record<{ id: number }>({ id: req(u64) });
/** The `session` and `by` of unpair and look. */
const sessionBy = record<{ id: number; session?: string | null; by?: string | null }>({
  id: req(u64),
  session: maybeNull(str),
  by: maybeNull(str),
});
const listAll = record<{ id: number; all?: boolean }>({ id: req(u64), all: maybe(bool) });

const CLIENT_BODIES: Bodies<ClientMsg> = {
  ...WORKER_CLIENT_BODIES,
  ...PROJECT_CLIENT_BODIES,
  hello: record({ id: req(u64), protocol: req(u32), client: req(clientKind), client_name: maybeNull(str) }),
  register: record({ id: req(u64), session: req(registration) }),
  update: record({
    id: req(u64),
    name: maybeNull(str),
    model: maybeNull(str),
    context: maybeNull(contextUsage),
    status: maybeNull(str),
    cwd: maybeNull(str),
    role: maybeNull(role),
    session_file: maybeNull(str),
  }),
  ask: record({
    id: req(u64),
    question: req(str),
    options: maybe(arrayOf(str)),
    details: maybeNull(str),
    key: maybe(str),
  }),
  report: record({ id: req(u64), text: req(str), key: maybe(str) }),
  answer: record({ id: req(u64), ask: req(u64), text: req(str), by: maybeNull(str) }),
  send: record({ id: req(u64), to: req(str), text: req(str), by: maybeNull(str) }),
  ack: record({ ids: req(arrayOf(u64)) }),
  list_sessions: listAll,
  list_asks: record<{ id: number; all?: boolean; ask?: number | null }>({
    id: req(u64),
    all: maybe(bool),
    ask: maybeNull(u64),
  }),
  status: idOnly,
  subscribe: record({ id: req(u64), serves: maybeNull(str) }),
  ping: idOnly,
  supervise: record({
    id: req(u64),
    worker: maybeNull(str),
    supervisor: maybeNull(str),
    goal: maybeNull(str),
    cwd: maybeNull(str),
    by: maybeNull(str),
  }),
  unpair: sessionBy,
  set_goal: record({ id: req(u64), goal: req(str), session: maybeNull(str), cwd: maybeNull(str), by: maybeNull(str) }),
  look: sessionBy,
  worker_view: idOnly,
  verdict: record({ id: req(u64), verdict: req(verdictKind), text: maybe(str) }),
  list_pairings: listAll,
  unanswer: record({ id: req(u64), ask: req(u64), by: maybeNull(str) }),
  interrupt: record({ id: req(u64), session: req(str), then: maybeNull(str), by: maybeNull(str) }),
  bye: record({ returning: maybe(bool) }),
  result: record({ id: req(u64), text: req(str), results: maybeNull(oneOf(RESULTS_MODES)), key: maybe(str) }),
  list_reports: record({ id: req(u64), session: maybeNull(str), limit: maybeNull(u32), after: maybeNull(u64) }),
  set_role: record({ id: req(u64), role: req(role), reclaim: maybe(bool) }),
  list_roles: idOnly,
  release_role: record({ id: req(u64), role: req(role), project: maybe(str), by: maybe(str) }),
  message_supervisor: record({ id: req(u64), text: req(str) }),
  ask_supervisor: record({
    id: req(u64),
    question: req(str),
    options: maybe(arrayOf(str)),
    details: maybeNull(str),
    key: maybe(str),
  }),
  list_staff: idOnly,
  inspect_staff: record({ id: req(u64), session: req(str) }),
  message_staff: record({ id: req(u64), session: req(str), text: req(str) }),
  list_peers: idOnly,
  message_peer: record({ id: req(u64), session: req(str), text: req(str) }),
  list_agents: record({ id: req(u64), cwd: maybeNull(str) }),
  usage: record({ id: req(u64), session: maybeNull(str) }),
};

const askReply = record<{ id: number; ask: Ask }>({ id: req(u64), ask: req(ask) });
const pairingReply = record<{ id: number; pairing: Pairing }>({ id: req(u64), pairing: req(pairing) });
const sessionEvent = record<{ session: SessionInfo }>({ session: req(sessionInfo) });
const askEvent = record<{ ask: Ask }>({ ask: req(ask) });

const SERVER_BODIES: Bodies<ServerMsg> = {
  ...WORKER_SERVER_BODIES,
  ...PROJECT_SERVER_BODIES,
  welcome: record({ id: req(u64), protocol: req(u32), core_version: req(str), store_id: req(str), pid: req(u32) }),
  registered: record({
    id: req(u64),
    session: req(sessionInfo),
    pending: req(u32),
    pairings: withDefault(arrayOf(pairing), () => []),
    // Absent (not null) unless this session is a bound managed worker.
    worker: maybe(workerRecord),
    // Absent (not null) unless this session is the Lead the core launched for an assignment.
    assignment: maybe(assignmentRecord),
  }),
  updated: record({ id: req(u64), session: req(sessionInfo) }),
  asked: askReply,
  reported: record({ id: req(u64), report: req(report) }),
  answered: askReply,
  sent: record({
    id: req(u64),
    message_id: req(u64),
    session_id: req(str),
    session_name: req(str),
    connected: req(bool),
  }),
  sessions: record({ id: req(u64), sessions: req(arrayOf(sessionInfo)) }),
  asks: record({ id: req(u64), asks: req(arrayOf(ask)) }),
  core_status: record({ id: req(u64), status: req(coreStatus) }),
  subscribed: idOnly,
  pong: idOnly,
  error: record({ id: nullable(u64), code: req(str), message: req(str), details: withDefault(json, () => null) }),
  deliver: record({ message: req(delivery) }),
  session_joined: sessionEvent,
  session_changed: sessionEvent,
  session_left: record({ session: req(sessionInfo), reason: maybe(oneOf(LEAVE_REASONS)), last_status: maybe(str) }),
  ask_opened: askEvent,
  ask_answered: askEvent,
  report_posted: record({ report: req(report) }),
  paired: pairingReply,
  unpaired: pairingReply,
  goal_set: pairingReply,
  look_requested: pairingReply,
  view: record({ id: req(u64), view: req(view) }),
  verdict_accepted: record({ id: req(u64), pairing: req(pairing), verdict: req(verdict), hint: nullable(str) }),
  pairings: record({ id: req(u64), pairings: req(arrayOf(pairing)) }),
  unanswered: record({ id: req(u64), ask: req(ask), message_id: req(u64), session_name: req(str) }),
  interrupted: record({
    id: req(u64),
    message_id: req(u64),
    session_id: req(str),
    session_name: req(str),
    connected: req(bool),
    was: req(str),
  }),
  pairing_event: record({
    change: req(oneOf(PAIRING_CHANGES)),
    pairing: req(pairing),
    verdict: nullable(verdict),
    by: nullable(str),
  }),
  reports: record({ id: req(u64), reports: req(arrayOf(report)) }),
  role_set: record({ id: req(u64), session: req(sessionInfo), previous: req(role), lease: nullable(lease) }),
  roles: record({ id: req(u64), leases: req(arrayOf(lease)) }),
  role_released: record({ id: req(u64), lease: req(lease) }),
  routed: record({
    id: req(u64),
    to: req(reportsTo),
    message_id: nullable(u64),
    report_id: nullable(u64),
    connected: req(bool),
  }),
  // `assignments`: absent (not empty) when there are none; the core leaves it out.
  staff: record({ id: req(u64), members: req(arrayOf(staffMember)), assignments: maybe(arrayOf(assignmentRecord)) }),
  staff_view: record({ id: req(u64), view: req(staffView) }),
  agents: record({ id: req(u64), agents: req(arrayOf(agentDef)) }),
  usage: record({ id: req(u64), report: req(usageReport) }),
  role_changed: record({ session: req(sessionInfo), previous: req(role) }),
  edge_message: record({ message: req(edgeMessage) }),
};

// ---------------------------------------------------------------------------------------
// Frame bodies

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Parse a body into a JSON object with a known `type`, as the core's `frame::parse_object`. */
function parseTyped<T extends string>(
  body: Uint8Array | string,
  known: readonly T[],
): { type: T; value: Record<string, unknown>; id: number | null } {
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
  return { type, value, id };
}

/** Parse a frame body, then read the rest of the message its `type` names from `bodies`. */
function decodeMessage<M extends { type: string }>(
  body: Uint8Array | string,
  known: readonly M["type"][],
  bodies: Bodies<M>,
): M {
  const { type, value, id } = parseTyped(body, known);
  const decodeFields: Conv<object> = bodies[type];
  try {
    // Sound because `Bodies<M>` gave each type the decoder of the rest of its message.
    return { type, ...decodeFields(value, type) } as M;
  } catch (e) {
    if (e instanceof FieldError) throw new WireDecodeError("invalid_message", `invalid ${type} message: ${e.message}`, id);
    throw e;
  }
}

/** Decode one frame body sent by the core. Throws WireDecodeError. */
export function decodeServerMsg(body: Uint8Array | string): ServerMsg {
  return decodeMessage(body, SERVER_TYPES, SERVER_BODIES);
}

/** Decode one frame body sent by a client (used by tests and fakes). Throws WireDecodeError. */
export function decodeClientMsg(body: Uint8Array | string): ClientMsg {
  return decodeMessage(body, CLIENT_TYPES, CLIENT_BODIES);
}
