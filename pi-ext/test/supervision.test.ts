// Supervision state against a fake Pi: entering on `paired` / a started event / a returning
// registration, leaving on `unpaired` / an ended event / an accepted `done` / a registration
// without the pairing; the tool set switched to read-only + verdict tools and the exact list
// restored (also after a reload in the middle of a pairing), the brief injected once, and
// the footer on both sides.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { BRIEF_CUSTOM_TYPE } from "../dedupe.ts";
import { questionForHuman, Supervision, type PolicyBriefMessage, type SupervisionHost } from "../supervision.ts";
import { SAVED_TOOLS_ENTRY, SUPERVISOR_TOOLS, type SavedTools } from "../toolset.ts";
import { ended, pairing, SUPERVISOR_ID, WORKER_ID } from "./pairings.ts";

const BEFORE = ["read", "bash", "edit", "write", "grep", "ask_human", "report", "ls"];
const SUPERVISING = ["read", "grep", "ls", ...SUPERVISOR_TOOLS];

/** A stand-in for Pi: active tools, session entries (all in context), footer, notices. */
class FakePi implements SupervisionHost {
  id: string;
  active: string[];
  entries_: unknown[] = [];
  briefs: PolicyBriefMessage[] = [];
  footers: Array<string | null> = [];
  notices: string[] = [];
  /** Entries dropped from the context (a compaction). */
  compacted = false;

  constructor(id: string, active: string[] = [...BEFORE]) {
    this.id = id;
    this.active = active;
  }
  sessionId(): string {
    return this.id;
  }
  activeTools(): string[] {
    return [...this.active];
  }
  setActiveTools(names: string[]): void {
    this.active = [...names];
  }
  entries(): readonly unknown[] {
    return this.entries_;
  }
  contextEntries(): readonly unknown[] {
    return this.compacted ? [] : this.entries_;
  }
  appendEntry(customType: string, data: SavedTools): void {
    this.entries_.push({ type: "custom", customType, data });
  }
  injectBrief(message: PolicyBriefMessage): void {
    this.briefs.push(message);
    this.entries_.push({ type: "custom_message", ...message });
  }
  setFooter(text: string | null): void {
    this.footers.push(text);
  }
  policy(): { text: string; source: string } {
    return { text: "Answer with one verdict.", source: "built-in" };
  }
  notify(text: string): void {
    this.notices.push(text);
  }
  log(): void {}
  saved(): unknown[] {
    return this.entries_.filter((e) => typeof e === "object" && e !== null && "customType" in e && e.customType === SAVED_TOOLS_ENTRY);
  }
}

