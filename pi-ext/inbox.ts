// Turns the core's deliveries (steers, messages, answers; a supervisor's views and briefs)
// into messages the model reads, exactly once, and acknowledges each to the core only once it
// is in the session. Pi-free: session.ts supplies an InboxHost over the real
// ExtensionAPI, tests a fake.
//
// Every kind starts a turn except `brief` and `notice`: a brief is context for the
// supervisor's next turn, a notice information (an ask addressed to this session's role was
// answered by someone else), so when idle they are appended without a run, and at a turn
// boundary added without asking Pi to continue. The role kinds (`ask` for a Manager or
// Chief to answer with answer_staff, `supervisor_message`, `staff_message`, `peer_message`)
// start a turn like a steer. So do the managed-worker kinds: `task` (a worker's assignment,
// headed with who it is working for), `agent_result` and `agent_ask` (to an owner, from one of
// its workers), and project work's `assignment_update` (to a Manager: one completed turn of an
// assigned Lead) and `integration` (to a Manager: how an integration the human decided ended). An `interrupt` (session.ts aborts the run first) starts a turn with
// its steer even after the aborted run, and without a steer only records the stop. Views and briefs are custom messages of their own types
// ("shepherd-view", "shepherd-brief") so the supervisor's context can be pruned by look.
//
// How a delivery enters the session (see dedupe.ts for why it is a custom message):
//   - Pi idle: pi.sendMessage(..., {triggerTurn: true}) starts a run with it. Only the first
//     waiting delivery starts the run; the others join at that run's first turn boundary.
//   - Pi busy: it waits here, not in Pi's queue, and is added at the next turn boundary
//     (an interrupt instead waits for the run it aborted to settle, then starts its turn)
//     (`turn_end`, else `agent_before_settle`) as a custom_message entry with `continue`:
//     after the current tool calls, before the next model call. (Pi's own steering queue is
//     avoided on purpose: an interactive abort clears it, dropping custom messages silently,
//     and ctx.hasPendingMessages() does not count them.)
//   - After an aborted run it is appended without starting a new run, and the model sees it
//     with the next prompt: the user who pressed Escape keeps control. A supervisor's view
//     is the exception: it always starts a turn.
// A delivery is acknowledged once its entry is in ctx.sessionManager.getEntries() and on
// disk (the session file exists; Pi writes it from the first user or assistant message on),
// or at once for an ephemeral session. One that never lands (Pi was busy after all, or the
// run could not start) is sent again after `retryAfterMs` of idleness.

import { readFileSync } from "node:fs";

import { BRIEF_CUSTOM_TYPE, DELIVERY_CUSTOM_TYPE, DeliveryLedger, VIEW_CUSTOM_TYPE } from "./dedupe.ts";
import type { Assignment, Delivery, DeliveryKind, Sender, Worker } from "./wire.ts";

/**
 * What a delivery's custom message carries in `details` (not shown to the model): the
 * delivery without its text, and the store its id belongs to.
 */
export interface DeliveryDetails extends Omit<Delivery, "text"> {
  store_id: string;
}

/** Pi's text and image content parts (what a user message with a picture holds). */
export type TextPart = { type: "text"; text: string };
export type ImagePart = { type: "image"; data: string; mimeType: string };

/** The custom message handed to pi.sendMessage. */
export interface DeliveryMessage {
  customType: typeof DELIVERY_CUSTOM_TYPE | typeof VIEW_CUSTOM_TYPE | typeof BRIEF_CUSTOM_TYPE;
  /** The text; with the images a delivery carries (a photo from the phone), text and image parts. */
  content: string | (TextPart | ImagePart)[];
  display: true;
  details: DeliveryDetails;
}

/** The same message as a turn-boundary entry draft (Pi's CustomMessageEntryDraft). */
export interface DeliveryDraft extends DeliveryMessage {
  type: "custom_message";
}

