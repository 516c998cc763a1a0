// The connection to the shepherd core: a Unix socket carrying wire.ts frames. It says hello
// (protocol 3, client "pi"), registers the session, matches responses to requests by id,
// hands `deliver` events to the extension, and when the connection drops (core restart,
// crash, slow_consumer) reconnects with exponential backoff and registers again, with the
// registration built fresh each time. It hands `pairing_event`s, which the core sends to both
// sessions of a pairing, and every response that carries a pairing to the extension. The
// requests themselves, typed one by one, are client.ts's CoreClient, built on this class's
// `request`. It never throws at its caller for connection trouble: requests made while not
// connected fail with NotConnectedError, and everything else is reported through callbacks.
// Its socket and timers are unref'd, so it never keeps a finished `pi -p` process alive.

import { createConnection, type Socket } from "node:net";

import {
  CLOSING_ERROR_CODES,
  decodeServerMsg,
  encodeFrame,
  FrameDecoder,
  MAX_INBOUND_FRAME,
  PROTOCOL_VERSION,
  REPLY_TYPES,
  WireDecodeError,
  type Approval,
  type Assignment,
  type ClientMsg,
  type Delivery,
  type Json,
  type Pairing,
  type PairingEventMsg,
  type HelloMsg,
  type Registration,
  type RegisterMsg,
  type RegisteredMsg,
  type ReplyOf,
  type RequestMsg,
  type ServerMsg,
  type SessionInfo,
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
  /** An `approval_changed` about one of this session's held tool calls. */
  onApprovalChanged?: (approval: Approval) => void;
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
/** Whether `msg` is the response `request` declares (generated REPLY_TYPES). */
function isReplyTo<M extends RequestMsg>(request: M, msg: ServerMsg): msg is ReplyOf<M["type"]> {
  return msg.type === REPLY_TYPES[request.type];
}

type Waiter = {
  request: string;
  settle: (msg: ServerMsg) => void;
  fail: (error: Error) => void;
  timer: NodeJS.Timeout;
};

function errnoOf(error: unknown): string | null {
  if (typeof error === "object" && error !== null && "code" in error) {
    return typeof error.code === "string" ? error.code : null;
  }
  return null;
}

/** The connection's life: connect, handshake, dispatch, reconnect; the base of CoreClient. */
export class CoreConnection {
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

  /** The session as the core described it in a response (update, set_role). */
  protected rememberSession(session: SessionInfo): void {
    this.#session = session;
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
      this.#send<RegisterMsg>((id) => ({ type: "register", id, session: registration }), opts, registered, failed);
    };
    this.#send<HelloMsg>(
      (id) => ({ type: "hello", id, protocol: PROTOCOL_VERSION, client: "pi", client_name: this.#opts.clientName }),
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
    if (msg.type === "approval_changed") {
      try {
        this.#opts.onApprovalChanged?.(msg.approval);
      } catch (e) {
        this.#log(`onApprovalChanged failed: ${String(e)}`);
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

  /** Write one frame that expects no answer (ack); false when there is no socket to write to. */
  protected write(msg: ClientMsg): boolean {
    const socket = this.#socket;
    if (socket === null || socket.destroyed) return false;
    socket.write(encodeFrame(msg));
    return true;
  }

  /**
   * Send a request and wait for the response its declaration names (REPLY_TYPES, generated
   * from the Rust table); a CoreError for the core's `error`.
   */
  protected request<M extends RequestMsg>(build: (id: number) => M): Promise<ReplyOf<M["type"]>> {
    return new Promise<ReplyOf<M["type"]>>((resolve, reject) => {
      this.#send(build, {}, resolve, reject);
    });
  }

  /** Send a request; exactly one of onOk / onError is called, synchronously on its answer. */
  #send<M extends RequestMsg>(
    build: (id: number) => M,
    options: { allowUnregistered?: boolean; timeoutMs?: number },
    onOk: (res: ReplyOf<M["type"]>) => void,
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
        if (isReplyTo(msg, res)) onOk(res);
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
