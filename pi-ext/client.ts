// The connection to the shepherd core: a Unix socket carrying wire.ts frames. It says hello
// (protocol 2, client "pi"), registers the session, matches responses to requests by id,
// hands `deliver` events to the extension, and when the connection drops (core restart,
// crash, slow_consumer) reconnects with exponential backoff and registers again, with the
// registration built fresh each time. It also carries the supervision requests (supervise,
// unpair, set_goal, look, worker_view, verdict, list_pairings) and hands `pairing_event`s,
// which the core sends to both sessions of a pairing, to the extension, and the role requests
// (set_role, list_roles and the direct edges: message_supervisor, ask_supervisor, list_staff,
// inspect_staff, message_staff, list_peers, message_peer, and `answer` for answer_staff), and
// the managed-worker requests (list_agents, delegate_agent, continue_agent, list_workers,
// steer/interrupt/reply/close_agent, inspect_agent, read_agent_transcript, and a worker's
// ask_owner), and a Manager's project requests (delegate_project, resume_work, stop_lead,
// integrate_branch). It never throws at its caller for connection trouble:
// requests made while not connected fail with NotConnectedError, and everything else is
// reported through callbacks. Its socket and timers are unref'd, so it never keeps a
// finished `pi -p` process alive.

import { createConnection, type Socket } from "node:net";

import {
  CLOSING_ERROR_CODES,
  decodeServerMsg,
  encodeFrame,
  FrameDecoder,
  MAX_INBOUND_FRAME,
  PROTOCOL_VERSION,
  WireDecodeError,
  type AgentDef,
  type Ask,
  type Assignment,
  type ClientMsg,
  type ContextUsage,
  type Delivery,
  type Integration,
  type Json,
  type Lease,
  type Pairing,
  type PairingEventMsg,
  type Registration,
  type RegisteredMsg,
  type Report,
  type ReportsTo,
  type ResultsMode,
  type Role,
  type SentMsg,
  type ServerMsg,
  type SessionInfo,
  type StaffMember,
  type StaffView,
  type UsageReport,
  type Verdict,
  type VerdictKind,
  type View,
  type WelcomeMsg,
  type WireErrorCode,
  type Worker,
} from "./wire.ts";

/** Where the connection is. */
export type Phase =
  | "idle" // not started
  | "connecting"
  | "handshaking" // hello sent, waiting for welcome
  | "registering" // register sent, waiting for registered
  | "ready"
  | "waiting" // disconnected, a reconnect is scheduled
  | "replaced" // the core handed this session to a newer connection of this process: stays down
  | "stopped";

/** What the core said about itself in `welcome`. */
export interface CoreInfo {
  coreVersion: string;
  storeId: string;
  corePid: number;
  protocol: number;
}

/** Trouble the extension may want to tell the user about. */
export type Problem =
  | { kind: "unreachable"; message: string; errno: string | null; attempt: number }
  | { kind: "protocol_mismatch"; message: string }
  | { kind: "session_taken"; message: string }
  | { kind: "replaced"; message: string }
  | { kind: "error"; message: string };

/** The core answered a request with `error`. */
export class CoreError extends Error {
  readonly code: WireErrorCode;
  /** The core's own message, without the code (it says what happened and what to do). */
  readonly coreMessage: string;
  readonly details: Json;
  constructor(code: WireErrorCode, message: string, details: Json) {
    super(`${code}: ${message}`);
    this.name = "CoreError";
    this.code = code;
    this.coreMessage = message;
    this.details = details;
  }
}

/** The request could not be sent, or the connection closed before its answer. */
export class NotConnectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NotConnectedError";
  }
}

