// This session's side of managed workers, Pi-free. A session the core launched as a worker
// (env SHEPHERD_LAUNCH: a one-time nonce it sends in `register.launch`) is bound by the core,
// which answers with its Worker record in `registered.worker`; this module keeps that record
// and applies what follows to the session's tools. A worker has `ask_owner` and reports to
// its owner only: it never has the tools that reach the human or the roles (ask_human, report,
// the edge and staff tools), and it has the owner tools (list_agents, delegate_agent, …) only
// when its record says `delegates` (its definition lists `agents`). Every other session is an
// owner: the owner tools, never `ask_owner`. It also holds the rule that `ask_owner` is the
// only tool call of its assistant message: the tool calls of the last assistant message are
// recorded at message_end (Pi emits it before any of that message's tools execute), and
// `ask_owner` checks them. session.ts supplies a WorkersHost over the real ExtensionAPI, tests
// a fake.
//
// The core also launches Leads for work assignments (project work) with a nonce and
// SHEPHERD_ASSIGNMENT=<id>. Such a session is not a worker: it keeps a Lead's tools (with the
// owner tools) from the start, the core answers with `registered.assignment` instead of a
// worker record, its footer says `lead · app@feat/a`, and (like a worker's result) its run
// results are kept when the core is away, since each is an update its Manager waits for. A
// launched session without SHEPHERD_ASSIGNMENT that the core binds as a Lead anyway gets back
// the tools it had before it was held to a worker's set while unbound.

import type { Assignment, Worker } from "./wire.ts";

/** Key of the footer status this module owns (`worker scout-1 · owner app`). */
export const WORKER_STATUS_KEY = "shepherd-worker";

/** The tools of an owner (every session but a leaf worker): registered active. */
export const OWNER_TOOLS: readonly string[] = [
  "list_agents",
  "delegate_agent",
  "continue_agent",
  "steer_agent",
  "interrupt_agent",
  "reply_agent",
  "close_agent",
  "inspect_agent",
  "read_agent_transcript",
  "approve_agent",
];

/** A worker's own tool: registered inactive, active only in a worker. */
export const WORKER_TOOLS: readonly string[] = ["ask_owner"];

/**
 * Tools a worker never has: it answers to its owner (ask_owner, its final answer), not to the
 * human or a role. Named here rather than taken from roles.ts (which takes OWNER_TOOLS from
 * here): ask_human, report, roles.ts's LEAD_TOOLS, STAFF_TOOLS and MANAGER_TOOLS (a test keeps them equal).
 */
export const NOT_FOR_WORKERS: readonly string[] = [
  "ask_human",
  "report",
  "message_supervisor",
  "ask_supervisor",
  "list_peers",
  "message_peer",
  "list_staff",
  "inspect_staff",
  "message_staff",
  "answer_staff",
  "delegate_project",
  "resume_work",
  "stop_lead",
  "integrate_branch",
];

/** The launch nonce from the environment (SHEPHERD_LAUNCH); null when unset or empty. */
export function launchFromEnv(env: NodeJS.ProcessEnv): string | null {
  const v = env["SHEPHERD_LAUNCH"];
  return v === undefined || v.trim() === "" ? null : v.trim();
}

/** SHEPHERD_ASSIGNMENT: set (to the assignment's id) when the core launched this session as an assignment's Lead. */
export function assignedLeadFromEnv(env: NodeJS.ProcessEnv): boolean {
  const v = env["SHEPHERD_ASSIGNMENT"];
  return v !== undefined && v.trim() !== "";
}

/** An owner's active tools: whatever it has, never `ask_owner`. */
export function ownerTools(active: readonly string[]): string[] {
  return active.filter((name) => !WORKER_TOOLS.includes(name));
}

/**
 * A worker's active tools, from what it has and what exists (`all`: Pi's `--tools` may have
 * filtered some out, and those cannot be activated): `ask_owner`, the owner tools only when
 * it delegates, never the human's or the roles' tools.
 */