/** The Pi side of the inbox. */
export interface InboxHost {
  /** ctx.sessionManager.getEntries(). */
  entries(): readonly unknown[];
  /** True when entries in memory are also on disk (or the session is ephemeral). */
  durable(): boolean;
  /** ctx.isIdle(). */
  idle(): boolean;
  /** pi.sendMessage(message, {triggerTurn, deliverAs: "steer"}); only ever called while idle. */
  send(message: DeliveryMessage, triggerTurn: boolean): void;
  /** Acknowledge to the core, if still connected to the store these ids belong to. */
  ack(storeId: string, ids: number[]): void;
  now(): number;
  /** This session's managed-worker record, when it is one (headers of `task` and `answer`). */
  worker?(): Worker | null;
  /** This session's work assignment, when it is the Lead the core launched for one (the header of `task`). */
  assignment?(): Assignment | null;
}

/** How a received delivery was handled. */
export type ReceiveOutcome = "queued" | "duplicate" | "already_queued";

type Tracked = {
  storeId: string;
  delivery: Delivery;
  /** pending: waiting for idle or a boundary; sent: handed to Pi; landed: in the session. */
  state: "pending" | "sent" | "landed";
  sentAt: number;
};

function who(from: Sender): string {
  if (from.kind === "pi") {
    return from.session_id === null ? `session "${from.name}"` : `session "${from.name}" (${from.session_id})`;
  }
  return `the human (via ${from.name})`;
}

/** Who sent it, as a worker reads it: its owner is `your owner "app" (id)`. */
function whoFor(from: Sender, worker: Worker | null): string {
  if (worker !== null && from.kind === "pi" && from.session_id === worker.owner_id) {
    return `your owner "${from.name}" (${worker.owner_id})`;
  }
  return who(from);
}

/**
 * Whether a delivery of this kind starts a turn (everything but a brief). An interrupt
 * starts one only when it carries a steer (`text`); without text it only tells the model
 * that its run was stopped.
 */
export function startsTurn(kind: DeliveryKind, text?: string): boolean {
  if (kind === "interrupt") return text === undefined || text.trim() !== "";
  return kind !== "brief" && kind !== "notice";
}

/** Whether boundary drafts should make Pi continue (one of them starts a turn). */
export function draftsWantTurn(drafts: readonly DeliveryDraft[]): boolean {
  return drafts.some((d) => startsTurn(d.details.kind));
}

function customTypeOf(kind: DeliveryKind): DeliveryMessage["customType"] {
  if (kind === "view") return VIEW_CUSTOM_TYPE;
  if (kind === "brief") return BRIEF_CUSTOM_TYPE;
  return DELIVERY_CUSTOM_TYPE;
}

/**
 * The text the model reads for one delivery: who sent it, and what it answers. `worker`: this
 * session's managed-worker record, when it is one (its task and its owner's answers say so);
 * `assignment`: its work assignment, when it is an assigned Lead (its task says so).
 */
