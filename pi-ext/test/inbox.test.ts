// The inbox against a fake Pi: each delivery reaches the session once, by the right path
// (a new run when idle, a turn boundary when busy, no run after an abort; a supervisor's
// views start runs, its briefs and notices never do; role deliveries name their edge), and is
// acked only once it is in the session and on disk; duplicates are acked without a second
// copy.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BRIEF_CUSTOM_TYPE, DELIVERY_CUSTOM_TYPE, VIEW_CUSTOM_TYPE } from "../dedupe.ts";
import { deliveryContent, draftsWantTurn, formatDelivery, Inbox, type DeliveryMessage, type InboxHost } from "../inbox.ts";
import type { Delivery } from "../wire.ts";
import { delivery } from "./fake-core.ts";

/** A stand-in for Pi: sendMessage lands at once when idle, or waits in a queue when busy. */
class FakePi implements InboxHost {
  entries_: unknown[] = [];
  isIdle = true;
  isDurable = true;
  clock = 1000;
  sends: Array<{ message: DeliveryMessage; triggerTurn: boolean }> = [];
  acks: Array<{ storeId: string; ids: number[] }> = [];
  /** When false, send() loses the message (an interactive abort cleared Pi's queue). */
  landOnSend = true;

  entries(): readonly unknown[] {
    return this.entries_;
  }
  durable(): boolean {
    return this.isDurable;
  }
  idle(): boolean {
    return this.isIdle;
  }
  send(message: DeliveryMessage, triggerTurn: boolean): void {
    this.sends.push({ message, triggerTurn });
    if (this.landOnSend) this.land(message);
    if (triggerTurn) this.isIdle = false;
  }
  ack(storeId: string, ids: number[]): void {
    this.acks.push({ storeId, ids });
  }
  now(): number {
    return this.clock;
  }
  /** Pi persisting a custom message entry. */
  land(message: DeliveryMessage): void {
    this.entries_.push({ type: "custom_message", id: `e${this.entries_.length}`, parentId: null, ...message });
  }
  ackedIds(): number[] {
    return this.acks.flatMap((a) => a.ids);
  }
  landedIds(): number[] {
    return this.entries_.flatMap((e) =>
      typeof e === "object" && e !== null && "details" in e && typeof e.details === "object" && e.details !== null && "id" in e.details
        ? [Number(e.details.id)]
        : [],
    );
  }
}

describe("formatDelivery", () => {
  test("a steer names the human and the channel", () => {
    assert.equal(formatDelivery(delivery(1, "Run the tests first.")), "[shepherd] Steer from the human (via cli):\nRun the tests first.");
    assert.equal(
      formatDelivery(delivery(1, "ok", { from: { kind: "bridge", session_id: null, name: "telegram:@alice" } })),
      "[shepherd] Steer from the human (via telegram:@alice):\nok",
    );
  });

  test("an answer names the question it answers", () => {
    const d: Delivery = delivery(41, "squash", { kind: "answer", ask_id: 12, question: "Squash the commits before merging?" });
    assert.equal(
      formatDelivery(d),
      "[shepherd] Answer to your question #12, from the human (via cli):\nQuestion: Squash the commits before merging?\nAnswer: squash",
    );
  });

  test("a message names the sending session", () => {
    const d = delivery(2, "I pushed the fix", { kind: "message", from: { kind: "pi", session_id: "abc-123", name: "fix-login" } });
    assert.equal(formatDelivery(d), '[shepherd] Message from session "fix-login" (abc-123):\nI pushed the fix');
  });
});