export function workerTools(active: readonly string[], all: readonly string[], delegates: boolean): string[] {
  const keep = active.filter((name) => !NOT_FOR_WORKERS.includes(name) && (delegates || !OWNER_TOOLS.includes(name)));
  const add = [...WORKER_TOOLS, ...(delegates ? OWNER_TOOLS : [])].filter((name) => all.includes(name));
  return [...new Set([...keep, ...add])];
}

/** One tool call of an assistant message. */
export interface ToolCallRef {
  id: string;
  name: string;
}

/** The tool calls of a Pi message (`content` parts of type `toolCall`); none for other roles. */
export function toolCallsOf(message: { role: string; content?: unknown }): ToolCallRef[] {
  if (message.role !== "assistant" || !Array.isArray(message.content)) return [];
  const calls: ToolCallRef[] = [];
  for (const part of message.content as unknown[]) {
    if (typeof part !== "object" || part === null) continue;
    const p = part as { type?: unknown; id?: unknown; name?: unknown };
    if (p.type === "toolCall" && typeof p.id === "string" && typeof p.name === "string") calls.push({ id: p.id, name: p.name });
  }
  return calls;
}

/**
 * Whether the call `toolCallId` may ask the owner: it must be the only tool call of its
 * assistant message. Returns the other calls' names (empty: alone). A call not in `calls`
 * (the message was not seen) is not refused here; the core still checks everything else.
 */
export function otherToolCalls(calls: readonly ToolCallRef[], toolCallId: string): string[] {
  if (!calls.some((c) => c.id === toolCallId)) return [];
  return calls.filter((c) => c.id !== toolCallId).map((c) => c.name);
}

