// Managed workers on the wire (core/src/protocol/workers.rs): the worker record every
// listing and reply carries, its states (a projection saying what is safe to do, not the raw
// process state), the actions its owner may take now, the worker requests a Pi session sends
// and their replies, with the checked decoders of each. wire/messages.ts and wire/decode.ts
// join these into ClientMsg and ServerMsg; docs/PROTOCOL.md "Managed workers" is the prose.

import { arrayOf, bool, maybe, maybeNull, nullable, oneOf, record, req, str, u64, withDefault, type Conv } from "./fields.ts";

/** What a worker is doing, as far as its owner can act on it. */
export type WorkerState = "starting" | "working" | "blocked" | "settling" | "unknown" | "lost" | "done" | "closed";
export const WORKER_STATES: readonly WorkerState[] = ["starting", "working", "blocked", "settling", "unknown", "lost", "done", "closed"];

/** Something an owner may do with a worker (`available_actions`; the core re-checks each call). */
export type WorkerAction = "steer" | "interrupt" | "reply" | "close" | "inspect" | "transcript";
export const WORKER_ACTIONS: readonly WorkerAction[] = ["steer", "interrupt", "reply", "close", "inspect", "transcript"];

/** How a worker's process is hosted: a window of the core's tmux server, or a `pi --mode rpc` child. */
export type WorkerBackend = "tmux" | "headless";
export const WORKER_BACKENDS: readonly WorkerBackend[] = ["tmux", "headless"];

/** A managed worker: one Pi session the core launched for an owner, on one assignment. */
export interface Worker {
  /** One generation of one assignment, assigned by the core, growing. */
  id: number;
  /** `^[a-z][a-z0-9_-]{0,31}$`, unique among the owner's live workers. */
  label: string;
  /** The agent definition it runs. */
  definition: string;
  owner_id: string;
  owner_name: string;
  /** When the owner is itself a worker: that worker's id. */
  parent_worker: number | null;
  session_id: string;
  session_file: string | null;
  cwd: string;
  backend: WorkerBackend;
  state: WorkerState;
  available_actions: WorkerAction[];
  /** The worker's `ask_owner` waiting for a reply. */
  pending_ask: number | null;
  /** The assignment's first 200 characters. */
  task: string;
  /** Whether it may start workers of its own (its definition lists `agents`); absent: false. */
  delegates: boolean;
  created_at: number;
  updated_at: number;
}

export const workerRecord: Conv<Worker> = record({
  id: req(u64),
  label: req(str),
  definition: req(str),
  owner_id: req(str),
  owner_name: req(str),
  parent_worker: nullable(u64),
  session_id: req(str),
  session_file: nullable(str),
  cwd: req(str),
  backend: req(oneOf(WORKER_BACKENDS)),
  state: req(oneOf(WORKER_STATES)),
  available_actions: req(arrayOf(oneOf(WORKER_ACTIONS))),
  pending_ask: nullable(u64),
  task: req(str),
  delegates: withDefault(bool, () => false),
  created_at: req(u64),
  updated_at: req(u64),
});

// ---- requests (Pi → core) ------------------------------------------------------------------

/** Hand bounded work to a new worker; answered by `worker` once accepted, never after the work. */
export type DelegateAgentMsg = {
  type: "delegate_agent";
  id: number;
  definition: string;
  task: string;
  label?: string | null;
  /** Start from a copy of a saved session (its file path or id). */
  fork?: string | null;
};
/** A new generation on a saved worker session (its file path or id); answered by `worker`. */
export type ContinueAgentMsg = { type: "continue_agent"; id: number; session: string; task: string };
/** A Pi session's own tree of workers (`all`: ended ones too); answered by `workers`. */
export type ListWorkersMsg = { type: "list_workers"; id: number; all?: boolean };
/** `agent`: a label of one of the caller's direct workers. Answered by `worker`. */
export type SteerAgentMsg = { type: "steer_agent"; id: number; agent: string; message: string };
export type InterruptAgentMsg = { type: "interrupt_agent"; id: number; agent: string; message: string };
export type ReplyAgentMsg = { type: "reply_agent"; id: number; agent: string; answer: string };
export type CloseAgentMsg = { type: "close_agent"; id: number; agent: string };
/** A bounded live view (≤ 16 KiB); answered by `agent_text`. */
export type InspectAgentMsg = { type: "inspect_agent"; id: number; agent: string };
/** The saved conversation (≤ 16 KiB, newest kept); answered by `agent_text`. */
export type ReadAgentTranscriptMsg = { type: "read_agent_transcript"; id: number; agent: string };
/** A managed worker only: ask its owner; answered by `asked`, the reply arrives as an `answer`. */
export type AskOwnerMsg = { type: "ask_owner"; id: number; question: string };

