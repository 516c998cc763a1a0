// What the session said while the core was away: `ask_human`, `ask_supervisor` and `report`
// calls made while the extension is not connected (the core starting or restarting) are queued here and sent
// when the connection is back, each exactly once. Pi-free: session.ts supplies an OutboxHost
// over the real ExtensionAPI and CoreClient, tests a fake.
//
// Durable: each queued item is a custom entry in the session (pi.appendEntry, kind "queued"),
// and so is its outcome ("sent" with the core's id, or "refused" with why), so /reload and a
// resumed session rebuild the queue from the session's entries. Exactly once: every item
// carries an idempotency key (chosen when the tool was called, so a direct send that lost its
// reply is queued under the same key) that the core stores with a UNIQUE index: a resend
// after a lost reply, or after a crash between the reply and the "sent" entry, gets the first
// ask or report back instead of making a second one.

import { randomUUID } from "node:crypto";

import type { Ask, Report } from "./wire.ts";

export const OUTBOX_ENTRY = "shepherd-outbox";

/** `supervisor`: an `ask_supervisor` (addressed by the core when sent), else an `ask_human`. */
export type OutboxItem =
  | { kind: "ask"; key: string; question: string; options: string[]; details: string | null; queuedAt: number; supervisor?: true }
  | { kind: "report"; key: string; text: string; queuedAt: number };

/** What an outbox entry's `data` holds. */
export type OutboxRecord =
  | { op: "queued"; item: OutboxItem }
  | { op: "sent"; key: string; id: number }
  | { op: "refused"; key: string; why: string };

/** The outcome of sending one item. */
export type SendOutcome<T> = { sent: T } | { notConnected: string } | { refused: string };

export interface OutboxHost {
  /** The session's entries (ctx.sessionManager.getEntries()). */
  entries(): readonly unknown[];
  /** pi.appendEntry(OUTBOX_ENTRY, data). */
  appendEntry(customType: typeof OUTBOX_ENTRY, data: OutboxRecord): void;
  sendAsk(item: Extract<OutboxItem, { kind: "ask" }>): Promise<SendOutcome<Ask>>;
  sendReport(item: Extract<OutboxItem, { kind: "report" }>): Promise<SendOutcome<Report>>;
  /** A queued item reached the core (`id`: the ask's or report's) or was refused. */
  delivered(item: OutboxItem, outcome: { id: number } | { refused: string }): void;
  log(line: string): void;
}

/** A fresh idempotency key. */
export function newKey(kind: OutboxItem["kind"]): string {
  return `${kind}:${randomUUID()}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The outbox record an entry holds, if it is one. */
export function outboxRecordOf(entry: unknown): OutboxRecord | null {
  if (!isRecord(entry) || entry["type"] !== "custom" || entry["customType"] !== OUTBOX_ENTRY) return null;
  const data = entry["data"];
  if (!isRecord(data)) return null;
  switch (data["op"]) {
    case "queued": {
      const item = data["item"];
      if (!isRecord(item) || typeof item["key"] !== "string") return null;
      if (item["kind"] === "ask" && typeof item["question"] === "string") {
        const options = Array.isArray(item["options"]) ? item["options"].filter((o) => typeof o === "string") : [];
        const details = typeof item["details"] === "string" ? item["details"] : null;
        const queuedAt = typeof item["queuedAt"] === "number" ? item["queuedAt"] : 0;
        const supervisor = item["supervisor"] === true ? { supervisor: true as const } : {};
        return { op: "queued", item: { kind: "ask", key: item["key"], question: item["question"], options, details, queuedAt, ...supervisor } };
      }
      if (item["kind"] === "report" && typeof item["text"] === "string") {
        const queuedAt = typeof item["queuedAt"] === "number" ? item["queuedAt"] : 0;
        return { op: "queued", item: { kind: "report", key: item["key"], text: item["text"], queuedAt } };
      }
      return null;
    }
    case "sent":
      return typeof data["key"] === "string" && typeof data["id"] === "number"
        ? { op: "sent", key: data["key"], id: data["id"] }
        : null;
    case "refused":
      return typeof data["key"] === "string" ? { op: "refused", key: data["key"], why: String(data["why"] ?? "") } : null;
    default:
      return null;
  }
}

export class Outbox {
  readonly #host: OutboxHost;
  #pending: OutboxItem[] = [];
  #flushing: Promise<void> | null = null;

  constructor(host: OutboxHost) {
    this.#host = host;
  }

  /** What is still to be sent, oldest first. */
  get pending(): readonly OutboxItem[] {
    return this.#pending;
  }

  /** Rebuild the queue from the session's entries (start, /reload, resume). */
  restore(): void {
    const queued = new Map<string, OutboxItem>();
    for (const entry of this.#host.entries()) {
      const r = outboxRecordOf(entry);
      if (r === null) continue;
      if (r.op === "queued") queued.set(r.item.key, r.item);
      else queued.delete(r.key);
    }
    this.#pending = [...queued.values()];
    if (this.#pending.length > 0) this.#host.log(`outbox: ${this.#pending.length} queued from before`);
  }

  /** Queue an item (persisted first). */
  enqueue(item: OutboxItem): void {
    if (this.#pending.some((p) => p.key === item.key)) return;
    this.#host.appendEntry(OUTBOX_ENTRY, { op: "queued", item });
    this.#pending.push(item);
    this.#host.log(`outbox: queued ${item.kind} ${item.key}`);
  }

  /** Send what is queued, in order, until done or the connection is gone again. */
  flush(): Promise<void> {
    if (this.#flushing === null) {
      this.#flushing = this.#flush().finally(() => {
        this.#flushing = null;
      });
    }
    return this.#flushing;
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const item = this.#pending[0] as OutboxItem;
      const outcome: SendOutcome<Ask | Report> =
        item.kind === "ask" ? await this.#host.sendAsk(item) : await this.#host.sendReport(item);
      if ("notConnected" in outcome) {
        this.#host.log(`outbox: ${item.kind} ${item.key} waits (${outcome.notConnected})`);
        return;
      }
      this.#pending.shift();
      if ("sent" in outcome) {
        this.#host.appendEntry(OUTBOX_ENTRY, { op: "sent", key: item.key, id: outcome.sent.id });
        this.#host.log(`outbox: ${item.kind} ${item.key} sent as #${outcome.sent.id}`);
        this.#host.delivered(item, { id: outcome.sent.id });
      } else {
        this.#host.appendEntry(OUTBOX_ENTRY, { op: "refused", key: item.key, why: outcome.refused });
        this.#host.log(`outbox: ${item.kind} ${item.key} refused: ${outcome.refused}`);
        this.#host.delivered(item, { refused: outcome.refused });
      }
    }
  }
}