export interface CoreClientOptions {
  socketPath: string;
  clientName: string;
  /** Built anew for every (re)registration, so it carries the current presence. */
  registration: () => Registration;
  /** A `deliver` event, with the store the delivery id belongs to. */
  onDeliver: (storeId: string, delivery: Delivery) => void;
  /**
   * Registered (again): the session as the core stores it, how many deliveries follow, the
   * active pairings it is in and, for a managed worker the core bound, its worker record; for
   * the Lead the core launched for a work assignment, that assignment.
   */
  onRegistered?: (
    info: CoreInfo,
    session: SessionInfo,
    pending: number,
    pairings: Pairing[],
    worker: Worker | undefined,
    assignment: Assignment | undefined,
  ) => void;
  /** A `pairing_event` about a pairing this session is in. */
  onPairingEvent?: (event: PairingEventMsg) => void;
  /**
   * A response carrying one pairing (paired, unpaired, goal_set, look_requested,
   * verdict_accepted), called before the request's promise settles and before any frame
   * behind it (such as the first view) is dispatched.
   */
  onPairing?: (pairing: Pairing, response: PairingResponse["type"]) => void;
  onPhase?: (phase: Phase) => void;
  onProblem?: (problem: Problem) => void;
  log?: (line: string) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Wait before retrying after a refusal that a retry soon will not fix (protocol mismatch, session taken). */
  slowRetryMs?: number;
  /** Wait for `welcome` and `registered` this long before giving up on a connection. */
  handshakeTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** The largest frame body read from the core (default MAX_INBOUND_FRAME: listings can be long). */
  maxFrame?: number;
}

type ResponseType = ServerMsg["type"];
/** Responses that carry the pairing they changed. */
export type PairingResponse = Extract<ServerMsg, { type: "paired" | "unpaired" | "goal_set" | "look_requested" | "verdict_accepted" }>;

function pairingResponse(msg: ServerMsg): PairingResponse | null {
  switch (msg.type) {
    case "paired":
    case "unpaired":
    case "goal_set":
    case "look_requested":
    case "verdict_accepted":
      return msg;
    default:
      return null;
  }
}
type ResponseOf<T extends ResponseType> = Extract<ServerMsg, { type: T }>;

function isResponse<T extends ResponseType>(msg: ServerMsg, type: T): msg is ResponseOf<T> {
  return msg.type === type;
}

type Waiter = {
  request: string;
  settle: (msg: ServerMsg) => void;
  fail: (error: Error) => void;
  timer: NodeJS.Timeout;
};

/** Fields `update` may change; absent ones stay as they are on the core. */
export interface PresenceUpdate {
  name?: string;
  model?: string;
  context?: ContextUsage;
  status?: string;
  cwd?: string;
  role?: Role;
  session_file?: string;
}

function errnoOf(error: unknown): string | null {
  if (typeof error === "object" && error !== null && "code" in error) {
    return typeof error.code === "string" ? error.code : null;
  }
  return null;
}

export class CoreClient {
  readonly socketPath: string;
  readonly #opts: CoreClientOptions;
  readonly #initialBackoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #slowRetryMs: number;
  readonly #handshakeTimeoutMs: number;
  readonly #requestTimeoutMs: number;

  #phase: Phase = "idle";
  #socket: Socket | null = null;
  #decoder: FrameDecoder;
  #nextId = 1;
  readonly #waiters = new Map<number, Waiter>();
  #info: CoreInfo | null = null;
  #session: SessionInfo | null = null;
  #failures = 0;
  #retryTimer: NodeJS.Timeout | null = null;
  /** A longer wait before the next attempt (protocol mismatch, session taken). */
  #slowRetry = false;
  #lastError: string | null = null;
  #connectedAt: number | null = null;

  constructor(options: CoreClientOptions) {
    this.#opts = options;
    this.socketPath = options.socketPath;
    this.#initialBackoffMs = options.initialBackoffMs ?? 250;
    this.#maxBackoffMs = options.maxBackoffMs ?? 10_000;
    this.#slowRetryMs = options.slowRetryMs ?? 30_000;
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? 10_000;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 15_000;
    this.#decoder = new FrameDecoder(options.maxFrame ?? MAX_INBOUND_FRAME);
  }

  get phase(): Phase {
    return this.#phase;
  }
  get ready(): boolean {
    return this.#phase === "ready";
  }
  get info(): CoreInfo | null {
    return this.#info;
  }
  /** The session as the core last described it (registered / updated). */
  get session(): SessionInfo | null {
    return this.#session;
  }
  get lastError(): string | null {
    return this.#lastError;
  }
  /** Consecutive failed connection attempts. */
  get failures(): number {
    return this.#failures;
  }
  get connectedAt(): number | null {
    return this.#connectedAt;
  }