describe("interrupts", () => {
  const ada = { kind: "bridge" as const, session_id: null, name: "telegram:@ada" };
  const interrupt = (id: number, text: string): Delivery => delivery(id, text, { kind: "interrupt", from: ada });

  test("the model reads that its run was stopped, and the steer when there is one", () => {
    assert.equal(
      formatDelivery(interrupt(1, "run the tests instead")),
      "[shepherd] the human (via telegram:@ada) stopped your run. Do this instead:\nrun the tests instead",
    );
    assert.equal(
      formatDelivery(interrupt(2, "")),
      "[shepherd] the human (via telegram:@ada) stopped your run. Wait for their next message.",
    );
  });

  test("busy: it skips the aborted run's boundaries, then its steer starts a turn after the abort", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    assert.equal(inbox.isNew("s1", 1), true);
    inbox.receive("s1", interrupt(1, "rebase first"));
    assert.equal(inbox.isNew("s1", 1), false, "waiting here: not new any more");
    assert.deepEqual(inbox.takeBoundaryDrafts(), [], "not at a boundary of the aborted run");
    pi.isIdle = true;
    inbox.runSettled(true);
    assert.deepEqual(pi.sends.map((x) => [x.message.details.kind, x.triggerTurn]), [["interrupt", true]]);
    assert.deepEqual(pi.ackedIds(), [1]);
    assert.equal(inbox.isNew("s1", 1), false, "in the session: a redelivery aborts nothing");
  });

  test("without a steer it only records the stop: no new run", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.receive("s1", interrupt(3, ""));
    assert.deepEqual(pi.sends.map((x) => [x.message.details.kind, x.triggerTurn]), [["interrupt", false]]);
    assert.equal(pi.isIdle, true);
    assert.deepEqual(pi.ackedIds(), [3]);
  });
});

