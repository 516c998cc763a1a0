// What the role tools tell the model: where message_supervisor went, whom ask_supervisor asked
// (and that the turn ends), and the staff and peer lists with exact ids first.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { askedText, peersText, routedText, sessionLine, staffText } from "../role-tools.ts";
import type { Ask } from "../wire.ts";
import { sessionInfo } from "./fake-core.ts";

const NOW = 1_764_670_500_000;

function ask(to: Ask["to"]): Ask {
  const base: Ask = {
    id: 12,
    session_id: "lead-1",
    session_name: "fix-login",
    question: "Rebase?",
    options: [],
    details: null,
    state: "open",
    answer: null,
    answered_by: null,
    created_at: NOW,
    answered_at: null,
  };
  return to === undefined ? base : { ...base, to };
}

describe("role tool results", () => {
  test("message_supervisor: to a Manager, away, or to the human as a report", () => {
    const to = { to: "manager" as const, session_id: "mgr-1", session_name: "app" };
    assert.equal(
      routedText({ to, messageId: 52, reportId: null, connected: true }),
      'Sent to your Manager "app" (mgr-1). No answer comes back unless they message you.',
    );
    assert.match(routedText({ to, messageId: 52, reportId: null, connected: false }), /not connected right now/);
    assert.match(
      routedText({ to: { to: "human", session_id: null, session_name: null }, messageId: null, reportId: 7, connected: true }),
      /went to the human as report #7/,
    );
  });

  test("ask_supervisor: says whom it asked and to end the turn", () => {
    const text = askedText(ask({ role: "manager", repo_id: "/src/app/.git", project: "app", session_id: "mgr-1", session_name: "app" }));
    assert.match(text, /^Question #12 was sent to the manager of app \("app"\)\./);
    assert.match(text, /"\[shepherd\] Answer to your question #12"\. End your turn now/);
    assert.match(askedText(ask(undefined)), /sent to the human \(no Manager or Chief is above you now\)/);
    assert.match(askedText(ask({ role: "chief", repo_id: null, project: null, session_id: "c", session_name: "boss" })), /sent to the chief \("boss"\)/);
  });

  test("staff and peers: one line each, the exact id first", () => {
    const s = {
      ...sessionInfo("0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69", "fix-login"),
      project: "app",
      branch: "fix/login",
      status: "tool:bash",
      open_asks: 1,
      context_percent: 20.6,
      last_seen: NOW - 90_000,
    };
    assert.equal(
      sessionLine(s, NOW),
      '- 0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69 · "fix-login" · lead · project app · branch fix/login · tool:bash · last active 2m ago · 1 open ask · context 21%',
    );
    // A session on a linked host says which.
    assert.match(sessionLine({ ...s, host: "gpu" }, NOW), /^- 0193a5c2-\S+ · "fix-login" · lead · on host gpu · project app/);
    const members = [{ session: s, reports_to: { to: "manager" as const, session_id: "mgr-1", session_name: "app" } }];
    assert.match(staffText(members, NOW), /^Your staff \(1\); use the exact id with inspect_staff and message_staff:\n- 0193a5c2/);
    assert.equal(staffText([], NOW), "No staff right now: no session reports to you.");
    assert.match(peersText([{ ...s, connected: false }], NOW), /exact id with message_peer:\n.*not connected/);
    assert.equal(peersText([], NOW), "No peers connected right now.");
  });
});