  /** Connect (and keep reconnecting) until stop(). */
  start(): void {
    if (this.#phase !== "idle") return;
    this.#connect();
  }

  /**
   * Close for good: no reconnect; pending requests fail. With `bye` (Pi closed the session)
   * a registered connection says goodbye first, so the core announces the session as
   * closed rather than lost (`returning`: it comes straight back, as after /reload, and no
   * ending is announced); the socket is then ended gracefully so the goodbye is not lost.
   */
  stop(bye?: { returning: boolean }): void {
    if (this.#phase === "stopped") return;
    const registered = this.ready;
    this.#setPhase("stopped");
    this.#clearRetry();
    const socket = this.#socket;
    this.#socket = null;
    this.#failWaiters(new NotConnectedError("the shepherd extension stopped"));
    if (socket === null) return;
    if (bye !== undefined && registered && !socket.destroyed) {
      socket.end(encodeFrame({ type: "bye", returning: bye.returning }));
      setTimeout(() => socket.destroy(), 1000).unref();
      this.#log(`said bye${bye.returning ? " (returning)" : ""}`);
      return;
    }
    socket.destroy();
  }

  /** Try now instead of waiting out the backoff (e.g. right after starting a core). */
  retryNow(): void {
    if (this.#phase !== "waiting") return;
    this.#clearRetry();
    this.#connect();
  }

  // ---- requests ------------------------------------------------------------------------

  /** `key`: an idempotency key (the core stores a keyed ask once, however often sent). */
  async ask(question: string, options: string[], details: string | null, key?: string): Promise<Ask> {
    const res = await this.#request(
      (id) => ({
        type: "ask",
        id,
        question,
        ...(options.length > 0 ? { options } : {}),
        ...(details !== null ? { details } : {}),
        ...(key !== undefined ? { key } : {}),
      }),
      "asked",
    );
    return res.ask;
  }

  async report(text: string, key?: string): Promise<Report> {
    const res = await this.#request((id) => ({ type: "report", id, text, ...(key !== undefined ? { key } : {}) }), "reported");
    return res.report;
  }

  /** A run's final text; `results` is this session's own setting (null: the core's); `key` makes a resend harmless. */
  async result(text: string, results: ResultsMode | null, key: string | null = null): Promise<Report> {
    const res = await this.#request(
      (id) => ({ type: "result", id, text, ...(results !== null ? { results } : {}), ...(key !== null ? { key } : {}) }),
      "reported",
    );
    return res.report;
  }

  /** This session's asks that are still open (the core lists every session's). */
  async openAsks(): Promise<Ask[]> {
    const res = await this.#request((id) => ({ type: "list_asks", id, all: false }), "asks");
    const mine = this.#session?.id;
    return res.asks.filter((a) => a.state === "open" && a.session_id === mine);
  }

  /** Send presence changes; a no-op while not registered (the next register carries them). */
  async update(fields: PresenceUpdate): Promise<void> {
    if (!this.ready) return;
    const res = await this.#request((id) => ({ type: "update", id, ...fields }), "updated");
    this.#session = res.session;
  }

  // ---- supervision -----------------------------------------------------------------------

  /** Become the supervisor of `worker` (absent: the one free session in this cwd). */
  async supervise(request: { worker?: string; goal?: string; cwd: string }): Promise<Pairing> {
    const res = await this.#request((id) => ({ type: "supervise", id, ...request }), "paired");
    return res.pairing;
  }

  /** End this session's pairing without a verdict. */
  async unpair(): Promise<Pairing> {
    const res = await this.#request((id) => ({ type: "unpair", id }), "unpaired");
    return res.pairing;
  }

  /** Replace the pairing's goal (text, or a path relative to `cwd`). */
  async setGoal(goal: string, cwd: string): Promise<Pairing> {
    const res = await this.#request((id) => ({ type: "set_goal", id, goal, cwd }), "goal_set");
    return res.pairing;
  }

  /** Ask for a view now; it arrives as a `view` delivery. */
  async look(): Promise<Pairing> {
    const res = await this.#request((id) => ({ type: "look", id }), "look_requested");
    return res.pairing;
  }

  /** What the worker did since the last view, returned (not delivered, not a look). */
  async workerView(): Promise<View> {
    const res = await this.#request((id) => ({ type: "worker_view", id }), "view");
    return res.view;
  }

  async verdict(verdict: VerdictKind, text: string): Promise<{ pairing: Pairing; verdict: Verdict; hint: string | null }> {
    const res = await this.#request((id) => ({ type: "verdict", id, verdict, text }), "verdict_accepted");
    return { pairing: res.pairing, verdict: res.verdict, hint: res.hint };
  }

  /** Active pairings (every session's). */
  async listPairings(): Promise<Pairing[]> {
    const res = await this.#request((id) => ({ type: "list_pairings", id, all: false }), "pairings");
    return res.pairings;
  }

  // ---- roles and direct edges ------------------------------------------------------------

  /**
   * Take a role (`manager`, `chief`) or leave the one held (`lead`): the session as it is
   * now. `reclaim`: asking again for the role the session file says it held (refused as
   * `released` if the human released it, or it expired, meanwhile).
   */
  async setRole(role: Role, reclaim = false): Promise<{ session: SessionInfo; previous: Role }> {
    const res = await this.#request((id) => (reclaim ? { type: "set_role", id, role, reclaim } : { type: "set_role", id, role }), "role_set");
    this.#session = res.session;
    return { session: res.session, previous: res.previous };
  }

  /** Every lease the core holds: who is the Manager of which repository, who is the Chief. */
  async listRoles(): Promise<Lease[]> {
    const res = await this.#request((id) => ({ type: "list_roles", id }), "roles");
    return res.leases;
  }

  /** Mail to whom this session reports (the human gets it as a report). */
  async messageSupervisor(text: string): Promise<{ to: ReportsTo; messageId: number | null; reportId: number | null; connected: boolean }> {
    const res = await this.#request((id) => ({ type: "message_supervisor", id, text }), "routed");
    return { to: res.to, messageId: res.message_id, reportId: res.report_id, connected: res.connected };
  }

  /** An ask addressed to whom this session reports (`ask.to`; absent: the human). */
  async askSupervisor(question: string, options: string[], details: string | null, key?: string): Promise<Ask> {
    const res = await this.#request(
      (id) => ({
        type: "ask_supervisor",
        id,
        question,
        ...(options.length > 0 ? { options } : {}),
        ...(details !== null ? { details } : {}),
        ...(key !== undefined ? { key } : {}),
      }),
      "asked",
    );
    return res.ask;
  }

