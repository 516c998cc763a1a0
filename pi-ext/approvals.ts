// Tool-call approvals: Pi's `tool_call` hook hands every call to ApprovalGate.check before it
// runs. The core rules it by its `[approvals]` policy (request_approval): `allow` lets it run,
// `deny` blocks it with the rule as the reason, `pending` holds it until the approval is
// decided (an `approval_changed` for it, or, after a reconnect, the same request again, which
// finds the same approval: the call is asked about once). A denial's reason is what the model
// reads. The run being stopped (/stop, Esc) while a call waits withdraws the approval. When
// the core cannot be reached, the summary the core leaves beside its socket (approvals.json:
// whether a policy is on, and `when_unreachable`) decides: with a policy on, the call is
// blocked saying why (fail closed) unless it says `allow`; with none ever written, nothing
// changes. Nothing here throws into Pi.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

import { CoreError } from "./client.ts";
import { errorText } from "./tool-glue.ts";
import type { Approval, Json, Ruling } from "./wire.ts";

/** What the gate needs of the core. */
export interface ApprovalCore {
  requestApproval(tool: string, input: Json, toolCallId: string): Promise<{ ruling: Ruling; rule: string; approval: Approval | null }>;
  withdrawApproval(approval: number): Promise<Approval>;
}

/** The core's approvals.json: whether a policy is on, and what an unreachable core means. */
export interface Summary {
  active: boolean;
  whenUnreachable: "allow" | "deny";
}

/** How many decisions that came before their call waited are kept. */
const EARLY_KEPT = 64;

/** What Pi's tool_call hook returns: nothing (the call runs) or a block with its reason. */
export type Gate = undefined | { block: true; reason: string };

/** Read the summary beside `socketPath`: null when there is none (no policy was ever set). */
export function readSummary(socketPath: string, read: (path: string) => string = (p) => readFileSync(p, "utf8")): Summary | null {
  let text: string;
  try {
    text = read(join(dirname(socketPath), "approvals.json"));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    return { active: true, whenUnreachable: "deny" };
  }
  try {
    const v = JSON.parse(text) as { active?: unknown; when_unreachable?: unknown };
    return { active: v.active !== false, whenUnreachable: v.when_unreachable === "allow" ? "allow" : "deny" };
  } catch {
    return { active: true, whenUnreachable: "deny" };
  }
}

interface Waiting {
  tool: string;
  input: Json;
  toolCallId: string;
  settle: (approval: Approval) => void;
}

export class ApprovalGate {
  readonly #core: ApprovalCore;
  readonly #summary: () => Summary | null;
  readonly #log: (line: string) => void;
  readonly #waiting = new Map<number, Waiting>();
  /**
   * Decisions that came before their call was waiting: the response holding the call and
   * the decision can arrive in one read, the decision dispatched before the call starts
   * to wait. The newest few are kept.
   */
  readonly #early = new Map<number, Approval>();

  constructor(core: ApprovalCore, summary: () => Summary | null, log: (line: string) => void) {
    this.#core = core;
    this.#summary = summary;
    this.#log = log;
  }

  /** How many calls wait for a decision now. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Rule one tool call; resolves when it may run (undefined) or is blocked (its reason). */
  async check(tool: string, toolCallId: string, input: Json, signal?: AbortSignal): Promise<Gate> {
    let ruled: { ruling: Ruling; rule: string; approval: Approval | null };
    try {
      ruled = await this.#core.requestApproval(tool, input, toolCallId);
    } catch (e) {
      return this.#unreachable(e);
    }
    if (ruled.ruling === "allow") return undefined;
    if (ruled.ruling === "deny") return block(ruled.approval === null ? byPolicy(ruled.rule) : ended(ruled.approval));
    const approval = ruled.approval;
    if (approval === null) return block(`shepherd held this call but named no approval (${ruled.rule}); it did not run`);
    this.#log(`approval ${approval.id}: ${tool} waits (${ruled.rule})`);
    const decided = await this.#wait(approval, tool, input, toolCallId, signal);
    this.#log(`approval ${approval.id}: ${decided.state}${decided.decided_by === undefined ? "" : ` by ${decided.decided_by}`}`);
    return decided.state === "allowed" ? undefined : block(ended(decided));
  }

  /** An `approval_changed` from the core: a waiting call's decision. */
  decided(approval: Approval): void {
    if (approval.state === "pending") return;
    const waiting = this.#waiting.get(approval.id);
    if (waiting !== undefined) {
      waiting.settle(approval);
      return;
    }
    this.#early.set(approval.id, approval);
    if (this.#early.size > EARLY_KEPT) {
      const oldest = this.#early.keys().next().value;
      if (oldest !== undefined) this.#early.delete(oldest);
    }
  }

  /** Registered again: ask about each waiting call once more (its decision may have come while away). */
  async reattach(): Promise<void> {
    for (const [id, w] of [...this.#waiting]) {
      try {
        const ruled = await this.#core.requestApproval(w.tool, w.input, w.toolCallId);
        if (ruled.approval !== null && ruled.approval.id === id) this.decided(ruled.approval);
      } catch (e) {
        this.#log(`approval ${id}: could not ask again after reconnecting: ${errorText(e)}`);
      }
    }
  }

  #wait(approval: Approval, tool: string, input: Json, toolCallId: string, signal?: AbortSignal): Promise<Approval> {
    return new Promise<Approval>((resolve) => {
      const done = (a: Approval) => {
        this.#waiting.delete(approval.id);
        signal?.removeEventListener("abort", onAbort);
        resolve(a);
      };
      const onAbort = () => {
        this.#core.withdrawApproval(approval.id).then(done, (e: unknown) => {
          this.#log(`approval ${approval.id}: withdrawing failed: ${errorText(e)}`);
          done({ ...approval, state: "withdrawn", decided_by: "withdrawn: the run was stopped" });
        });
      };
      this.#waiting.set(approval.id, { tool, input, toolCallId, settle: done });
      const early = this.#early.get(approval.id);
      if (early !== undefined) {
        this.#early.delete(approval.id);
        done(early);
        return;
      }
      if (signal?.aborted === true) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** The core could not rule the call: its summary decides (fail closed when a policy is on). */
  #unreachable(e: unknown): Gate {
    const summary = this.#summary();
    if (summary === null || !summary.active || summary.whenUnreachable === "allow") return undefined;
    const why = e instanceof CoreError ? `it refused: ${e.message}` : errorText(e);
    return block(
      `Blocked: shepherd's approval policy is on and the shepherd core could not rule on this call (${why}). ` +
        "It did not run; retry it once shepherd is back (`shepherd status`).",
    );
  }
}

function block(reason: string): Gate {
  return { block: true, reason };
}

/** A call the policy denies outright. */
function byPolicy(rule: string): string {
  return `Blocked by shepherd's approval policy (${rule}). The call did not run; do another thing or ask the human.`;
}

/** A held call that was not allowed: denied (with the human's reason) or withdrawn. */
function ended(a: Approval): string {
  if (a.state === "withdrawn") return `The approval was withdrawn (${a.decided_by ?? "no longer waiting"}); the call did not run.`;
  const by = a.decided_by ?? "the human";
  const reason = a.reason === undefined ? "" : `: ${a.reason}`;
  return `Denied by ${by}${reason}. The call did not run.`;
}
