// Pruning a supervisor's context: only views older than the last three looks lose their body,
// only the assistant messages answering them lose their reasoning, verdict calls and results
// stay, worker_view results go with their look, and an unchanged list is reported as such.

import assert from "node:assert/strict";
import { test } from "node:test";

import { VIEW_CUSTOM_TYPE } from "../dedupe.ts";
import { pruneLooks, type PrunableMessage } from "../prune.ts";

type Msg = PrunableMessage & Record<string, unknown>;

function view(look: number): Msg {
  return { role: "custom", customType: VIEW_CUSTOM_TYPE, content: `[shepherd] Look ${look} …long view…`, display: true, details: { store_id: "s", id: 100 + look, pairing_id: 7, look }, timestamp: look };
}

function answer(look: number): Msg[] {
  return [
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: `pondering look ${look}`, thinkingSignature: "sig" },
        { type: "toolCall", id: `call-${look}`, name: "let_it_run", arguments: { reason: `fine ${look}` } },
      ],
      timestamp: look,
    },
    { role: "toolResult", toolCallId: `call-${look}`, toolName: "let_it_run", content: [{ type: "text", text: "Verdict recorded" }], isError: false, timestamp: look },
    { role: "assistant", content: [{ type: "thinking", thinking: "done" }, { type: "text", text: `ok ${look}` }], timestamp: look },
  ];
}

function conversation(looks: number): Msg[] {
  const out: Msg[] = [{ role: "user", content: "/supervise", timestamp: 0 }];
  for (let look = 1; look <= looks; look++) out.push(view(look), ...answer(look));
  return out;
}

function thinkingCount(messages: readonly Msg[]): number {
  return messages.reduce((n, m) => n + (Array.isArray(m["content"]) ? m["content"].filter((b) => typeof b === "object" && b !== null && "type" in b && b.type === "thinking").length : 0), 0);
}

test("three looks or fewer: nothing to prune", () => {
  assert.equal(pruneLooks(conversation(0)), null);
  assert.equal(pruneLooks(conversation(3)), null);
});

test("looks older than the last three lose their view body and reasoning, keep their verdicts", () => {
  const before = conversation(5);
  const snapshot = structuredClone(before);
  const after = pruneLooks(before);
  assert.ok(after !== null);
  assert.deepEqual(before, snapshot, "the input is not modified");
  assert.equal(after.length, before.length);
  const views = after.filter((m) => m["customType"] === VIEW_CUSTOM_TYPE).map((m) => m["content"]);
  assert.deepEqual(views, ["[look 1: view pruned]", "[look 2: view pruned]", "[shepherd] Look 3 …long view…", "[shepherd] Look 4 …long view…", "[shepherd] Look 5 …long view…"]);
  // Looks 1 and 2: no thinking left, the tool calls, results and texts stay.
  assert.equal(thinkingCount(after.slice(0, 9)), 0);
  assert.deepEqual(after[2]?.["content"], [{ type: "toolCall", id: "call-1", name: "let_it_run", arguments: { reason: "fine 1" } }]);
  assert.deepEqual(after[3], before[3]);
  assert.deepEqual(after[4]?.["content"], [{ type: "text", text: "ok 1" }]);
  // Looks 3 to 5 are untouched.
  assert.deepEqual(after.slice(9), before.slice(9));
  assert.equal(thinkingCount(after), 6);
  // Pruning again changes nothing more.
  assert.equal(pruneLooks(after), null);
});

test("an assistant message that is only reasoning keeps it (it needs some content)", () => {
  const messages = conversation(4);
  messages.splice(2, 0, { role: "assistant", content: [{ type: "thinking", thinking: "hm" }], timestamp: 1 });
  const after = pruneLooks(messages);
  assert.ok(after !== null);
  assert.deepEqual(after[2], messages[2]);
});

test("worker_view results are pruned with the look they were fetched in", () => {
  const messages = conversation(4);
  const fetched: Msg = { role: "toolResult", toolCallId: "wv", toolName: "worker_view", content: [{ type: "text", text: "big view" }], details: { look: 1 }, isError: false, timestamp: 1 };
  const recent: Msg = { ...fetched, details: { look: 4 } };
  messages.splice(2, 0, fetched);
  messages.push(recent);
  const after = pruneLooks(messages);
  assert.ok(after !== null);
  assert.deepEqual(after[2]?.["content"], [{ type: "text", text: "[look 1: view pruned]" }]);
  assert.deepEqual(after.at(-1), recent);
});

test("messages before the first view and from other sources are left alone", () => {
  const messages: Msg[] = [
    { role: "assistant", content: [{ type: "thinking", thinking: "before any look" }, { type: "text", text: "hi" }], timestamp: 0 },
    ...conversation(4).slice(1),
    { role: "custom", customType: "shepherd-brief", content: "brief", display: true, timestamp: 9 },
  ];
  const after = pruneLooks(messages);
  assert.ok(after !== null);
  assert.deepEqual(after[0], messages[0]);
  assert.deepEqual(after.at(-1), messages.at(-1));
  assert.equal(pruneLooks(messages, 4), null);
});