export function formatDelivery(d: Delivery, worker: Worker | null = null, assignment: Assignment | null = null): string {
  switch (d.kind) {
    case "answer": {
      const ask = d.ask_id === null ? "your question" : `your question #${d.ask_id}`;
      const question = d.question === null ? "" : `\nQuestion: ${d.question}`;
      // A session answers only an ask addressed to it: an ask_supervisor to its role (the
      // core names it by that role, `manager of app <name>`), or a worker's ask_owner.
      const id = d.from.session_id === null ? "" : ` (${d.from.session_id})`;
      const pi = worker !== null ? `your owner "${d.from.name}"${id}` : `your supervisor, the ${d.from.name}${id}`;
      const from = d.from.kind === "pi" ? pi : who(d.from);
      return `[shepherd] Answer to ${ask}, from ${from}:${question}\nAnswer: ${d.text}`;
    }
    case "steer":
      return `[shepherd] Steer from ${whoFor(d.from, worker)}:\n${d.text}`;
    case "message":
      return `[shepherd] Message from ${whoFor(d.from, worker)}:\n${d.text}`;
    case "view": {
      const look = d.look === null ? "" : ` ${d.look}`;
      return (
        `[shepherd] Look${look} at your worker. Read it, then answer with exactly one verdict tool ` +
        `(steer, let_it_run or done):\n\n${d.text}`
      );
    }
    case "brief":
      return `[shepherd] Supervision brief (context only; no verdict needed now):\n${d.text}`;
    case "interrupt": {
      const by = whoFor(d.from, worker);
      const first = by.startsWith("your ") ? `Y${by.slice(1)}` : by;
      return d.text.trim() === ""
        ? `[shepherd] ${first} stopped your run. Wait for their next message.`
        : `[shepherd] ${first} stopped your run. Do this instead:\n${d.text}`;
    }
    case "ask": {
      const ask = d.ask_id === null ? "" : ` #${d.ask_id}`;
      const how = d.ask_id === null ? "answer_staff" : `answer_staff {ask: ${d.ask_id}, answer}`;
      return (
        `[shepherd] Question${ask} for you, as their supervisor, from ${who(d.from)}. ` +
        `Decide and answer it with ${how}:\n${d.text}`
      );
    }
    case "supervisor_message":
      return `[shepherd] Message for you, as their supervisor, from ${who(d.from)} (no answer needed unless you choose to steer them with message_staff):\n${d.text}`;
    case "staff_message":
      return `[shepherd] Steer from your supervisor, ${who(d.from)}:\n${d.text}`;
    case "peer_message":
      return `[shepherd] Peer message from ${who(d.from)} (reply with message_peer if needed):\n${d.text}`;
    case "notice":
      return `[shepherd] Notice (information only, nothing to do):\n${d.text}`;
    case "task":
      return `${assignment !== null ? leadTaskHeader(assignment) : taskHeader(d.from, worker)}\n\n${d.text}`;
    case "agent_result":
      return (
        `[shepherd] Result from your managed worker "${d.from.name}" (it comes once; nothing to poll). ` +
        `Use it in your work:\n${d.text}`
      );
    case "agent_ask": {
      const ask = d.ask_id === null ? "" : ` #${d.ask_id}`;
      return (
        `[shepherd] Question${ask} from your managed worker "${d.from.name}", which waits until you answer. ` +
        `Answer it with reply_agent {agent: "${d.from.name}", answer}:\n${d.text}`
      );
    }

    case "assignment_update":
      return (
        `[shepherd] Assignment update from your Lead "${d.from.name}"${d.from.session_id === null ? "" : ` (${d.from.session_id})`}: ` +
        `one comes by itself after each turn the Lead completes; nothing to poll. Review it; steer the Lead with ` +
        `message_staff if needed, and when the branch is done and reviewed, integrate it with integrate_branch {branch, sha}.\n${d.text}`
      );
    case "integration":
      return `[shepherd] Integration outcome, decided by ${who(d.from)}:\n${d.text}`;
  }
}

/** How an assigned Lead's task is introduced: its branch and checkout, where its turns go. */
export function leadTaskHeader(a: Assignment): string {
  return (
    `[shepherd] Work assignment for ${a.project}@${a.branch} (you are its Lead, working in the checkout ${a.checkout}, ` +
    `delegated by the Manager "${a.created_by}"). Work on it on this branch and commit your work. The final text of ` +
    `each of your turns goes to the Manager as an assignment update; use ask_supervisor when you need its decision.`
  );
}

/** How a worker's assignment is introduced: whose it is, what the worker is, how it ends. */
export function taskHeader(from: Sender, worker: Worker | null): string {
  const owner = from.kind === "pi" ? `"${from.name}"` : who(from);
  const me = worker === null ? "you are a managed worker" : `you are managed worker ${worker.label}, definition ${worker.definition}`;
  return (
    `[shepherd] Task from ${owner} (${me}). Work on it; your final answer (plain text, no tool call) ` +
    `is your result and goes to your owner. If you must ask, call ask_owner as the only tool call of your turn.`
  );
}