describe("the supervisor side", () => {
  test("at load, outside a pairing, the verdict tools are not active", () => {
    const pi = new FakePi(SUPERVISOR_ID, [...BEFORE, ...SUPERVISOR_TOOLS]);
    new Supervision(pi).start();
    assert.deepEqual(pi.active, BEFORE);
  });

  test("paired: read-only + verdict tools, the list before saved, one brief, the footer", () => {
    const pi = new FakePi(SUPERVISOR_ID);
    const s = new Supervision(pi);
    s.start();
    s.observe(pairing(), "paired");
    assert.deepEqual(pi.active, SUPERVISING);
    assert.deepEqual(pi.saved(), [{ type: "custom", customType: SAVED_TOOLS_ENTRY, data: { pairing_id: 7, saved: BEFORE } }]);
    assert.equal(pi.briefs.length, 1);
    assert.equal(pi.briefs[0]?.customType, BRIEF_CUSTOM_TYPE);
    assert.deepEqual(pi.briefs[0]?.details, { pairing_id: 7, policy: true, source: "built-in", reanchor: false });
    assert.match(pi.briefs[0]?.content ?? "", /You now supervise session "fix-login"[\s\S]*SSO users[\s\S]*Answer with one verdict/);
    assert.deepEqual(pi.footers, ["👁 watching fix-login"]);
    // The started event that follows changes nothing; a look updates the record.
    s.observe(pairing(), "event:started");
    s.observe(pairing({ looks: 1 }), "event:look");
    assert.equal(pi.briefs.length, 1);
    assert.equal(pi.saved().length, 1);
    assert.equal(s.supervising?.looks, 1);
    assert.deepEqual(pi.active, SUPERVISING);
  });

  for (const [how, source, p] of [
    ["unpaired", "unpaired", ended(pairing(), "stopped", "supervisor")],
    ["an ended event", "event:ended", ended(pairing(), "stopped", "telegram:@ada")],
    ["an accepted done", "verdict_accepted", ended(pairing(), "done", "supervisor", "cargo test: 42 passed")],
  ] as const) {
    test(`${how} restores the exact list from before and clears the footer`, () => {
      const pi = new FakePi(SUPERVISOR_ID);
      const s = new Supervision(pi);
      s.start();
      s.observe(pairing(), "paired");
      s.observe(p, source);
      assert.deepEqual(pi.active, BEFORE);
      assert.equal(s.supervising, null);
      assert.deepEqual(pi.footers, ["👁 watching fix-login", null]);
      assert.deepEqual((pi.saved().at(-1) as { data: SavedTools }).data, { pairing_id: 7, saved: null });
      assert.equal(pi.notices.length, 1);
      assert.match(pi.notices[0] ?? "", new RegExp(`stopped supervising "fix-login" \\(${p.end_reason ?? ""}`));
      // A second end changes nothing.
      s.observe(p, "event:ended");
      assert.equal(pi.notices.length, 1);
    });
  }

  test("a reload in the middle of a pairing: still read-only, the saved list kept, no second brief", () => {
    const pi = new FakePi(SUPERVISOR_ID);
    const first = new Supervision(pi);
    first.start();
    first.observe(pairing(), "paired");
    // Pi reloads the extension; its active set is whatever it kept, even the full one.
    pi.active = [...BEFORE];
    const second = new Supervision(pi);
    second.start();
    assert.deepEqual(pi.active, SUPERVISING, "read-only until the core says otherwise");
    second.sync([pairing({ looks: 2 })], "registered");
    assert.deepEqual(pi.active, SUPERVISING);
    assert.equal(pi.saved().length, 1, "the list from before is not overwritten by the supervising one");
    assert.equal(pi.briefs.length, 1, "the brief is still in the context");
    assert.equal(second.supervising?.looks, 2);
    second.observe(ended(pairing(), "stopped", "cli"), "event:ended");
    assert.deepEqual(pi.active, BEFORE);
  });

  test("a resumed session whose context lost the brief gets it again, as a re-anchor", () => {
    const pi = new FakePi(SUPERVISOR_ID);
    new Supervision(pi).observe(pairing(), "paired");
    pi.compacted = true;
    const again = new Supervision(pi);
    again.start();
    again.sync([pairing()], "registered");
    assert.equal(pi.briefs.length, 2);
    assert.equal(pi.briefs[1]?.details.reanchor, true);
    assert.match(pi.briefs[1]?.content ?? "", /still supervising/);
    // After a compaction in this process too.
    again.reanchor();
    assert.equal(pi.briefs.length, 3);
  });

  test("a pairing that ended while the session was away restores the tools at registration", () => {
    const pi = new FakePi(SUPERVISOR_ID);
    new Supervision(pi).observe(pairing(), "paired");
    const again = new Supervision(pi);
    again.start();
    assert.deepEqual(pi.active, SUPERVISING);
    again.sync([], "registered");
    assert.deepEqual(pi.active, BEFORE);
    assert.equal(again.supervising, null);
    // The next start knows it was restored.
    pi.active = [...BEFORE];
    new Supervision(pi).start();
    assert.deepEqual(pi.active, BEFORE);
  });

  test("a pairing started from the phone (a started event) enters with a fresh brief", () => {
    const pi = new FakePi(SUPERVISOR_ID);
    const s = new Supervision(pi);
    s.observe(pairing({ goal: null }), "event:started");
    assert.deepEqual(pi.active, SUPERVISING);
    assert.equal(pi.briefs[0]?.details.reanchor, false);
    assert.match(pi.briefs[0]?.content ?? "", /none yet/);
  });

  test("status text", () => {
    const s = new Supervision(new FakePi(SUPERVISOR_ID));
    assert.match(s.statusText(), /^not in a pairing/);
    s.observe(pairing({ looks: 3, steers: 2, worker_connected: false, goal_file: "docs/GOAL.md" }), "paired");
    assert.equal(
      s.statusText(),
      'supervising "fix-login" (0193a5c2): pairing 7, worker not connected\ngoal: The login form accepts SSO users; tests pass.\n(read from docs/GOAL.md)\nlooks: 3, steers: 2',
    );
  });
});