function sameTools(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

/** The Pi side of workers. */
export interface WorkersHost {
  /** pi.getActiveTools(). */
  activeTools(): string[];
  /** pi.setActiveTools(). */
  setActiveTools(names: string[]): void;
  /** The names of pi.getAllTools(): what exists in this session. */
  allTools(): string[];
  /** ctx.ui.setStatus(WORKER_STATUS_KEY, text); null clears it. */
  setFooter(text: string | null): void;
  log(line: string): void;
}

/** The footer of a worker: `worker scout-1 · owner app`; nothing for an owner. */
export function workerFooter(launch: string | null, record: Worker | null): string | null {
  if (launch === null) return null;
  return record === null ? "worker (not bound yet)" : `worker ${record.label} · owner ${record.owner_name}`;
}

/** The footer of an assigned Lead: `lead · app@feat/a`. */
export function assignmentFooter(a: Assignment): string {
  return `lead · ${a.project}@${a.branch}`;
}

export class Workers {
  readonly #host: WorkersHost;
  /** The launch nonce this process was started with (null: not launched as a worker). */
  readonly launch: string | null;
  #record: Worker | null = null;
  /** Set when the core bound this launched session as the Lead of a work assignment. */
  #assignment: Assignment | null = null;
  /** The active tools before start() held a launched session to a worker's set (an assigned Lead gets them back). */
  #beforeLaunch: string[] | null = null;
  /** The tool calls of the last assistant message (message_end). */
  #lastCalls: ToolCallRef[] = [];

  /** Launched as an assignment's Lead (SHEPHERD_ASSIGNMENT), before the core has said which. */
  readonly #assignedLead: boolean;

  constructor(host: WorkersHost, launch: string | null, assignedLead = false) {
    this.#host = host;
    this.launch = launch;
    this.#assignedLead = launch !== null && assignedLead;
  }

  /**
   * Launched by the core as a managed worker (it registers with the nonce, or not at all).
   * A session launched as an assignment's Lead (SHEPHERD_ASSIGNMENT, or the core's
   * `registered.assignment`) is not one.
   */
  get isWorker(): boolean {
    return this.launch !== null && !this.#assignedLead && this.#assignment === null;
  }

  /** Launched by the core (a worker, or an assignment's Lead): a result that found the core away is sent again. */
  get launched(): boolean {
    return this.launch !== null;
  }

  /** This session's work assignment, when the core bound it as an assignment's Lead. */
  get assignment(): Assignment | null {
    return this.#assignment;
  }

  /** This session's worker record, once the core bound it. */
  get record(): Worker | null {
    return this.#record;
  }

  /** `managed worker scout-1 (definition scout, owner "app")`, or null for an owner. */
  describe(): string | null {
    const a = this.#assignment;
    if (a !== null) return `Lead of the work assignment ${a.project}@${a.branch} (checkout ${a.checkout}, delegated by "${a.created_by}", ${a.state})`;
    if (!this.isWorker) return null;
    const r = this.#record;
    if (r === null) return "managed worker (not bound by the core yet)";
    return `managed worker ${r.label} (definition ${r.definition}, owner "${r.owner_name}", ${r.state}${r.delegates ? ", may delegate" : ""})`;
  }

  /**
   * At session start: the tools of a worker (until its record says whether it delegates, or
   * the core says it is an assignment's Lead) or an owner.
   */
  start(): void {
    if (this.isWorker) this.#beforeLaunch = this.#host.activeTools();
    this.#apply();
    if (this.isWorker) this.#host.setFooter(workerFooter(this.launch, this.#record));
    if (this.isWorker) this.#host.log("workers: launched as a managed worker; registering with the launch nonce");
    if (this.#assignedLead) {
      this.#host.setFooter("lead (assignment not bound yet)");
      this.#host.log("workers: launched as an assignment's Lead; registering with the launch nonce");
    }
  }

  /**
   * Registered (again): the core's record of this worker, absent for an owner; for a launched
   * session the core bound as an assignment's Lead, its assignment (and no worker record).
   */
  registered(worker: Worker | undefined, assignment?: Assignment): void {
    if (assignment !== undefined && this.launch !== null) {
      const first = this.#assignment === null;
      this.#assignment = assignment;
      this.#record = null;
      if (first) {
        this.#host.log(`workers: bound as the Lead of ${assignment.project}@${assignment.branch} (assignment ${assignment.id}); not a worker`);
        const before = this.#beforeLaunch ?? this.#host.activeTools();
        this.#beforeLaunch = null;
        const next = ownerTools(before);
        if (!sameTools(next, this.#host.activeTools())) this.#host.setActiveTools(next);
      } else {
        this.#apply();
      }
      this.#host.setFooter(assignmentFooter(assignment));
      return;
    }
    if (worker !== undefined) {
      this.#record = worker;
      this.#host.log(`workers: bound as worker ${worker.id} "${worker.label}" (${worker.definition}) of "${worker.owner_name}"`);
    } else if (this.#assignedLead) {
      this.#host.log("workers: launched as an assignment's Lead but the core sent no assignment");
    } else if (this.isWorker) {
      this.#host.log("workers: launched as a worker but the core sent neither a worker record nor an assignment");
    }
    this.#apply();
    if (this.isWorker) this.#host.setFooter(workerFooter(this.launch, this.#record));
  }

  /** message_end: remember an assistant message's tool calls (for ask_owner's rule). */
  message(message: { role: string; content?: unknown }): void {
    if (message.role === "assistant") this.#lastCalls = toolCallsOf(message);
  }

  /** The other tool calls made alongside `toolCallId` (empty: it is alone). */
  othersBeside(toolCallId: string): string[] {
    return otherToolCalls(this.#lastCalls, toolCallId);
  }

  #apply(): void {
    const active = this.#host.activeTools();
    const next = this.isWorker ? workerTools(active, this.#host.allTools(), this.#record?.delegates === true) : ownerTools(active);
    if (sameTools(next, active)) return;
    this.#host.setActiveTools(next);
  }
}