/**
 * A delivery's content: its text, and when it carries images (a photo the human sent from
 * the phone, saved in the session's inbox by the core) each read from its file as an image
 * part the model sees. One that cannot be read is said in the text instead.
 */
export function deliveryContent(
  d: Delivery,
  text: string,
  read: (path: string) => Buffer = readFileSync,
): string | (TextPart | ImagePart)[] {
  const images = d.images ?? [];
  if (images.length === 0) return text;
  const parts: ImagePart[] = [];
  const missing: string[] = [];
  for (const image of images) {
    try {
      parts.push({ type: "image", data: read(image.path).toString("base64"), mimeType: image.mime });
    } catch (e) {
      missing.push(`(The image at ${image.path} could not be read: ${e instanceof Error ? e.message : String(e)}.)`);
    }
  }
  const said = missing.length === 0 ? text : `${text}\n${missing.join("\n")}`;
  return [{ type: "text", text: said }, ...parts];
}

export function deliveryMessage(
  storeId: string,
  d: Delivery,
  worker: Worker | null = null,
  assignment: Assignment | null = null,
): DeliveryMessage {
  return {
    customType: customTypeOf(d.kind),
    content: deliveryContent(d, formatDelivery(d, worker, assignment)),
    display: true,
    details: {
      store_id: storeId,
      id: d.id,
      kind: d.kind,
      from: d.from,
      ask_id: d.ask_id,
      question: d.question,
      pairing_id: d.pairing_id,
      look: d.look,
      created_at: d.created_at,
    },
  };
}

export class Inbox {
  readonly ledger = new DeliveryLedger();
  /** How long a delivery handed to an idle Pi may stay unlanded before it is sent again. */
  retryAfterMs: number;
  readonly #host: InboxHost;
  /** In arrival order (the core delivers in id order). */
  readonly #tracked = new Map<string, Tracked>();
  /** Set by an aborted run: append deliveries without starting a new run. */
  #holdTurn = false;

  constructor(host: InboxHost, options: { retryAfterMs?: number } = {}) {
    this.#host = host;
    this.retryAfterMs = options.retryAfterMs ?? 10_000;
  }

  /** Deliveries received and not yet acknowledged. */
  get unacked(): number {
    return this.#tracked.size;
  }

