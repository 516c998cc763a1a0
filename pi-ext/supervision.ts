// Where this session stands in supervision, and what follows from it in Pi. The core owns the
// pairings; this module only follows what it says (the `paired`, `unpaired`, `goal_set`,
// `verdict_accepted` … responses, `pairing_event`s and the pairings listed in `registered`)
// and applies it to the session: while it supervises, the verdict tools replace the writing
// tools (toolset.ts), a brief with the policy and goal is in the model's context (policy.ts),
// and the footer says `👁 watching <worker>`; a worker in an active pairing shows `👁 watched`.
// Leaving (the pairing ended, was stopped, or a `done` was accepted) restores the exact tool
// list from before. Pi-free: session.ts supplies a SupervisionHost over the real ExtensionAPI.

import { BRIEF_CUSTOM_TYPE } from "./dedupe.ts";
import { briefText, goalText, workerLabel, type Policy } from "./policy.ts";
import {
  latestSavedTools,
  SAVED_TOOLS_ENTRY,
  sameTools,
  supervisingTools,
  withoutSupervisorTools,
  type SavedTools,
} from "./toolset.ts";
import type { Pairing } from "./wire.ts";

/** Key of the footer status this module owns. */
export const SUPERVISE_STATUS_KEY = "shepherd-supervise";

/** What the extension's own brief carries in `details`. */
export interface PolicyBriefDetails {
  pairing_id: number;
  policy: true;
  source: string;
  reanchor: boolean;
}

export interface PolicyBriefMessage {
  customType: typeof BRIEF_CUSTOM_TYPE;
  content: string;
  display: true;
  details: PolicyBriefDetails;
}

/** The Pi side of supervision. */
export interface SupervisionHost {
  /** This session's id (the core's session id is Pi's). */
  sessionId(): string;
  /** pi.getActiveTools(). */
  activeTools(): string[];
  /** pi.setActiveTools(). */
  setActiveTools(names: string[]): void;
  /** Every session entry (for the saved tool list). */
  entries(): readonly unknown[];
  /** The entries in the model's context (for whether the brief is still there). */
  contextEntries(): readonly unknown[];
  /** pi.appendEntry(SAVED_TOOLS_ENTRY, data). */
  appendEntry(customType: string, data: SavedTools): void;
  /** pi.sendMessage(brief, {triggerTurn: false}): context that never starts a turn. */
  injectBrief(message: PolicyBriefMessage): void;
  /** ctx.ui.setStatus(SUPERVISE_STATUS_KEY, text); null clears it. */
  setFooter(text: string | null): void;
  /** The policy for this session's cwd. */
  policy(): Policy;
  notify(text: string, level: "info" | "warning"): void;
  log(line: string): void;
}

/** Where a pairing record came from. */
export type PairingSource =
  | "paired"
  | "unpaired"
  | "goal_set"
  | "look_requested"
  | "verdict_accepted"
  | "registered"
  | "list"
  | `event:${string}`;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether an entry is the extension's brief for pairing `id`. */
export function isPolicyBriefFor(entry: unknown, id: number): boolean {
  if (!isRecord(entry) || entry["type"] !== "custom_message" || entry["customType"] !== BRIEF_CUSTOM_TYPE) return false;
  const details = entry["details"];
  return isRecord(details) && details["policy"] === true && details["pairing_id"] === id;
}

function endedText(p: Pairing): string {
  const reason = p.end_reason ?? "ended";
  const by = p.ended_by === null ? "" : ` by ${p.ended_by}`;
  const evidence = p.evidence === null ? "" : `: ${p.evidence}`;
  return `${reason}${by}${evidence}`;
}

/** One line for a session that (re)connected into an active pairing. */
export function returnText(p: Pairing, me: string): string {
  if (p.supervisor_id === me) {
    const there = p.worker_connected ? "connected" : "not connected right now";
    return `shepherd: still supervising "${p.worker_name}" (pairing ${p.id}); the worker is ${there}`;
  }
  const there = p.supervisor_connected ? "connected" : "not connected right now";
  return `shepherd: still watched by "${p.supervisor_name}" (pairing ${p.id}); the supervisor is ${there}`;
}