describe("Inbox", () => {
  test("idle: starts a run with the delivery, acks once it is in the session", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    assert.equal(inbox.receive("s1", delivery(1, "hello")), "queued");
    assert.equal(pi.sends.length, 1);
    assert.equal(pi.sends[0]?.triggerTurn, true);
    assert.equal(pi.sends[0]?.message.customType, DELIVERY_CUSTOM_TYPE);
    assert.deepEqual(pi.sends[0]?.message.details.store_id, "s1");
    assert.deepEqual(pi.acks, [{ storeId: "s1", ids: [1] }]);
    assert.equal(inbox.unacked, 0);
  });

  test("a redelivery of a handled id is acked again and not injected", () => {
    const pi = new FakePi();
    const first = new Inbox(pi);
    first.receive("s1", delivery(1, "hello"));
    // A new process on the same session file (Pi restarted): the ledger comes from entries.
    const second = new Inbox(pi);
    second.restore();
    assert.equal(second.receive("s1", delivery(1, "hello")), "duplicate");
    assert.equal(pi.sends.length, 1, "not sent twice");
    assert.deepEqual(pi.landedIds(), [1]);
    assert.deepEqual(pi.ackedIds(), [1, 1], "acked again");
  });

  test("the same id from another store is a new delivery", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(1, "a"));
    pi.isIdle = true;
    assert.equal(inbox.receive("s2", delivery(1, "b")), "queued");
    assert.deepEqual(pi.acks, [
      { storeId: "s1", ids: [1] },
      { storeId: "s2", ids: [1] },
    ]);
  });

  test("busy: waits for the next turn boundary, in order, then acks", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(1, "one"));
    inbox.receive("s1", delivery(2, "two"));
    assert.equal(pi.sends.length, 0, "nothing goes to Pi's own queue");
    const drafts = inbox.takeBoundaryDrafts();
    assert.deepEqual(
      drafts.map((d) => [d.type, d.details.id]),
      [
        ["custom_message", 1],
        ["custom_message", 2],
      ],
    );
    assert.deepEqual(inbox.takeBoundaryDrafts(), [], "taken once");
    assert.deepEqual(pi.acks, [], "not acked before Pi appended them");
    for (const d of drafts) pi.land(d);
    inbox.reconcile();
    assert.deepEqual(pi.acks, [{ storeId: "s1", ids: [1, 2] }]);
  });

  test("a redelivery while the first copy is on its way is neither injected nor acked", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(1, "one"));
    const drafts = inbox.takeBoundaryDrafts();
    assert.equal(inbox.receive("s1", delivery(1, "one")), "already_queued");
    assert.deepEqual(inbox.takeBoundaryDrafts(), []);
    assert.deepEqual(pi.acks, []);
    for (const d of drafts) pi.land(d);
    assert.equal(inbox.receive("s1", delivery(1, "one")), "duplicate");
    assert.deepEqual(pi.ackedIds(), [1]);
    assert.deepEqual(pi.landedIds(), [1]);
  });

  test("idle with several waiting: the first starts the run, the rest join at its boundary", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(1, "one"));
    inbox.receive("s1", delivery(2, "two"));
    pi.isIdle = true;
    inbox.runSettled(false);
    assert.deepEqual(
      pi.sends.map((s) => [s.message.details.id, s.triggerTurn]),
      [[1, true]],
    );
    assert.deepEqual(
      inbox.takeBoundaryDrafts().map((d) => d.details.id),
      [2],
    );
  });

  test("after an aborted run, deliveries are appended without starting a run", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(1, "one"));
    inbox.receive("s1", delivery(2, "two"));
    pi.isIdle = true;
    inbox.runSettled(true);
    assert.deepEqual(
      pi.sends.map((s) => [s.message.details.id, s.triggerTurn]),
      [
        [1, false],
        [2, false],
      ],
    );
    assert.deepEqual(pi.ackedIds(), [1, 2]);
    inbox.runStarted();
    inbox.receive("s1", delivery(3, "three"));
    assert.equal(pi.sends.at(-1)?.triggerTurn, true, "a later run clears the hold");
  });

  test("after an aborted run (a runaway supervisor turn), a view still starts a turn", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.runSettled(true);
    inbox.receive("s1", delivery(1, "a steer for later"));
    inbox.receive("s1", delivery(2, "# Look 4", { kind: "view", pairing_id: 7, look: 4 }));
    assert.deepEqual(
      pi.sends.map((s) => [s.message.details.id, s.triggerTurn]),
      [
        [1, false],
        [2, true],
      ],
    );
  });

  test("no ack while the session file does not exist yet", () => {
    const pi = new FakePi();
    pi.isDurable = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(1, "one"));
    inbox.reconcile();
    assert.deepEqual(pi.acks, []);
    assert.equal(inbox.snapshot().landed, 1);
    assert.equal(inbox.receive("s1", delivery(1, "one")), "duplicate");
    assert.deepEqual(pi.acks, [], "a duplicate of a landed but unwritten delivery waits too");
    pi.isDurable = true;
    inbox.reconcile();
    assert.deepEqual(pi.acks, [{ storeId: "s1", ids: [1] }]);
    assert.equal(inbox.unacked, 0);
  });

  test("a delivery handed to Pi that never lands is sent again once Pi has been idle a while", () => {
    const pi = new FakePi();
    pi.landOnSend = false;
    const inbox = new Inbox(pi, { retryAfterMs: 5000 });
    inbox.receive("s1", delivery(1, "one"));
    assert.equal(pi.sends.length, 1);
    pi.isIdle = true; // the run never started
    pi.clock += 4000;
    inbox.reconcile();
    assert.equal(pi.sends.length, 1, "not before retryAfterMs");
    pi.clock += 1000;
    pi.landOnSend = true;
    inbox.reconcile();
    assert.equal(pi.sends.length, 2);
    assert.deepEqual(pi.landedIds(), [1]);
    assert.deepEqual(pi.ackedIds(), [1]);
  });

  test("nothing is sent again while Pi stays busy", () => {
    const pi = new FakePi();
    pi.landOnSend = false;
    const inbox = new Inbox(pi, { retryAfterMs: 10 });
    inbox.receive("s1", delivery(1, "one"));
    pi.isIdle = false;
    pi.clock += 60_000;
    inbox.reconcile();
    assert.equal(pi.sends.length, 1);
  });
});