  /** A Manager's or the Chief's direct staff, and (a Manager) its repository's work assignments. */
  async listStaff(): Promise<{ members: StaffMember[]; assignments: Assignment[] }> {
    const res = await this.#request((id) => ({ type: "list_staff", id }), "staff");
    return { members: res.members, assignments: res.assignments ?? [] };
  }

  /** What one of this session's staff did recently (exact session id). */
  async inspectStaff(session: string): Promise<StaffView> {
    const res = await this.#request((id) => ({ type: "inspect_staff", id, session }), "staff_view");
    return res.view;
  }

  /** Steer one of this session's staff (exact session id). */
  async messageStaff(session: string, text: string): Promise<Omit<SentMsg, "type" | "id">> {
    const res = await this.#request((id) => ({ type: "message_staff", id, session, text }), "sent");
    return { message_id: res.message_id, session_id: res.session_id, session_name: res.session_name, connected: res.connected };
  }

  /** The connected sessions this one may message as peers. */
  async listPeers(): Promise<SessionInfo[]> {
    const res = await this.#request((id) => ({ type: "list_peers", id }), "sessions");
    return res.sessions;
  }

  /** Mail to a peer (exact session id). */
  async messagePeer(session: string, text: string): Promise<Omit<SentMsg, "type" | "id">> {
    const res = await this.#request((id) => ({ type: "message_peer", id, session, text }), "sent");
    return { message_id: res.message_id, session_id: res.session_id, session_name: res.session_name, connected: res.connected };
  }