export class Supervision {
  readonly #host: SupervisionHost;
  #supervising: Pairing | null = null;
  #watchedBy: Pairing | null = null;
  /** Pairings briefed by this process (the context check cannot see a brief Pi has queued). */
  readonly #briefed = new Set<number>();
  #footer: string | null = null;

  constructor(host: SupervisionHost) {
    this.#host = host;
  }

  /** The active pairing this session supervises. */
  get supervising(): Pairing | null {
    return this.#supervising;
  }

  /** The active pairing in which this session is the worker. */
  get watchedBy(): Pairing | null {
    return this.#watchedBy;
  }

  /**
   * At session start: a saved tool list means the session was supervising when it stopped,
   * so it stays read-only until the core says otherwise; without one the verdict tools are
   * made inactive.
   */
  start(): void {
    const saved = latestSavedTools(this.#host.entries());
    if (saved !== null && saved.saved !== null) {
      this.#apply(supervisingTools(saved.saved));
      this.#host.log(`supervision: resuming read-only (pairing ${saved.pairing_id} was active)`);
    } else {
      this.#apply(withoutSupervisorTools(this.#host.activeTools()));
    }
  }

  /** Any pairing record the core sent; records that do not involve this session are ignored. */
  observe(p: Pairing, source: PairingSource): void {
    const me = this.#host.sessionId();
    if (p.supervisor_id === me) {
      const current = this.#supervising;
      if (p.state === "active") {
        if (current !== null && current.id !== p.id) this.#leave(current, "replaced by a newer pairing");
        const fresh = source === "paired" || source === "event:started";
        this.#supervising = p;
        if (current?.id !== p.id) this.#enter(p, !fresh);
        this.#refreshFooter();
      } else if (current?.id === p.id) {
        this.#leave(p, endedText(p));
      }
    } else if (p.worker_id === me) {
      if (p.state === "active") {
        this.#watchedBy = p;
      } else if (this.#watchedBy?.id === p.id) {
        this.#watchedBy = null;
        this.#host.log(`supervision: no longer watched (pairing ${p.id} ${endedText(p)})`);
      }
      this.#refreshFooter();
    }
  }

  /**
   * The complete list of active pairings (from `registered` or `list_pairings`): a pairing
   * this session was in that is missing ended while it was away.
   */
  sync(pairings: readonly Pairing[], source: "registered" | "list"): void {
    const me = this.#host.sessionId();
    const active = pairings.filter((p) => p.state === "active" && (p.supervisor_id === me || p.worker_id === me));
    for (const p of active) this.observe(p, source);
    // On return, say where this session stands and whether the other side is there.
    if (source === "registered") for (const p of active) this.#host.notify(returnText(p, me), "info");
    const supervising = this.#supervising;
    if (supervising !== null && !active.some((p) => p.id === supervising.id && p.supervisor_id === me)) {
      this.#leave(supervising, "ended while this session was away");
    }
    const watched = this.#watchedBy;
    if (watched !== null && !active.some((p) => p.id === watched.id && p.worker_id === me)) {
      this.#watchedBy = null;
      this.#refreshFooter();
    }
    if (this.#supervising === null) this.#restoreTools(null);
  }

  /** After a compaction (or any time): put the brief back if the context lost it. */
  reanchor(): void {
    const p = this.#supervising;
    if (p === null) return;
    this.#briefed.delete(p.id);
    this.#brief(p, true);
  }

  /** The footer text this module shows, if any. */
  get footer(): string | null {
    return this.#footer;
  }

  /** For `/supervise status`. */
  statusText(): string {
    const s = this.#supervising;
    if (s !== null) {
      return [
        `supervising ${workerLabel(s)}: pairing ${s.id}, worker ${s.worker_connected ? "connected" : "not connected"}`,
        `goal: ${goalText(s)}`,
        `looks: ${s.looks}, steers: ${s.steers}`,
      ].join("\n");
    }
    const w = this.#watchedBy;
    if (w !== null) {
      return [
        `watched by "${w.supervisor_name}" (${w.supervisor_id.slice(0, 8)}): pairing ${w.id}, supervisor ${w.supervisor_connected ? "connected" : "not connected"}`,
        `goal: ${goalText(w)}`,
        `looks: ${w.looks}, steers: ${w.steers}`,
      ].join("\n");
    }
    return "not in a pairing (start one with /supervise [@session] [goal])";
  }

  // ---- transitions ---------------------------------------------------------------------

  #enter(p: Pairing, reanchor: boolean): void {
    this.#host.log(`supervision: supervising ${p.worker_name} (pairing ${p.id})`);
    const saved = latestSavedTools(this.#host.entries());
    let before: string[];
    if (saved !== null && saved.saved !== null) {
      before = saved.saved; // already saved by an earlier process: the list from before supervision
      if (saved.pairing_id !== p.id) this.#host.appendEntry(SAVED_TOOLS_ENTRY, { pairing_id: p.id, saved: before });
    } else {
      before = withoutSupervisorTools(this.#host.activeTools());
      this.#host.appendEntry(SAVED_TOOLS_ENTRY, { pairing_id: p.id, saved: before });
    }
    this.#apply(supervisingTools(before));
    this.#brief(p, reanchor);
  }

  #leave(p: Pairing, why: string): void {
    this.#supervising = null;
    this.#host.log(`supervision: stopped supervising ${p.worker_name} (pairing ${p.id}): ${why}`);
    this.#restoreTools(p.id);
    this.#refreshFooter();
    this.#host.notify(`shepherd: stopped supervising "${p.worker_name}" (${why})`, "info");
  }

  /** Put back the list saved when supervision started, and record that it is back. */
  #restoreTools(pairingId: number | null): void {
    const saved = latestSavedTools(this.#host.entries());
    if (saved === null || saved.saved === null) {
      this.#apply(withoutSupervisorTools(this.#host.activeTools()));
      return;
    }
    this.#apply(saved.saved);
    this.#host.appendEntry(SAVED_TOOLS_ENTRY, { pairing_id: pairingId ?? saved.pairing_id, saved: null });
    this.#host.log(`supervision: restored tools ${saved.saved.join(", ")}`);
  }

  #brief(p: Pairing, reanchor: boolean): void {
    if (this.#briefed.has(p.id)) return;
    if (this.#host.contextEntries().some((e) => isPolicyBriefFor(e, p.id))) {
      this.#briefed.add(p.id);
      return;
    }
    const policy = this.#host.policy();
    this.#briefed.add(p.id);
    this.#host.injectBrief({
      customType: BRIEF_CUSTOM_TYPE,
      content: briefText(p, policy, reanchor),
      display: true,
      details: { pairing_id: p.id, policy: true, source: policy.source, reanchor },
    });
  }

