// The outbox against a fake session and core: what is queued while the core is away is kept
// in the session's entries (so /reload and resume find it), sent in order once the
// connection is back, each exactly once (a resend after a lost reply carries the same key,
// which the fake core dedupes as the real one does), and a refusal is recorded, not retried.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  newKey,
  Outbox,
  OUTBOX_ENTRY,
  outboxRecordOf,
  type OutboxHost,
  type OutboxItem,
  type OutboxRecord,
  type SendOutcome,
} from "../outbox.ts";
import type { Ask, Report } from "../wire.ts";

/** A session's entries plus a core that stores keyed asks and reports once. */
class FakeSession implements OutboxHost {
  entries_: unknown[] = [];
  connected = false;
  /** Lose the reply of the next send (the request reached the core, the answer did not). */
  loseNextReply = false;
  refuse: string | null = null;
  readonly coreAsks = new Map<string, number>();
  readonly coreReports = new Map<string, number>();
  readonly sends: string[] = [];
  readonly outcomes: Array<{ key: string; outcome: { id: number } | { refused: string } }> = [];
  #nextId = 1;

  entries(): readonly unknown[] {
    return this.entries_;
  }
  appendEntry(customType: typeof OUTBOX_ENTRY, data: OutboxRecord): void {
    this.entries_.push({ type: "custom", customType, data, id: `e${this.entries_.length}`, parentId: null });
  }
  #store(map: Map<string, number>, key: string): SendOutcome<number> {
    this.sends.push(key);
    if (!this.connected) return { notConnected: "not connected to the shepherd core" };
    if (this.refuse !== null) return { refused: this.refuse };
    const id = map.get(key) ?? this.#nextId++;
    map.set(key, id);
    if (this.loseNextReply) {
      this.loseNextReply = false;
      this.connected = false;
      return { notConnected: "the connection to the shepherd core closed" };
    }
    return { sent: id };
  }
  async sendAsk(item: Extract<OutboxItem, { kind: "ask" }>): Promise<SendOutcome<Ask>> {
    const r = this.#store(this.coreAsks, item.key);
    return "sent" in r ? { sent: { id: r.sent } as Ask } : r;
  }
  async sendReport(item: Extract<OutboxItem, { kind: "report" }>): Promise<SendOutcome<Report>> {
    const r = this.#store(this.coreReports, item.key);
    return "sent" in r ? { sent: { id: r.sent } as Report } : r;
  }
  delivered(item: OutboxItem, outcome: { id: number } | { refused: string }): void {
    this.outcomes.push({ key: item.key, outcome });
  }
  log(): void {}
}

const ask = (question: string): OutboxItem => ({
  kind: "ask",
  key: newKey("ask"),
  question,
  options: ["yes", "no"],
  details: null,
  queuedAt: 1,
});
const report = (text: string): OutboxItem => ({ kind: "report", key: newKey("report"), text, queuedAt: 2 });

describe("outbox", () => {
  test("queued while away, sent in order once back, each once", async () => {
    const s = new FakeSession();
    const box = new Outbox(s);
    const a = ask("Deploy?");
    const r = report("tests pass");
    box.enqueue(a);
    box.enqueue(r);
    box.enqueue(a); // the same key twice is one item
    await box.flush();
    assert.equal(box.pending.length, 2, "still away: nothing leaves");
    s.connected = true;
    await box.flush();
    assert.deepEqual(box.pending, []);
    assert.deepEqual([...s.coreAsks.keys()], [a.key]);
    assert.deepEqual([...s.coreReports.keys()], [r.key]);
    assert.deepEqual(
      s.outcomes.map((o) => o.key),
      [a.key, r.key],
    );
    await box.flush();
    assert.equal(s.sends.filter((k) => k === a.key).length, 2, "one refused while away, one sent");
  });

  test("a lost reply is resent with its key and the core keeps one", async () => {
    const s = new FakeSession();
    const box = new Outbox(s);
    const a = ask("Merge?");
    box.enqueue(a);
    s.connected = true;
    s.loseNextReply = true;
    await box.flush();
    assert.equal(box.pending.length, 1, "no reply: it stays queued");
    assert.equal(s.coreAsks.size, 1, "but the core has it");
    s.connected = true;
    await box.flush();
    assert.deepEqual(box.pending, []);
    assert.equal(s.coreAsks.size, 1, "the resend made no second ask");
    assert.deepEqual(s.outcomes, [{ key: a.key, outcome: { id: s.coreAsks.get(a.key) } }]);
  });

  test("the queue survives /reload: rebuilt from the session's entries", async () => {
    const s = new FakeSession();
    const first = new Outbox(s);
    const a = ask("One?");
    const b = ask("Two?");
    first.enqueue(a);
    first.enqueue(b);
    s.connected = true;
    s.loseNextReply = false;
    // Only the first gets out before the extension reloads.
    const sendAsk = s.sendAsk.bind(s);
    let calls = 0;
    s.sendAsk = async (item) => (++calls === 1 ? sendAsk(item) : { notConnected: "reloading" });
    await first.flush();
    s.sendAsk = sendAsk;
    const second = new Outbox(s);
    second.restore();
    assert.deepEqual(
      second.pending.map((i) => i.key),
      [b.key],
    );
    await second.flush();
    assert.deepEqual([...s.coreAsks.keys()], [a.key, b.key]);
    const third = new Outbox(s);
    third.restore();
    assert.deepEqual(third.pending, [], "nothing left after everything was sent");
  });

  test("a refusal is recorded and not retried", async () => {
    const s = new FakeSession();
    const box = new Outbox(s);
    const a = ask("Too many?");
    box.enqueue(a);
    s.connected = true;
    s.refuse = "this session already has 16 open asks";
    await box.flush();
    assert.deepEqual(box.pending, []);
    assert.deepEqual(s.outcomes, [{ key: a.key, outcome: { refused: "this session already has 16 open asks" } }]);
    const again = new Outbox(s);
    again.restore();
    assert.deepEqual(again.pending, []);
  });

  test("an ask_supervisor keeps its flag through the session (so it is sent as ask_supervisor)", () => {
    const item: OutboxItem = { kind: "ask", key: newKey("ask"), question: "Rebase?", options: [], details: null, queuedAt: 3, supervisor: true };
    const entry = { type: "custom", customType: OUTBOX_ENTRY, data: { op: "queued", item } };
    assert.deepEqual(outboxRecordOf(JSON.parse(JSON.stringify(entry))), { op: "queued", item });
    const plain = { type: "custom", customType: OUTBOX_ENTRY, data: { op: "queued", item: ask("Deploy?") } };
    const read = outboxRecordOf(plain);
    assert.ok(read !== null && read.op === "queued" && read.item.kind === "ask");
    assert.equal("supervisor" in read.item, false);
  });

  test("entries that are not the outbox's are ignored", () => {
    assert.equal(outboxRecordOf({ type: "custom", customType: "other", data: { op: "queued" } }), null);
    assert.equal(outboxRecordOf({ type: "custom", customType: OUTBOX_ENTRY, data: { op: "queued", item: {} } }), null);
    assert.equal(outboxRecordOf(null), null);
    assert.match(newKey("ask"), /^ask:[0-9a-f-]{36}$/);
  });
});