  /** Answer an ask addressed to the role this session holds (answer_staff). */
  async answer(ask: number, text: string): Promise<Ask> {
    const res = await this.#request((id) => ({ type: "answer", id, ask, text }), "answered");
    return res.ask;
  }

  // ---- managed workers ------------------------------------------------------------------

  /** Tokens and cost over this session and the workers it owns (each session once). */
  async usage(): Promise<UsageReport> {
    const res = await this.#request((id) => ({ type: "usage", id }), "usage");
    return res.report;
  }

  /** The agent definitions in effect for this session's cwd (broken files with their error). */
  async listAgents(): Promise<AgentDef[]> {
    const res = await this.#request((id) => ({ type: "list_agents", id }), "agents");
    return res.agents;
  }

  /** Start a worker on `task`; resolves once the core accepted it (never after the work). */
  async delegateAgent(definition: string, task: string, label: string | null, fork: string | null): Promise<Worker> {
    const res = await this.#request(
      (id) => ({
        type: "delegate_agent",
        id,
        definition,
        task,
        ...(label !== null ? { label } : {}),
        ...(fork !== null ? { fork } : {}),
      }),
      "worker",
    );
    return res.worker;
  }

  /** A new generation on a saved worker session (its file path or id). */
  async continueAgent(session: string, task: string): Promise<Worker> {
    const res = await this.#request((id) => ({ type: "continue_agent", id, session, task }), "worker");
    return res.worker;
  }

  /** This session's tree of workers (`all`: ended ones too). */
  async listWorkers(all = false): Promise<Worker[]> {
    const res = await this.#request((id) => ({ type: "list_workers", id, all }), "workers");
    return res.workers;
  }

  /** steer_agent, interrupt_agent, reply_agent, close_agent: the worker as it is now. */
  async workerAction(
    action: "steer" | "interrupt" | "reply" | "close",
    agent: string,
    text: string,
  ): Promise<Worker> {
    const res = await this.#request((id) => {
      switch (action) {
        case "steer":
          return { type: "steer_agent", id, agent, message: text };
        case "interrupt":
          return { type: "interrupt_agent", id, agent, message: text };
        case "reply":
          return { type: "reply_agent", id, agent, answer: text };
        case "close":
          return { type: "close_agent", id, agent };
      }
    }, "worker");
    return res.worker;
  }

  /** inspect_agent (a live view) or read_agent_transcript (the saved conversation), ≤ 16 KiB. */
  async agentText(what: "inspect" | "transcript", agent: string): Promise<{ worker: Worker; text: string }> {
    const res = await this.#request(
      (id) => (what === "inspect" ? { type: "inspect_agent", id, agent } : { type: "read_agent_transcript", id, agent }),
      "agent_text",
    );
    return { worker: res.worker, text: res.text };
  }

  /** A managed worker's question to its owner (`ask.to.worker` set); the reply comes as an answer. */
  async askOwner(question: string): Promise<Ask> {
    const res = await this.#request((id) => ({ type: "ask_owner", id, question }), "asked");
    return res.ask;
  }

  // ---- project work (a Manager) ----------------------------------------------------------

  /** A branch + linked worktree + a Lead launched there on `task`; resolves once the Lead's process started. */
  async delegateProject(task: string, branch: string | null, base: string | null): Promise<Assignment> {
    const res = await this.#request(
      (id) => ({
        type: "delegate_project",
        id,
        task,
        ...(branch !== null ? { branch } : {}),
        ...(base !== null ? { base } : {}),
      }),
      "assignment",
    );
    return res.assignment;
  }

  /** resume_work (relaunch the same Lead session in its checkout) or stop_lead (pause it). */
  async leadAction(action: "resume" | "stop", branch: string): Promise<Assignment> {
    const res = await this.#request(
      (id) => (action === "resume" ? { type: "resume_work", id, branch } : { type: "stop_lead", id, branch }),
      "assignment",
    );
    return res.assignment;
  }

  /** Fast-forward the primary branch to `sha`, the assigned branch's tip (or ask the human to approve it). */
  async integrateBranch(branch: string, sha: string): Promise<Integration> {
    const res = await this.#request((id) => ({ type: "integrate_branch", id, branch, sha }), "integration");
    return res.integration;
  }

  /**
   * Acknowledge deliveries of `storeId`. Sent only on a registered connection to that same
   * store: an ack that cannot be sent is harmless (the core delivers again, and the
   * duplicate is acked then). Returns whether it was sent.
   */
  ack(storeId: string, ids: number[]): boolean {
    if (!this.ready || this.#info?.storeId !== storeId || ids.length === 0) return false;
    return this.#write({ type: "ack", ids });
  }

  // ---- connection ----------------------------------------------------------------------

  #setPhase(phase: Phase): void {
    if (this.#phase === phase) return;
    this.#phase = phase;
    this.#log(`phase ${phase}`);
    try {
      this.#opts.onPhase?.(phase);
    } catch (e) {
      this.#log(`onPhase failed: ${String(e)}`);
    }
  }

  #problem(problem: Problem): void {
    this.#lastError = problem.message;
    try {
      this.#opts.onProblem?.(problem);
    } catch (e) {
      this.#log(`onProblem failed: ${String(e)}`);
    }
  }

  #log(line: string): void {
    try {
      this.#opts.log?.(line);
    } catch {
      // logging must never break the connection
    }
  }

  #connect(): void {
    if (this.#phase === "stopped" || this.#phase === "replaced") return;
    this.#setPhase("connecting");
    this.#decoder = new FrameDecoder(this.#opts.maxFrame ?? MAX_INBOUND_FRAME);
    const socket = createConnection({ path: this.socketPath });
    socket.unref();
    this.#socket = socket;
    socket.on("connect", () => {
      if (socket === this.#socket) this.#handshake(socket);
    });
    socket.on("data", (chunk: Buffer) => {
      if (socket === this.#socket) this.#onData(socket, chunk);
    });
    socket.on("error", (error: Error) => {
      if (socket !== this.#socket) return;
      if (this.#phase === "connecting") {
        this.#problem({
          kind: "unreachable",
          message: `no shepherd core at ${this.socketPath} (${error.message})`,
          errno: errnoOf(error),
          attempt: this.#failures + 1,
        });
      } else {
        this.#lastError = `connection error: ${error.message}`;
        this.#log(this.#lastError);
      }
    });
    socket.on("close", () => {
      if (socket === this.#socket) this.#onClose();
    });
  }

  // The handshake runs on callbacks, not awaits: `registered` and the deliveries right
  // behind it often arrive in one chunk, and the connection must be "ready" before the
  // next frame of that chunk is dispatched.
  #handshake(socket: Socket): void {
    this.#setPhase("handshaking");
    const opts = { allowUnregistered: true, timeoutMs: this.#handshakeTimeoutMs };
    const failed = (e: Error): void => {
      if (socket !== this.#socket) return;
      if (e instanceof CoreError && e.code === "protocol_mismatch") {
        this.#slowRetry = true;
        this.#problem({ kind: "protocol_mismatch", message: `the shepherd core refused protocol ${PROTOCOL_VERSION}: ${e.message}` });
      } else if (e instanceof CoreError && e.code === "session_taken") {
        this.#slowRetry = true;
        this.#problem({
          kind: "session_taken",
          message: `another live Pi process holds this session on the shepherd core (${e.message})`,
        });
      } else if (e instanceof CoreError && e.code === "worker_refused") {
        // A launch nonce the core does not accept (launch_mismatch): retrying soon will not fix it.
        this.#slowRetry = true;
        this.#problem({ kind: "error", message: `the shepherd core refused this managed worker's registration: ${e.coreMessage}` });
      } else if (!(e instanceof NotConnectedError)) {
        this.#problem({ kind: "error", message: `could not register with the shepherd core: ${e.message}` });
      }
      socket.destroy();
    };
    const registered = (res: RegisteredMsg): void => {
      const info = this.#info;
      if (socket !== this.#socket || info === null) return;
      this.#session = res.session;
      this.#failures = 0;
      this.#slowRetry = false;
      this.#lastError = null;
      this.#connectedAt = Date.now();
      this.#setPhase("ready");
      try {
        this.#opts.onRegistered?.(info, res.session, res.pending, res.pairings, res.worker, res.assignment);
      } catch (e) {
        this.#log(`onRegistered failed: ${String(e)}`);
      }
    };
    const welcomed = (welcome: WelcomeMsg): void => {
      if (socket !== this.#socket) return;
      if (welcome.protocol !== PROTOCOL_VERSION) {
        this.#slowRetry = true;
        this.#problem({
          kind: "protocol_mismatch",
          message: `the shepherd core speaks protocol ${welcome.protocol}, this extension ${PROTOCOL_VERSION}: update one of them`,
        });
        socket.destroy();
        return;
      }
      this.#info = {
        coreVersion: welcome.core_version,
        storeId: welcome.store_id,
        corePid: welcome.pid,
        protocol: welcome.protocol,
      };
      this.#setPhase("registering");
      let registration: Registration;
      try {
        registration = this.#opts.registration();
      } catch (e) {
        failed(e instanceof Error ? e : new Error(String(e)));
        return;
      }
      this.#send((id) => ({ type: "register", id, session: registration }), "registered", opts, registered, failed);
    };
    this.#send(
      (id) => ({ type: "hello", id, protocol: PROTOCOL_VERSION, client: "pi", client_name: this.#opts.clientName }),
      "welcome",
      opts,
      welcomed,
      failed,
    );
  }

  #onData(socket: Socket, chunk: Buffer): void {
    let bodies: Buffer[];
    try {
      bodies = this.#decoder.push(chunk);
    } catch (e) {
      this.#lastError = `bad frame from the core: ${e instanceof Error ? e.message : String(e)}`;
      this.#log(this.#lastError);
      socket.destroy();
      return;
    }
    for (const body of bodies) {
      let msg: ServerMsg;
      try {
        msg = decodeServerMsg(body);
      } catch (e) {
        if (!(e instanceof WireDecodeError)) throw e;
        if (e.code === "unknown_type") {
          // A newer core's message type: ignore it (a compatible protocol addition).
          this.#log(`ignored: ${e.message}`);
          continue;
        }
        const waiter = e.requestId === null ? undefined : this.#waiters.get(e.requestId);
        if (e.code === "invalid_message" && waiter !== undefined && e.requestId !== null) {
          this.#waiters.delete(e.requestId);
          clearTimeout(waiter.timer);
          waiter.fail(new Error(`the core's answer to ${waiter.request} is invalid: ${e.message}`));
          continue;
        }
        this.#lastError = `bad message from the core: ${e.message}`;
        this.#log(this.#lastError);
        if (e.code === "malformed_frame") {
          socket.destroy();
          return;
        }
        continue;
      }
      this.#dispatch(msg);
      if (socket !== this.#socket) return;
    }
  }

  #dispatch(msg: ServerMsg): void {
    if (msg.type === "deliver") {
      const info = this.#info;
      if (info === null || this.#phase !== "ready") {
        this.#log(`delivery ${msg.message.id} before registration: ignored (it comes again)`);
        return;
      }
      try {
        this.#opts.onDeliver(info.storeId, msg.message);
      } catch (e) {
        this.#log(`onDeliver failed: ${String(e)}`);
      }
      return;
    }
    if (msg.type === "pairing_event") {
      try {
        this.#opts.onPairingEvent?.(msg);
      } catch (e) {
        this.#log(`onPairingEvent failed: ${String(e)}`);
      }
      return;
    }
    if (msg.type === "error" && msg.id === null) {
      // A connection-level error; the closing ones are followed by the core closing.
      if (msg.code === "replaced") {
        this.#setPhase("replaced");
        this.#problem({ kind: "replaced", message: `the shepherd core moved this session to a newer connection (${msg.message})` });
      } else {
        this.#problem({ kind: "error", message: `shepherd core: ${msg.code}: ${msg.message}` });
      }
      if (CLOSING_ERROR_CODES.has(msg.code)) this.#socket?.destroy();
      return;
    }
    const id = "id" in msg ? msg.id : null;
    if (id === null) return; // presence events: this connection does not subscribe
    const waiter = this.#waiters.get(id);
    if (waiter === undefined) {
      this.#log(`response ${msg.type} to unknown request ${id}`);
      return;
    }
    this.#waiters.delete(id);
    clearTimeout(waiter.timer);
    const withPairing = pairingResponse(msg);
    if (withPairing !== null) {
      try {
        this.#opts.onPairing?.(withPairing.pairing, withPairing.type);
      } catch (e) {
        this.#log(`onPairing failed: ${String(e)}`);
      }
    }
    if (msg.type === "error") waiter.fail(new CoreError(msg.code, msg.message, msg.details));
    else waiter.settle(msg);
    if (msg.type === "error" && CLOSING_ERROR_CODES.has(msg.code)) this.#socket?.destroy();
  }

  #onClose(): void {
    this.#socket = null;
    this.#info = null;
    this.#connectedAt = null;
    this.#failWaiters(new NotConnectedError("the connection to the shepherd core closed"));
    if (this.#phase === "stopped" || this.#phase === "replaced") return;
    this.#failures++;
    const base = Math.min(this.#maxBackoffMs, this.#initialBackoffMs * 2 ** Math.min(this.#failures - 1, 30));
    const delay = Math.round((this.#slowRetry ? Math.max(base, this.#slowRetryMs) : base) * (0.8 + Math.random() * 0.4));
    this.#setPhase("waiting");
    this.#log(`reconnecting in ${delay} ms (failure ${this.#failures})`);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      this.#connect();
    }, delay);
    this.#retryTimer.unref();
  }

  #clearRetry(): void {
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
  }

  #failWaiters(error: Error): void {
    const waiters = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const w of waiters) {
      clearTimeout(w.timer);
      w.fail(error);
    }
  }

  #write(msg: ClientMsg): boolean {
    const socket = this.#socket;
    if (socket === null || socket.destroyed) return false;
    socket.write(encodeFrame(msg));
    return true;
  }

  #request<T extends ResponseType>(build: (id: number) => ClientMsg, expect: T): Promise<ResponseOf<T>> {
    return new Promise<ResponseOf<T>>((resolve, reject) => {
      this.#send(build, expect, {}, resolve, reject);
    });
  }

  /** Send a request; exactly one of onOk / onError is called, synchronously on its answer. */
  #send<T extends ResponseType>(
    build: (id: number) => ClientMsg,
    expect: T,
    options: { allowUnregistered?: boolean; timeoutMs?: number },
    onOk: (res: ResponseOf<T>) => void,
    onError: (error: Error) => void,
  ): void {
    if (!options.allowUnregistered && !this.ready) {
      onError(new NotConnectedError(this.#notConnectedReason()));
      return;
    }
    const socket = this.#socket;
    if (socket === null || socket.destroyed) {
      onError(new NotConnectedError(this.#notConnectedReason()));
      return;
    }
    const id = this.#nextId++;
    const msg = build(id);
    let frame: Buffer;
    try {
      frame = encodeFrame(msg);
    } catch (e) {
      onError(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    const timeoutMs = options.timeoutMs ?? this.#requestTimeoutMs;
    const timer = setTimeout(() => {
      if (!this.#waiters.delete(id)) return;
      onError(new Error(`the shepherd core did not answer ${msg.type} within ${timeoutMs} ms`));
      if (options.allowUnregistered) socket.destroy();
    }, timeoutMs);
    timer.unref();
    this.#waiters.set(id, {
      request: msg.type,
      timer,
      fail: onError,
      settle: (res) => {
        if (isResponse(res, expect)) onOk(res);
        else onError(new Error(`the shepherd core answered ${msg.type} with ${res.type}`));
      },
    });
    socket.write(frame);
  }

  #notConnectedReason(): string {
    const why = this.#lastError === null ? "" : `: ${this.#lastError}`;
    return `not connected to the shepherd core at ${this.socketPath} (${this.#phase}${why})`;
  }
}