describe("a supervisor's deliveries", () => {
  const supervisorFrom = { kind: "pi" as const, session_id: "0193a5c2-aaaa", name: "watch-login" };
  const view = (id: number, look: number): Delivery =>
    delivery(id, `## Worker fix-login — look ${look}\nassistant: tests pass`, { kind: "view", pairing_id: 7, look, from: { kind: "cli", session_id: null, name: "core" } });
  const brief = (id: number): Delivery => delivery(id, "Pairing 7 started. Goal: SSO works.", { kind: "brief", pairing_id: 7 });

  test("a view starts a run as a shepherd-view message carrying the pairing and look", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.receive("s1", view(5, 3));
    assert.equal(pi.sends.length, 1);
    const sent = pi.sends[0];
    assert.equal(sent?.triggerTurn, true);
    assert.equal(sent?.message.customType, VIEW_CUSTOM_TYPE);
    assert.equal(sent?.message.details.pairing_id, 7);
    assert.equal(sent?.message.details.look, 3);
    assert.equal(sent?.message.details.kind, "view");
    assert.match(String(sent?.message.content ?? ""), /^\[shepherd\] Look 3 at your worker[\s\S]*exactly one verdict tool[\s\S]*## Worker fix-login — look 3/);
    assert.deepEqual(pi.ackedIds(), [5]);
  });

  test("a brief never starts a run: appended at once when idle, added without continuing when busy", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.receive("s1", brief(1));
    assert.deepEqual(pi.sends.map((x) => [x.message.customType, x.triggerTurn]), [[BRIEF_CUSTOM_TYPE, false]]);
    assert.equal(pi.isIdle, true);
    assert.deepEqual(pi.ackedIds(), [1]);
    pi.isIdle = false;
    inbox.receive("s1", brief(2));
    const drafts = inbox.takeBoundaryDrafts();
    assert.deepEqual(drafts.map((d) => [d.customType, d.details.id]), [[BRIEF_CUSTOM_TYPE, 2]]);
    assert.equal(draftsWantTurn(drafts), false);
  });

  test("a brief then a view while idle: the brief is appended first, the view starts the run", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", brief(1));
    inbox.receive("s1", view(2, 1));
    inbox.receive("s1", brief(3));
    pi.isIdle = true;
    inbox.runSettled(false);
    assert.deepEqual(pi.sends.map((x) => [x.message.details.id, x.triggerTurn]), [
      [1, false],
      [2, true],
    ]);
    const drafts = inbox.takeBoundaryDrafts();
    assert.deepEqual(drafts.map((d) => d.details.id), [3]);
    assert.equal(draftsWantTurn(drafts), false);
  });

  test("at a boundary a view makes Pi continue", () => {
    const pi = new FakePi();
    pi.isIdle = false;
    const inbox = new Inbox(pi);
    inbox.receive("s1", brief(1));
    inbox.receive("s1", view(2, 4));
    assert.equal(draftsWantTurn(inbox.takeBoundaryDrafts()), true);
  });

  test("views and briefs are recognised after a restart and not shown twice", () => {
    const pi = new FakePi();
    const first = new Inbox(pi);
    first.receive("s1", brief(1));
    first.receive("s1", view(2, 1));
    const second = new Inbox(pi);
    second.restore();
    assert.equal(second.receive("s1", view(2, 1)), "duplicate");
    assert.equal(second.receive("s1", brief(1)), "duplicate");
    assert.equal(pi.sends.length, 2);
  });

  test("a steer from a supervisor still lands as a steer that starts a run", () => {
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(9, "Run the SSO tests before refactoring further.", { from: supervisorFrom, pairing_id: 7 }));
    assert.equal(pi.sends[0]?.triggerTurn, true);
    assert.equal(pi.sends[0]?.message.customType, DELIVERY_CUSTOM_TYPE);
    assert.equal(
      pi.sends[0]?.message.content,
      '[shepherd] Steer from session "watch-login" (0193a5c2-aaaa):\nRun the SSO tests before refactoring further.',
    );
  });
});