export type WorkerClientMsg =
  | DelegateAgentMsg
  | ContinueAgentMsg
  | ListWorkersMsg
  | SteerAgentMsg
  | InterruptAgentMsg
  | ReplyAgentMsg
  | CloseAgentMsg
  | InspectAgentMsg
  | ReadAgentTranscriptMsg
  | AskOwnerMsg;

export const WORKER_CLIENT_TYPES: readonly WorkerClientMsg["type"][] = [
  "delegate_agent",
  "continue_agent",
  "list_workers",
  "steer_agent",
  "interrupt_agent",
  "reply_agent",
  "close_agent",
  "inspect_agent",
  "read_agent_transcript",
  "ask_owner",
];

// ---- replies and events (core → Pi) --------------------------------------------------------

/** Reply to delegate, continue, steer, interrupt, reply and close: the worker as it is now. */
export type WorkerMsg = { type: "worker"; id: number; worker: Worker };
/** Reply to `list_workers`: by owner, then id. */
export type WorkersMsg = { type: "workers"; id: number; workers: Worker[] };
/** Reply to `inspect_agent` and `read_agent_transcript`. */
export type AgentTextMsg = { type: "agent_text"; id: number; worker: Worker; text: string };
/** Event to subscribers: a worker was started, changed state or ended. */
export type WorkerChangedMsg = { type: "worker_changed"; worker: Worker };

export type WorkerServerMsg = WorkerMsg | WorkersMsg | AgentTextMsg | WorkerChangedMsg;

export const WORKER_SERVER_TYPES: readonly WorkerServerMsg["type"][] = ["worker", "workers", "agent_text", "worker_changed"];

// ---- decoders of the message bodies (every field but `type`) -------------------------------

type Bodies<M extends { type: string }> = {
  readonly [T in M["type"]]: Conv<Omit<Extract<M, { type: T }>, "type">>;
};

const agentOnly = record<{ id: number; agent: string }>({ id: req(u64), agent: req(str) });

export const WORKER_CLIENT_BODIES: Bodies<WorkerClientMsg> = {
  delegate_agent: record({
    id: req(u64),
    definition: req(str),
    task: req(str),
    label: maybeNull(str),
    fork: maybeNull(str),
  }),
  continue_agent: record({ id: req(u64), session: req(str), task: req(str) }),
  list_workers: record({ id: req(u64), all: maybe(bool) }),
  steer_agent: record({ id: req(u64), agent: req(str), message: req(str) }),
  interrupt_agent: record({ id: req(u64), agent: req(str), message: req(str) }),
  reply_agent: record({ id: req(u64), agent: req(str), answer: req(str) }),
  close_agent: agentOnly,
  inspect_agent: agentOnly,
  read_agent_transcript: agentOnly,
  ask_owner: record({ id: req(u64), question: req(str) }),
};

export const WORKER_SERVER_BODIES: Bodies<WorkerServerMsg> = {
  worker: record({ id: req(u64), worker: req(workerRecord) }),
  workers: record({ id: req(u64), workers: req(arrayOf(workerRecord)) }),
  agent_text: record({ id: req(u64), worker: req(workerRecord), text: req(str) }),
  worker_changed: record({ worker: req(workerRecord) }),
};
