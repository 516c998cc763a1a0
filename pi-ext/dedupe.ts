// Which deliveries this session has already handed to the model, so a delivery the core sends
// again (after a reconnect, a core restart or a Pi restart) reaches the model once. Keyed by
// the core's store id: delivery ids are unique only within one store.
//
// The durable record is the delivered message itself. Every delivery enters the session as a
// Pi custom message ("shepherd-delivery"; a supervisor's views "shepherd-view" and briefs
// "shepherd-brief") whose `details` carry {store_id, id}; Pi
// writes the text the model sees and those details in ONE session-file line
// (appendFileSync). So "recorded as handled" and "in the model's context" cannot disagree:
//   - Pi dies before that line is written: not recorded, not acked; the core redelivers on
//     the next registration and it is injected then (nothing lost);
//   - Pi dies after it: recorded; the redelivery is dropped as a duplicate and acked
//     (nothing doubled).
// A separate pi.appendEntry marker could only be written before the message lands (a Pi
// crash in between loses the message) or after it (a crash in between doubles it), so none
// is written. The ledger is rebuilt from ctx.sessionManager.getEntries() (all branches: a
// delivery on an abandoned /tree branch was still handed to the model) and kept current by
// scanning entries appended since the last scan.

/** customType of the custom messages that carry steers, messages and answers. */
export const DELIVERY_CUSTOM_TYPE = "shepherd-delivery";
/** customType of a supervisor's views (the worker's progress; they start a turn). */
export const VIEW_CUSTOM_TYPE = "shepherd-view";
/** customType of a supervisor's briefs (context that never starts a turn). */
export const BRIEF_CUSTOM_TYPE = "shepherd-brief";
/** Every customType a delivery can enter the session as. */
export const DELIVERY_CUSTOM_TYPES: ReadonlySet<string> = new Set([DELIVERY_CUSTOM_TYPE, VIEW_CUSTOM_TYPE, BRIEF_CUSTOM_TYPE]);

/** A delivery's identity: unique within one core store. */
export interface DeliveryKey {
  storeId: string;
  id: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The delivery a session entry records, if it is one of ours: a `custom_message` entry of
 * one of DELIVERY_CUSTOM_TYPES whose details hold a string store_id and an integer id (the
 * extension's own briefs carry neither, so they are not deliveries).
 */
export function deliveryKeyOf(entry: unknown): DeliveryKey | null {
  if (!isRecord(entry) || entry["type"] !== "custom_message") return null;
  const customType = entry["customType"];
  if (typeof customType !== "string" || !DELIVERY_CUSTOM_TYPES.has(customType)) return null;
  const details = entry["details"];
  if (!isRecord(details)) return null;
  const storeId = details["store_id"];
  const id = details["id"];
  if (typeof storeId !== "string" || typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) return null;
  return { storeId, id };
}

/** The set of handled deliveries, per store, learned from session entries. */
export class DeliveryLedger {
  readonly #handled = new Map<string, Set<number>>();
  #scanned = 0;

  /**
   * Learn from session entries. Entries only ever get appended within one session, so only
   * the ones after the previous scan are read; a shorter list (another session) rescans.
   * Returns the keys found in this call.
   */
  scan(entries: readonly unknown[]): DeliveryKey[] {
    if (entries.length < this.#scanned) this.#scanned = 0;
    const found: DeliveryKey[] = [];
    for (let i = this.#scanned; i < entries.length; i++) {
      const key = deliveryKeyOf(entries[i]);
      if (key !== null) {
        this.add(key.storeId, key.id);
        found.push(key);
      }
    }
    this.#scanned = entries.length;
    return found;
  }

  add(storeId: string, id: number): void {
    let ids = this.#handled.get(storeId);
    if (ids === undefined) {
      ids = new Set();
      this.#handled.set(storeId, ids);
    }
    ids.add(id);
  }

  has(storeId: string, id: number): boolean {
    return this.#handled.get(storeId)?.has(id) ?? false;
  }

  /** Handled deliveries for one store (all stores when omitted). */
  count(storeId?: string): number {
    if (storeId !== undefined) return this.#handled.get(storeId)?.size ?? 0;
    let n = 0;
    for (const ids of this.#handled.values()) n += ids.size;
    return n;
  }
}