describe("the worker side", () => {
  test("watched while the pairing is active; its tools are never touched", () => {
    const pi = new FakePi(WORKER_ID);
    const s = new Supervision(pi);
    s.start();
    s.sync([pairing()], "registered");
    assert.deepEqual(pi.footers, ["👁 watched"]);
    assert.match(s.statusText(), /^watched by "watch-login" \(0193a5c2\): pairing 7, supervisor connected/);
    s.observe(ended(pairing(), "done", "supervisor", "tests pass"), "event:ended");
    assert.deepEqual(pi.footers, ["👁 watched", null]);
    assert.deepEqual(pi.active, BEFORE);
    assert.equal(pi.briefs.length, 0);
    assert.equal(pi.saved().length, 0);
  });

  test("on return, each side is told whether the other is connected", () => {
    const worker = new FakePi(WORKER_ID);
    const w = new Supervision(worker);
    w.start();
    w.sync([pairing({ supervisor_connected: false })], "registered");
    assert.deepEqual(worker.notices, [
      'shepherd: still watched by "watch-login" (pairing 7); the supervisor is not connected right now',
    ]);
    const sup = new FakePi(SUPERVISOR_ID, [...BEFORE, ...SUPERVISOR_TOOLS]);
    const s = new Supervision(sup);
    s.start();
    s.sync([pairing({ worker_connected: true })], "registered");
    assert.ok(
      sup.notices.includes('shepherd: still supervising "fix-login" (pairing 7); the worker is connected'),
      sup.notices.join("\n"),
    );
    s.sync([pairing()], "list");
    assert.equal(sup.notices.filter((n) => n.startsWith("shepherd: still")).length, 1, "only on registration");
  });

  test("pairings of other sessions are ignored", () => {
    const pi = new FakePi("someone-else");
    const s = new Supervision(pi);
    s.observe(pairing(), "event:started");
    assert.equal(s.supervising, null);
    assert.equal(s.watchedBy, null);
    assert.deepEqual(pi.footers, []);
  });
});

describe("questionForHuman", () => {
  const assistant = (content: unknown[], stopReason = "stop"): unknown => ({ role: "assistant", content, stopReason });
  test("the final text, when a line ends with a question mark", () => {
    const text = "The goal says SSO only.\nShould it also cover the old password flow?";
    assert.equal(questionForHuman([{ role: "user", content: "x" }, assistant([{ type: "text", text }])]), text);
    assert.equal(questionForHuman([assistant([{ type: "thinking", thinking: "?" }, { type: "text", text: "Keep going?  " }])]), "Keep going?");
  });
  test("no question: statements, tool calls, aborted or failed turns", () => {
    assert.equal(questionForHuman([assistant([{ type: "text", text: "Let it run. Worker is on track." }])]), null);
    assert.equal(questionForHuman([assistant([{ type: "text", text: "Why?" }, { type: "toolCall", id: "1", name: "steer", arguments: {} }], "toolUse")]), null);
    assert.equal(questionForHuman([assistant([{ type: "text", text: "Why?" }], "aborted")]), null);
    assert.equal(questionForHuman([assistant([{ type: "text", text: "Why?" }], "error")]), null);
    assert.equal(questionForHuman([{ role: "user", content: "Why?" }]), null);
    assert.equal(questionForHuman([]), null);
  });
});