describe("role deliveries", () => {
  const lead = { kind: "pi" as const, session_id: "lead-1", name: "fix-login" };
  const manager = { kind: "pi" as const, session_id: "mgr-1", name: "app" };

  test("an ask addressed to this session's role says how to answer it", () => {
    const d = delivery(54, "fix-login (lead-1) asks you (ask 12): Rebase on main or merge?", {
      kind: "ask",
      from: lead,
      ask_id: 12,
      question: "Rebase on main or merge?",
    });
    assert.equal(
      formatDelivery(d),
      '[shepherd] Question #12 for you, as their supervisor, from session "fix-login" (lead-1). ' +
        "Decide and answer it with answer_staff {ask: 12, answer}:\nfix-login (lead-1) asks you (ask 12): Rebase on main or merge?",
    );
  });

  test("an answer from the role an ask_supervisor went to names that supervisor", () => {
    const d = delivery(60, "rebase", {
      kind: "answer",
      from: { kind: "pi", session_id: "mgr-1", name: "manager of app app-mgr" },
      ask_id: 12,
      question: "Rebase or merge?",
    });
    assert.equal(
      formatDelivery(d),
      '[shepherd] Answer to your question #12, from your supervisor, the manager of app app-mgr (mgr-1):\nQuestion: Rebase or merge?\nAnswer: rebase',
    );
  });

  test("supervisor, staff and peer messages name their edge and sender", () => {
    assert.match(
      formatDelivery(delivery(1, "tests need a db", { kind: "supervisor_message", from: lead })),
      /^\[shepherd\] Message for you, as their supervisor, from session "fix-login" \(lead-1\).*message_staff.*\ntests need a db$/,
    );
    assert.equal(
      formatDelivery(delivery(2, "Stop after the tests pass.", { kind: "staff_message", from: manager })),
      '[shepherd] Steer from your supervisor, session "app" (mgr-1):\nStop after the tests pass.',
    );
    assert.match(
      formatDelivery(delivery(3, "hold off on migrations", { kind: "peer_message", from: lead })),
      /^\[shepherd\] Peer message from session "fix-login" \(lead-1\).*message_peer.*\nhold off on migrations$/,
    );
    assert.equal(
      formatDelivery(delivery(4, "Ask 12 from fix-login was answered by telegram:@ada: rebase", { kind: "notice" })),
      "[shepherd] Notice (information only, nothing to do):\nAsk 12 from fix-login was answered by telegram:@ada: rebase",
    );
  });

  test("asks and edge messages start a turn; a notice never does", () => {
    for (const kind of ["ask", "supervisor_message", "staff_message", "peer_message"] as const) {
      const pi = new FakePi();
      new Inbox(pi).receive("s1", delivery(1, "x", { kind, from: lead }));
      assert.deepEqual(pi.sends.map((x) => x.triggerTurn), [true], kind);
    }
    const pi = new FakePi();
    const inbox = new Inbox(pi);
    inbox.receive("s1", delivery(5, "answered elsewhere", { kind: "notice" }));
    assert.deepEqual(pi.sends.map((x) => [x.message.details.kind, x.triggerTurn]), [["notice", false]]);
    assert.equal(pi.isIdle, true);
    assert.deepEqual(pi.ackedIds(), [5]);
    pi.isIdle = false;
    inbox.receive("s1", delivery(6, "another", { kind: "notice" }));
    const drafts = inbox.takeBoundaryDrafts();
    assert.equal(drafts.length, 1);
    assert.equal(draftsWantTurn(drafts), false, "a notice at a boundary does not make Pi continue");
  });
});

describe("a photo from the phone", () => {
  test("reaches the model as an image part read from its saved file, after the text", () => {
    const d = delivery(7, "see this", { images: [{ path: "/p/.shepherd/inbox/shot.png", mime: "image/png" }] });
    const read = (path: string): Buffer => {
      assert.equal(path, "/p/.shepherd/inbox/shot.png");
      return Buffer.from([0x89, 0x50, 0x4e, 0x47]);
    };
    assert.deepEqual(deliveryContent(d, "text", read), [
      { type: "text", text: "text" },
      { type: "image", data: "iVBORw==", mimeType: "image/png" },
    ]);
  });

  test("an image that cannot be read is said in the text; without images the text stays a string", () => {
    const d = delivery(8, "x", { images: [{ path: "/gone.png", mime: "image/png" }] });
    const gone = (): Buffer => {
      throw new Error("ENOENT");
    };
    const content = deliveryContent(d, "text", gone);
    assert.ok(Array.isArray(content));
    assert.equal(content.length, 1);
    assert.match(JSON.stringify(content[0]), /could not be read: ENOENT/);
    assert.equal(deliveryContent(delivery(9, "plain"), "plain"), "plain");
  });
});