  #apply(names: string[]): void {
    const active = this.#host.activeTools();
    if (!sameTools(active, names)) this.#host.setActiveTools(names);
  }

  #refreshFooter(): void {
    let text: string | null = null;
    if (this.#supervising !== null) text = `👁 watching ${this.#supervising.worker_name}`;
    else if (this.#watchedBy !== null) text = "👁 watched";
    if (text === this.#footer) return;
    this.#footer = text;
    this.#host.setFooter(text);
  }
}

/**
 * The supervisor's plain-text question for the human, if its final message asks one: the
 * text of the last assistant message, when it finished normally, made no tool call, and has
 * a line ending with "?".
 */
export function questionForHuman(messages: readonly unknown[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isRecord(m) || m["role"] !== "assistant") continue;
    const stop = m["stopReason"];
    if (stop === "aborted" || stop === "error" || stop === "toolUse") return null;
    const content = m["content"];
    if (!Array.isArray(content)) return null;
    if (content.some((b) => isRecord(b) && b["type"] === "toolCall")) return null;
    const text = content
      .flatMap((b) => (isRecord(b) && b["type"] === "text" && typeof b["text"] === "string" ? [b["text"]] : []))
      .join("\n")
      .trim();
    if (text === "") return null;
    return text.split("\n").some((line) => line.trim().endsWith("?")) ? text : null;
  }
  return null;
}