  /** Learn what the session already holds (call on session_start). */
  restore(): void {
    this.ledger.scan(this.#host.entries());
  }

  /** A `deliver` event from the core. */
  receive(storeId: string, delivery: Delivery): ReceiveOutcome {
    this.ledger.scan(this.#host.entries());
    const key = `${storeId}\u0000${delivery.id}`;
    const tracked = this.#tracked.get(key);
    if (this.ledger.has(storeId, delivery.id)) {
      if (tracked === undefined) {
        // Landed in an earlier connection or an earlier process: a duplicate; ack it again.
        this.#host.ack(storeId, [delivery.id]);
      } else {
        tracked.state = "landed";
        this.#ackLanded();
      }
      return "duplicate";
    }
    if (tracked !== undefined) return "already_queued";
    this.#tracked.set(key, { storeId, delivery, state: "pending", sentAt: 0 });
    this.pump();
    return "queued";
  }

  /**
   * Whether a delivery is new here: not in the session already and not waiting in this
   * inbox (an interrupt aborts the run only the first time it arrives).
   */
  isNew(storeId: string, id: number): boolean {
    this.ledger.scan(this.#host.entries());
    return !this.ledger.has(storeId, id) && !this.#tracked.has(`${storeId}\u0000${id}`);
  }

  /** Hand waiting deliveries to Pi if it is idle; when busy they wait for a boundary. */
  pump(): void {
    const pending = [...this.#tracked.values()].filter((t) => t.state === "pending");
    if (pending.length === 0 || !this.#host.idle()) return;
    const now = this.#host.now();
    // In order: briefs (and, after an aborted run, everything) are appended at once without
    // a run (Pi does this synchronously when idle); the first that starts a turn starts a
    // run, and the rest join it at its first turn boundary.
    for (const t of pending) {
      // A view is the core deciding it is time to look: it starts a turn even after an
      // aborted run (a runaway abort, or Escape in a supervisor session); only
      // `/supervise stop` ends the looks.
      // An interrupt's steer is what the human asked for right after the abort: it starts
      // its turn too.
      const held = this.#holdTurn && t.delivery.kind !== "view" && t.delivery.kind !== "interrupt";
      if (held || !startsTurn(t.delivery.kind, t.delivery.text)) {
        this.#send(t, false, now);
        continue;
      }
      this.#send(t, true, now);
      break;
    }
    this.reconcile();
  }

  /**
   * At a turn boundary (`turn_end`, `agent_before_settle`): every waiting delivery as an
   * entry draft, in order. Pi appends them before the next model request; the caller asks
   * Pi to continue only when draftsWantTurn() (a lone brief must not start a request).
   */
  takeBoundaryDrafts(): DeliveryDraft[] {
    const now = this.#host.now();
    const drafts: DeliveryDraft[] = [];
    for (const t of this.#tracked.values()) {
      if (t.state !== "pending") continue;
      // An interrupt waits for its aborted run to settle: added at a boundary of that run
      // (the boundary after the aborted tool call), Pi would not continue, and its steer
      // would start no turn.
      if (t.delivery.kind === "interrupt") continue;
      t.state = "sent";
      t.sentAt = now;
      drafts.push({ type: "custom_message", ...deliveryMessage(t.storeId, t.delivery, this.#worker(), this.#host.assignment?.() ?? null) });
    }
    return drafts;
  }

  /**
   * Check what has landed: acknowledge it once durable; put back what was handed to an idle
   * Pi and never landed. Call after any event that may have appended entries.
   */
  reconcile(): void {
    if (this.#tracked.size === 0) return;
    this.ledger.scan(this.#host.entries());
    for (const t of this.#tracked.values()) {
      if (t.state !== "landed" && this.ledger.has(t.storeId, t.delivery.id)) t.state = "landed";
    }
    this.#ackLanded();
    const now = this.#host.now();
    let retry = false;
    for (const t of this.#tracked.values()) {
      if (t.state === "sent" && now - t.sentAt >= this.retryAfterMs && this.#host.idle()) {
        t.state = "pending";
        retry = true;
      }
    }
    if (retry) this.pump();
  }

  /** agent_start: a run began, so new deliveries may start runs again. */
  runStarted(): void {
    this.#holdTurn = false;
  }

  /** agent_settled: Pi is idle; deliver what waits (without a run if this one was aborted). */
  runSettled(aborted: boolean): void {
    this.#holdTurn = aborted;
    this.reconcile();
    this.pump();
  }

  /** For /shepherd: how many deliveries are in each state. */
  snapshot(): { pending: number; sent: number; landed: number; handled: number } {
    let pending = 0;
    let sent = 0;
    let landed = 0;
    for (const t of this.#tracked.values()) {
      if (t.state === "pending") pending++;
      else if (t.state === "sent") sent++;
      else landed++;
    }
    return { pending, sent, landed, handled: this.ledger.count() };
  }

  #send(t: Tracked, triggerTurn: boolean, now: number): void {
    t.state = "sent";
    t.sentAt = now;
    this.#host.send(deliveryMessage(t.storeId, t.delivery, this.#worker(), this.#host.assignment?.() ?? null), triggerTurn);
  }

  #worker(): Worker | null {
    return this.#host.worker?.() ?? null;
  }

  #ackLanded(): void {
    if (!this.#host.durable()) return;
    const byStore = new Map<string, number[]>();
    for (const [key, t] of this.#tracked) {
      if (t.state !== "landed") continue;
      this.#tracked.delete(key);
      const ids = byStore.get(t.storeId) ?? [];
      ids.push(t.delivery.id);
      byStore.set(t.storeId, ids);
    }
    for (const [storeId, ids] of byStore) this.#host.ack(storeId, ids);
  }
}
