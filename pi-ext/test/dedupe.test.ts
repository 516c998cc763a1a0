// The delivery ledger: which session entries count as handled deliveries, per store, and
// how it follows a session file that only grows.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { DELIVERY_CUSTOM_TYPE, DeliveryLedger, deliveryKeyOf } from "../dedupe.ts";

function deliveryEntry(storeId: string, id: number): Record<string, unknown> {
  return {
    type: "custom_message",
    id: `e${id}`,
    parentId: null,
    timestamp: "2026-12-02T10:00:00.000Z",
    customType: DELIVERY_CUSTOM_TYPE,
    content: `[shepherd] Steer from the human (via cli):\nmessage ${id}`,
    display: true,
    details: { store_id: storeId, id, kind: "steer", from: { kind: "cli", session_id: null, name: "cli" } },
  };
}

const userMessage = { type: "message", id: "u1", parentId: null, message: { role: "user", content: "hi" } };

describe("deliveryKeyOf", () => {
  test("reads store id and delivery id from our custom messages", () => {
    assert.deepEqual(deliveryKeyOf(deliveryEntry("s1", 41)), { storeId: "s1", id: 41 });
  });

  test("ignores everything else", () => {
    const ours = deliveryEntry("s1", 41);
    const cases: unknown[] = [
      null,
      "custom_message",
      userMessage,
      { ...ours, customType: "other-extension" },
      { ...ours, type: "custom" }, // an appendEntry record, not a message the model saw
      { ...ours, details: undefined },
      { ...ours, details: { store_id: "s1" } },
      { ...ours, details: { store_id: 5, id: 41 } },
      { ...ours, details: { store_id: "s1", id: "41" } },
      { ...ours, details: { store_id: "s1", id: -1 } },
      { ...ours, details: { store_id: "s1", id: 4.5 } },
      { ...ours, details: [1, 2] },
    ];
    for (const c of cases) assert.equal(deliveryKeyOf(c), null, JSON.stringify(c));
  });
});

describe("DeliveryLedger", () => {
  test("restores handled ids from the session entries, keyed by store", () => {
    const ledger = new DeliveryLedger();
    const found = ledger.scan([userMessage, deliveryEntry("s1", 1), deliveryEntry("s1", 2), deliveryEntry("s2", 1)]);
    assert.equal(found.length, 3);
    assert.ok(ledger.has("s1", 1));
    assert.ok(ledger.has("s1", 2));
    assert.ok(ledger.has("s2", 1));
    assert.ok(!ledger.has("s2", 2), "the same id from another store is a different delivery");
    assert.ok(!ledger.has("s1", 3));
    assert.equal(ledger.count(), 3);
    assert.equal(ledger.count("s1"), 2);
  });

  test("scans only entries appended since the last scan", () => {
    const ledger = new DeliveryLedger();
    const entries: unknown[] = [deliveryEntry("s1", 1)];
    assert.equal(ledger.scan(entries).length, 1);
    assert.deepEqual(ledger.scan(entries), [], "nothing new");
    entries.push(userMessage, deliveryEntry("s1", 2));
    assert.deepEqual(ledger.scan(entries), [{ storeId: "s1", id: 2 }]);
    assert.ok(ledger.has("s1", 1) && ledger.has("s1", 2));
  });

  test("a shorter entry list (another session) is scanned from the start", () => {
    const ledger = new DeliveryLedger();
    ledger.scan([userMessage, userMessage, deliveryEntry("s1", 1)]);
    assert.deepEqual(ledger.scan([deliveryEntry("s1", 9)]), [{ storeId: "s1", id: 9 }]);
  });

  test("duplicates in the file (a doubled delivery) are one handled id", () => {
    const ledger = new DeliveryLedger();
    ledger.scan([deliveryEntry("s1", 1), deliveryEntry("s1", 1)]);
    assert.equal(ledger.count(), 1);
  });
});
