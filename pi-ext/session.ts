// One Pi session's life with the shepherd core, from session_start to session_shutdown
// (index.ts makes one per session and feeds it Pi's events): the connection (client.ts), with
// `shepherd up` started when no core answers (autostart.ts); the core's picture of the session
// kept current (registration, name, model, status, context fill, sent shortly after a change
// and at once at a turn's start and end); deliveries handed to the inbox (inbox.ts) and
// interrupts aborting the run; supervision briefs and deliveries added at turn boundaries, and
// a view stranded by an aborted run given its turn; asks and reports made while the core is
// away queued and sent once it is back (outbox.ts); the footer, notices, the debug log and the
// `/shepherd` description. It owns the per-session parts the other modules follow: the role
// (roles.ts), the pairing (supervision.ts), whether it is a managed worker (workers.ts) and its
// results (result.ts). Every callback catches its own failures and records them.

import { spawn } from "node:child_process";
import { appendFileSync, existsSync } from "node:fs";
import { homedir } from "node:os";

import type { BoundaryResult, BoundaryState, ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { ApprovalGate, readSummary } from "./approvals.ts";
import { Autostart, fsLog } from "./autostart.ts";
import { CoreClient, CoreError, NotConnectedError, type PresenceUpdate, type Problem } from "./client.ts";
import { CLIENT_NAME, type ShepherdConfig } from "./config.ts";
import { draftsWantTurn, Inbox, type DeliveryDraft } from "./inbox.ts";
import { Outbox, type OutboxItem, type SendOutcome } from "./outbox.ts";
import { loadPolicy } from "./policy.ts";
import { ResultSender } from "./result.ts";
import { ROLE_STATUS_KEY, Roles } from "./roles.ts";
import { Supervision, SUPERVISE_STATUS_KEY, type PolicyBriefMessage } from "./supervision.ts";
import { errorText, type Level } from "./tool-glue.ts";
import { assignedLeadFromEnv, launchFromEnv, WORKER_STATUS_KEY, Workers } from "./workers.ts";
import type { Ask, ContextUsage, Delivery, Registration, ResultsMode } from "./wire.ts";

const STATUS_KEY = "shepherd";
const LOG_LINES = 50;

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

/** ctx.getContextUsage() in the protocol's shape; undefined when Pi has no model window. */
function contextUsage(ctx: ExtensionContext): ContextUsage | undefined {
  const usage = ctx.getContextUsage();
  if (usage === undefined) return undefined;
  return {
    tokens: usage.tokens,
    window: usage.contextWindow,
    percent: usage.percent === null ? null : round1(usage.percent),
  };
}

function modelName(ctx: ExtensionContext): string | undefined {
  const model = ctx.model;
  return model === undefined ? undefined : `${model.provider}/${model.id}`;
}

/** The nudge that starts the turn for a view stranded by an aborted run. */
const VIEW_NUDGE_CUSTOM_TYPE = "shepherd-view-nudge";
/** An interrupt older than this (it waited for the session's return) aborts no run. */
const INTERRUPT_FRESH_MS = 60_000;

/** Everything that lives from one session_start to its session_shutdown. */
export class ShepherdSession {
  readonly #pi: ExtensionAPI;
  readonly config: ShepherdConfig;
  readonly client: CoreClient;
  readonly inbox: Inbox;
  readonly outbox: Outbox;
  readonly supervision: Supervision;
  /** Tool calls held for the approval policy (approvals.ts). */
  approvals!: ApprovalGate;
  /** The role this session holds (Lead, Manager, Chief), its tools and footer. */
  readonly roles: Roles;
  /** Whether this session is a managed worker (its record, its tools, ask_owner's rule) or an assignment's Lead. */
  readonly workers: Workers;
  /** Sends each run's final text to the core as its result. */
  readonly results: ResultSender;
  /** This session's `results` setting (SHEPHERD_RESULTS, `/shepherd results`); null: the core's. */
  resultsMode: ResultsMode | null;
  /** The latest context Pi handed us; replaced on every event. */
  ctx: ExtensionContext;
  readonly openAsks = new Map<number, Ask>();
  readonly #runningTools = new Map<string, string>();
  #status = "idle";
  readonly #noticesShown = new Set<string>();
  readonly autostart: Autostart;
  /** Registered at least once in this session: a later outage is a lost core, not a missing one. */
  #everConnected = false;
  #pendingUpdate: PresenceUpdate = {};
  /** Supervision briefs waiting for a turn boundary (see #injectBrief). */
  readonly #pendingBriefs: PolicyBriefMessage[] = [];
  /** A view was added at a turn boundary and no turn has started since to answer it. */
  #viewAwaitingTurn = false;
  #updateTimer: NodeJS.Timeout | null = null;
  #reconcileTimer: NodeJS.Timeout | null = null;
  readonly #log: string[] = [];
  #lastError: string | null = null;
  #statusText: string | null = null;
  #stopped = false;

  constructor(pi: ExtensionAPI, ctx: ExtensionContext, config: ShepherdConfig) {
    this.#pi = pi;
    this.ctx = ctx;
    this.config = config;
    this.inbox = new Inbox({
      entries: () => this.ctx.sessionManager.getEntries(),
      durable: () => {
        const file = this.ctx.sessionManager.getSessionFile();
        return file === undefined || existsSync(file);
      },
      idle: () => this.ctx.isIdle(),
      send: (msg, triggerTurn) => this.#pi.sendMessage(msg, { triggerTurn, deliverAs: "steer" }),
      ack: (storeId, ids) => {
        const sent = this.client.ack(storeId, ids);
        this.log(`ack ${ids.join(",")} ${sent ? "sent" : "not sent (not connected to that store)"}`);
      },
      now: () => Date.now(),
      worker: () => this.workers.record,
      assignment: () => this.workers.assignment,
    });
    this.outbox = new Outbox({
      entries: () => this.ctx.sessionManager.getEntries(),
      appendEntry: (customType, data) => this.#pi.appendEntry(customType, data),
      sendAsk: (item) =>
        this.#sendQueued(() =>
          item.supervisor === true
            ? this.client.askSupervisor(item.question, item.options, item.details, item.key)
            : this.client.ask(item.question, item.options, item.details, item.key),
        ),
      sendReport: (item) => this.#sendQueued(() => this.client.report(item.text, item.key)),
      delivered: (item, outcome) => this.#queuedDelivered(item, outcome),
      log: (line) => this.log(line),
    });
    this.supervision = new Supervision({
      sessionId: () => this.ctx.sessionManager.getSessionId(),
      activeTools: () => this.#pi.getActiveTools(),
      setActiveTools: (names) => {
        this.log(`active tools: ${names.join(", ")}`);
        this.#pi.setActiveTools(names);
      },
      entries: () => this.ctx.sessionManager.getEntries(),
      contextEntries: () => this.ctx.sessionManager.buildContextEntries(),
      appendEntry: (customType, data) => this.#pi.appendEntry(customType, data),
      injectBrief: (msg) => this.#injectBrief(msg),
      setFooter: (text) => {
        try {
          if (this.ctx.hasUI) this.ctx.ui.setStatus(SUPERVISE_STATUS_KEY, text ?? undefined);
        } catch (e) {
          this.log(`setStatus failed: ${errorText(e)}`);
        }
      },
      policy: () => loadPolicy(this.ctx.cwd, this.config.agentDir),
      notify: (text, level) => this.notify(text, level),
      log: (line) => this.log(line),
    });
    this.roles = new Roles({
      entries: () => this.ctx.sessionManager.getEntries(),
      appendEntry: (customType, data) => this.#pi.appendEntry(customType, data),
      activeTools: () => this.#pi.getActiveTools(),
      setActiveTools: (names) => {
        this.log(`active tools: ${names.join(", ")}`);
        this.#pi.setActiveTools(names);
      },
      setFooter: (text) => {
        try {
          if (this.ctx.hasUI) this.ctx.ui.setStatus(ROLE_STATUS_KEY, text ?? undefined);
        } catch (e) {
          this.log(`setStatus failed: ${errorText(e)}`);
        }
      },
      setRole: async (role, reclaim) => (await this.client.setRole(role, reclaim)).session,
      supervising: () => this.supervision.supervising !== null,
      notify: (text, level) => this.notify(text, level),
      log: (line) => this.log(line),
    });
    this.workers = new Workers(
      {
        activeTools: () => this.#pi.getActiveTools(),
        setActiveTools: (names) => {
          this.log(`active tools: ${names.join(", ")}`);
          this.#pi.setActiveTools(names);
        },
        allTools: () => this.#pi.getAllTools().map((t) => t.name),
        setFooter: (text) => {
          try {
            if (this.ctx.hasUI) this.ctx.ui.setStatus(WORKER_STATUS_KEY, text ?? undefined);
          } catch (e) {
            this.log(`setStatus failed: ${errorText(e)}`);
          }
        },
        log: (line) => this.log(line),
      },
      launchFromEnv(process.env),
      assignedLeadFromEnv(process.env),
    );
    this.resultsMode = config.results;
    this.results = new ResultSender({
      send: (text, results, key) => this.client.result(text, results, key),
      mode: () => this.resultsMode,
      supervising: () => this.supervision.supervising !== null,
      keepUnsent: () => this.workers.launched,
      log: (line) => this.log(line),
    });
    this.autostart = new Autostart(
      {
        spawn: (bin, args) => spawn(bin, args, { detached: true, stdio: "ignore", cwd: homedir(), env: process.env }),
        ...fsLog,
        notify: (text, level) => this.notify(text, level),
        log: (line) => this.log(line),
      },
      { socketPath: config.socketPath, autostart: config.autostart, shepherdBin: config.shepherdBin, logPath: config.coreLog },
    );
    this.client = new CoreClient({
      socketPath: config.socketPath,
      clientName: CLIENT_NAME,
      registration: () => this.registration(),
      onDeliver: (storeId, delivery) => this.#onDeliver(storeId, delivery),
      onRegistered: (info, session, pending, pairings, worker, assignment) => {
        this.log(
          `registered as ${session.id} "${session.name}" with core ${info.coreVersion} (store ${info.storeId}), ${pending} pending, ${pairings.length} pairings`,
        );
        this.#guard("workers", () => this.workers.registered(worker, assignment));
        void this.results.resend();
        this.#lastError = null;
        this.#everConnected = true;
        this.#guard("pairings", () => this.supervision.sync(pairings, "registered"));
        this.roles.registered(session).catch((e: unknown) => this.recordError("roles", e));
        void this.outbox.flush();
        void this.approvals.reattach();
        this.#refreshOpenAsks();
        this.refreshStatusLine();
      },
      onPairingEvent: (event) => {
        this.log(`pairing ${event.pairing.id}: ${event.change}${event.by === null ? "" : ` by ${event.by}`}`);
        this.#guard("pairing_event", () => this.supervision.observe(event.pairing, `event:${event.change}`));
      },
      onPairing: (pairing, response) => this.#guard(response, () => this.supervision.observe(pairing, response)),
      onApprovalChanged: (approval) => this.#guard("approval_changed", () => this.approvals.decided(approval)),
      onPhase: () => this.refreshStatusLine(),
      onProblem: (problem) => this.#onProblem(problem),
      log: (line) => this.log(line),
    });
    this.approvals = new ApprovalGate(this.client, () => readSummary(config.socketPath), (line) => this.log(line));
  }

  start(): void {
    this.log(`session ${this.ctx.sessionManager.getSessionId()} (mode ${this.ctx.mode}), core socket ${this.config.socketPath}`);
    if (this.config.roleProblem !== null) this.notifyOnce("role", `shepherd: ${this.config.roleProblem}`, "warning");
    if (this.config.resultsProblem !== null) this.notifyOnce("results", `shepherd: ${this.config.resultsProblem}`, "warning");
    this.inbox.restore();
    this.#guard("outbox restore", () => this.outbox.restore());
    this.#guard("supervision start", () => this.supervision.start());
    this.#guard("roles start", () => this.roles.start());
    this.#guard("workers start", () => this.workers.start());
    this.client.start();
    this.refreshStatusLine();
  }

  /** `bye`: Pi is closing the session (see CoreClient.stop). */
  stop(bye?: { returning: boolean }): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#guard("roles stop", () => this.roles.stop());
    if (this.#updateTimer !== null) clearTimeout(this.#updateTimer);
    if (this.#reconcileTimer !== null) clearInterval(this.#reconcileTimer);
    this.client.stop(bye);
  }

  // ---- the outbox (asks and reports made while the core was away) ----------------------

  /** Send one queued item: sent, not connected (it waits), or refused by the core. */
  async #sendQueued<T>(send: () => Promise<T>): Promise<SendOutcome<T>> {
    try {
      return { sent: await send() };
    } catch (e) {
      if (e instanceof CoreError) return { refused: e.message };
      return { notConnected: errorText(e) };
    }
  }

  #queuedDelivered(item: OutboxItem, outcome: { id: number } | { refused: string }): void {
    if ("refused" in outcome) {
      const what = item.kind === "ask" ? `question "${item.question}"` : "report";
      this.notify(`shepherd: the queued ${what} was refused by the core: ${outcome.refused}`, "warning");
      return;
    }
    if (item.kind === "ask") this.#refreshOpenAsks();
    this.refreshStatusLine();
  }

  /**
   * Send an ask or report now, or queue it when the core is away (or others wait before it):
   * the item's key makes a resend after a lost reply harmless. `queued` when it waits.
   */
  async sendOrQueue<T>(item: OutboxItem, send: () => Promise<T>): Promise<{ sent: T } | { queued: true }> {
    if (this.outbox.pending.length === 0) {
      try {
        return { sent: await send() };
      } catch (e) {
        if (!(e instanceof NotConnectedError)) throw e;
      }
    }
    this.outbox.enqueue(item);
    void this.outbox.flush();
    return { queued: true };
  }

  // ---- logging and UI ------------------------------------------------------------------

  log(line: string): void {
    const stamped = `${new Date().toISOString()} ${line}`;
    this.#log.push(stamped);
    if (this.#log.length > LOG_LINES) this.#log.shift();
    if (this.config.logFile !== null) {
      try {
        appendFileSync(this.config.logFile, `${stamped}\n`);
      } catch {
        // a debug log that cannot be written is not worth a notice
      }
    }
  }

  /** Run `fn`, recording instead of throwing. */
  #guard(context: string, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.recordError(context, e);
    }
  }

  recordError(context: string, e: unknown): void {
    this.#lastError = `${context}: ${errorText(e)}`;
    this.log(`error: ${this.#lastError}`);
  }

  notify(text: string, level: Level): void {
    this.log(`notice (${level}): ${text}`);
    try {
      if (this.ctx.hasUI) this.ctx.ui.notify(text, level);
    } catch (e) {
      this.log(`notify failed: ${errorText(e)}`);
    }
  }

  notifyOnce(key: string, text: string, level: Level): void {
    if (this.#noticesShown.has(key)) return;
    this.#noticesShown.add(key);
    this.notify(text, level);
  }

  refreshStatusLine(): void {
    if (this.#stopped) return;
    let text: string;
    if (this.client.ready) {
      const n = this.openAsks.size;
      text = n === 0 ? "shepherd: on" : `shepherd: ${n} open ask${n === 1 ? "" : "s"}`;
    } else if (this.client.phase === "replaced") {
      text = "shepherd: replaced";
    } else {
      text = "shepherd: offline";
    }
    if (text === this.#statusText) return;
    this.#statusText = text;
    try {
      if (this.ctx.hasUI) this.ctx.ui.setStatus(STATUS_KEY, text);
    } catch (e) {
      this.log(`setStatus failed: ${errorText(e)}`);
    }
  }

  // ---- presence ------------------------------------------------------------------------

  registration(): Registration {
    const ctx = this.ctx;
    const sm = ctx.sessionManager;
    const reg: Registration = {
      session_id: sm.getSessionId(),
      cwd: ctx.cwd,
      pid: process.pid,
      status: this.#status,
      // Only a hint: the core grants Manager and Chief from its leases (roles.ts claims them).
      role: this.config.role === "supervisor" ? "supervisor" : "lead",
    };
    const name = this.#pi.getSessionName();
    if (name !== undefined && name !== "") reg.name = name;
    const model = modelName(ctx);
    if (model !== undefined) reg.model = model;
    const context = contextUsage(ctx);
    if (context !== undefined) reg.context = context;
    const file = sm.getSessionFile();
    if (file !== undefined) reg.session_file = file;
    reg.subagent = this.config.subagent;
    if (this.workers.launch !== null) reg.launch = this.workers.launch;
    return reg;
  }

  /**
   * Queue presence changes; sent together shortly after, and only while registered.
   * `now` sends them (and anything queued) at once: a turn's start and end must each reach
   * the core, or a quick turn would look like no change at all and a supervisor would
   * never see the worker stop.
   */
  update(fields: PresenceUpdate, now = false): void {
    this.#pendingUpdate = { ...this.#pendingUpdate, ...fields };
    if (now) {
      if (this.#updateTimer !== null) clearTimeout(this.#updateTimer);
      this.#updateTimer = null;
      this.#flushUpdate();
      return;
    }
    if (this.#updateTimer !== null) return;
    this.#updateTimer = setTimeout(() => {
      this.#updateTimer = null;
      this.#flushUpdate();
    }, 50);
    this.#updateTimer.unref();
  }

  #flushUpdate(): void {
    const pending = this.#pendingUpdate;
    this.#pendingUpdate = {};
    if (!this.client.ready || Object.keys(pending).length === 0) return;
    this.client.update(pending).catch((e: unknown) => this.recordError("update", e));
  }

  setStatus(status: string): void {
    if (status === this.#status) return;
    const turnBoundary = status === "idle" || this.#status === "idle";
    this.#status = status;
    this.update({ status }, turnBoundary);
  }

  toolStarted(toolCallId: string, toolName: string): void {
    this.#runningTools.set(toolCallId, toolName);
    this.setStatus(`tool:${toolName}`);
  }

  toolEnded(toolCallId: string): void {
    this.#runningTools.delete(toolCallId);
    const next = this.#runningTools.values().next();
    if (this.#status !== "idle") this.setStatus(next.done === true ? "thinking" : `tool:${next.value}`);
  }

  settled(): void {
    this.#runningTools.clear();
    this.setStatus("idle");
    this.updateContext();
  }

  updateContext(): void {
    const context = contextUsage(this.ctx);
    if (context !== undefined) this.update({ context });
  }

  // ---- deliveries ----------------------------------------------------------------------

  #onDeliver(storeId: string, delivery: Delivery): void {
    if (this.#stopped) return;
    try {
      if (delivery.kind === "interrupt") this.#interrupt(storeId, delivery);
      if (delivery.kind === "answer" && delivery.ask_id !== null && this.openAsks.delete(delivery.ask_id)) {
        this.refreshStatusLine();
      }
      const outcome = this.inbox.receive(storeId, delivery);
      this.log(`delivery ${delivery.id} (${delivery.kind} from ${delivery.from.name}): ${outcome}`);
      this.#armReconcile();
    } catch (e) {
      this.recordError(`delivery ${delivery.id}`, e);
    }
  }

  /**
   * An interrupt, the first time it arrives: abort the run in progress (Pi's abort, as
   * Escape does). One that waited while the session was away (older than
   * INTERRUPT_FRESH_MS) aborts nothing: it was meant for a run long gone. Its steer, if
   * any, then goes through the inbox like any delivery (acknowledged once in the session).
   */
  #interrupt(storeId: string, delivery: Delivery): void {
    if (!this.inbox.isNew(storeId, delivery.id)) return;
    const age = Date.now() - delivery.created_at;
    if (this.ctx.isIdle()) {
      this.log(`interrupt ${delivery.id} from ${delivery.from.name}: idle, nothing to abort`);
    } else if (age > INTERRUPT_FRESH_MS) {
      this.log(`interrupt ${delivery.id} from ${delivery.from.name}: ${age} ms old, not aborting the current run`);
    } else {
      this.log(`interrupt ${delivery.id} from ${delivery.from.name}: aborting the run`);
      this.ctx.abort();
    }
  }

  /**
   * The extension's own supervision brief: appended at once when idle; when busy it waits
   * for the next turn boundary (Pi's steering queue would lose it to an abort).
   */
  #injectBrief(msg: PolicyBriefMessage): void {
    if (this.ctx.isIdle()) {
      this.#pi.sendMessage(msg, { triggerTurn: false });
    } else {
      this.#pendingBriefs.push(msg);
    }
  }

  /** Briefs waiting for a turn boundary, as entry drafts (they never ask for a turn). */
  takeBriefDrafts(): Array<PolicyBriefMessage & { type: "custom_message" }> {
    const briefs = this.#pendingBriefs.splice(0).map((b) => ({ type: "custom_message" as const, ...b }));
    if (briefs.length > 0) this.log(`adding ${briefs.length} supervision brief(s) at a turn boundary`);
    return briefs;
  }

  /** After a run: a brief that found no boundary (an aborted run) is appended now. */
  flushBriefs(): void {
    for (const brief of this.#pendingBriefs.splice(0)) this.#pi.sendMessage(brief, { triggerTurn: false });
  }

  /** A model request is going out: any view added before it is in front of the model. */
  turnStarted(): void {
    this.#viewAwaitingTurn = false;
  }

  /**
   * After a run: a view that was added at its last boundary but never answered (the run
   * was aborted right then) gets a turn now, so a look is never left unread.
   */
  answerStrandedView(): void {
    if (!this.#viewAwaitingTurn) return;
    this.#viewAwaitingTurn = false;
    // A run the inbox just started reads the view too.
    if (this.supervision.supervising === null || !this.ctx.isIdle()) return;
    this.log("a view landed as the run was aborted: starting its turn");
    this.#pi.sendMessage(
      {
        customType: VIEW_NUDGE_CUSTOM_TYPE,
        content: "[shepherd] The look above is still waiting for your verdict.",
        display: false,
        details: {},
      },
      { triggerTurn: true },
    );
  }

  /**
   * At a turn boundary (`turn_end`, `agent_before_settle`): waiting briefs and deliveries
   * join the session before the next model request. An aborted run takes nothing: what
   * waits is handled once it has settled (held deliveries appended, a view starting its
   * turn, briefs appended). A lone brief does not ask for another model request.
   */
  atBoundary(event: BoundaryState): BoundaryResult | undefined {
    if (event.outcome === "aborted") return undefined;
    const briefs = this.takeBriefDrafts();
    const drafts = this.takeDrafts();
    if (briefs.length === 0 && drafts.length === 0) return undefined;
    const entries = [...event.entries, ...briefs, ...drafts];
    return draftsWantTurn(drafts) ? { entries, continue: true } : { entries };
  }

  /** Boundary drafts for turn_end / agent_before_settle. */
  takeDrafts(): DeliveryDraft[] {
    const drafts = this.inbox.takeBoundaryDrafts();
    if (drafts.some((d) => d.details.kind === "view")) this.#viewAwaitingTurn = true;
    if (drafts.length > 0) {
      this.log(`injecting ${drafts.map((d) => d.details.id).join(",")} at a turn boundary`);
      this.#armReconcile();
    }
    return drafts;
  }

  reconcile(): void {
    try {
      this.inbox.reconcile();
    } catch (e) {
      this.recordError("reconcile", e);
    }
    this.#armReconcile();
  }

  /** Soon after an entry may have landed, and every second while anything is unacked. */
  #armReconcile(): void {
    if (this.#stopped) return;
    setImmediate(() => {
      if (this.#stopped) return;
      try {
        this.inbox.reconcile();
      } catch (e) {
        this.recordError("reconcile", e);
      }
    }).unref();
    if (this.inbox.unacked > 0 && this.#reconcileTimer === null) {
      this.#reconcileTimer = setInterval(() => {
        if (this.#stopped) return;
        try {
          this.inbox.reconcile();
        } catch (e) {
          this.recordError("reconcile", e);
        }
        if (this.inbox.unacked === 0 && this.#reconcileTimer !== null) {
          clearInterval(this.#reconcileTimer);
          this.#reconcileTimer = null;
        }
      }, 1000);
      this.#reconcileTimer.unref();
    }
  }

  #refreshOpenAsks(): void {
    this.client
      .openAsks()
      .then((asks) => {
        this.openAsks.clear();
        for (const ask of asks) this.openAsks.set(ask.id, ask);
        this.refreshStatusLine();
      })
      .catch((e: unknown) => this.recordError("list_asks", e));
  }

  // ---- trouble -------------------------------------------------------------------------

  #onProblem(problem: Problem): void {
    this.#lastError = problem.message;
    this.log(`problem ${problem.kind}: ${problem.message}`);
    switch (problem.kind) {
      case "unreachable":
        this.autostart.unreachable(this.#everConnected);
        break;
      case "protocol_mismatch":
        this.notifyOnce("protocol", `shepherd: ${problem.message}`, "error");
        break;
      case "session_taken":
        this.notifyOnce("taken", `shepherd: ${problem.message}; retrying`, "warning");
        break;
      case "replaced":
      case "error":
        break;
    }
    this.refreshStatusLine();
  }

  // ---- /shepherd -----------------------------------------------------------------------

  describe(): string {
    const c = this.client;
    const lines: string[] = [];
    const info = c.info;
    if (c.ready && info !== null) {
      lines.push(`shepherd: connected to ${c.socketPath} (core ${info.coreVersion}, pid ${info.corePid}, store ${info.storeId})`);
    } else {
      const attempts = c.failures === 1 ? "1 failed attempt" : `${c.failures} failed attempts`;
      lines.push(`shepherd: not connected (${c.phase}) — core socket ${c.socketPath}${c.failures > 0 ? `, ${attempts}` : ""}`);
    }
    const sm = this.ctx.sessionManager;
    const name = c.session?.name ?? this.#pi.getSessionName() ?? "(no name)";
    lines.push(`session: ${sm.getSessionId()} "${name}", role ${this.roles.label}, status ${this.#status}`);
    const worker = this.workers.describe();
    if (worker !== null) lines.push(`this session is a ${worker}`);
    if (this.openAsks.size === 0) {
      lines.push("open asks: none");
    } else {
      lines.push(`open asks (${this.openAsks.size}):`);
      for (const ask of this.openAsks.values()) {
        const options = ask.options.length > 0 ? ` [${ask.options.join(" / ")}]` : "";
        lines.push(`  #${ask.id} ${ask.question}${options}`);
      }
    }
    lines.push(`supervision: ${this.supervision.statusText()}`);
    lines.push(`results: ${this.resultsMode ?? "the core's setting (core.results)"}`);
    const inbox = this.inbox.snapshot();
    lines.push(`deliveries: ${inbox.handled} handled, ${inbox.pending} waiting, ${inbox.sent + inbox.landed} awaiting ack`);
    if (!c.ready && this.autostart.failure !== null) lines.push(this.autostart.failure);
    lines.push(`last error: ${this.#lastError ?? c.lastError ?? "none"}`);
    return lines.join("\n");
  }
}
