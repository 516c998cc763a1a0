// A run's result: which text is a run's result (the last assistant text not followed by a
// tool result; none for an aborted, failed or tool-only run), the `results` mode from
// SHEPHERD_RESULTS and `/shepherd results`, and the sending path end to end against the
// fake core over a real socket (`result {text, results?}` → `reported`).

import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";

import { CoreClient, CoreError, NotConnectedError } from "../client.ts";
import { loadConfig } from "../config.ts";
import {
  assistantText,
  fitResultText,
  MAX_RESULT_JSON_BYTES,
  parseResultsMode,
  ResultSender,
  RunResult,
  type RunMessage,
} from "../result.ts";
import { DEFAULT_MAX_FRAME, encodeFrame } from "../wire/frame.ts";
import type { Report, ResultsMode } from "../wire.ts";
import { FakeCore } from "./fake-core.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const assistant = (text: string, stopReason = "stop", toolCall = false): RunMessage => ({
  role: "assistant",
  stopReason,
  content: [
    { type: "thinking", thinking: "hmm" },
    ...(text === "" ? [] : [{ type: "text", text }]),
    ...(toolCall ? [{ type: "toolCall", id: "c1", name: "bash", arguments: {} }] : []),
  ],
});
const toolResult: RunMessage = { role: "toolResult", content: [{ type: "text", text: "ok" }] };
const user: RunMessage = { role: "user", content: "go" };

function run(messages: RunMessage[], aborted = false): string | null {
  const r = new RunResult();
  r.started();
  for (const m of messages) r.message(m);
  return r.settled(aborted);
}

describe("RunResult", () => {
  test("the final assistant text is the result, thinking and tool calls left out", () => {
    assert.equal(run([user, assistant("Looking.", "toolUse", true), toolResult, assistant("  Fixed: 3 tests pass.\n")]), "Fixed: 3 tests pass.");
    assert.equal(assistantText(assistant("a")), "a");
  });

  test("a run ending on a tool (ask_human's terminate), aborted, failed or silent has none", () => {
    assert.equal(run([user, assistant("I will ask.", "toolUse", true), toolResult]), null);
    assert.equal(run([user, assistant("Half a thought")], true), null);
    assert.equal(run([user, assistant("partial", "aborted")]), null);
    assert.equal(run([user, assistant("partial", "error")]), null);
    assert.equal(run([user, assistant("", "stop", true)]), null);
    assert.equal(run([]), null);
  });

  test("each run starts afresh and a result is given once", () => {
    const r = new RunResult();
    r.started();
    r.message(assistant("first"));
    assert.equal(r.settled(false), "first");
    assert.equal(r.settled(false), null);
    r.message(assistant("stale"));
    r.started();
    assert.equal(r.settled(false), null);
  });

  test("custom messages after the text (deliveries, briefs) do not hide it", () => {
    assert.equal(run([assistant("done"), { role: "custom", content: "brief" }]), "done");
  });
});

describe("a result's size", () => {
  test("a text that fits is sent whole", () => {
    assert.equal(fitResultText("All 214 tests pass."), "All 214 tests pass.");
  });

  test("a text over the frame limit is cut at a character, says how much went, and its frame fits", () => {
    // Escapes make the JSON longer than the text: quotes, newlines, control characters, and
    // a lone surrogate (a string cut inside an emoji).
    const text = "🐑\"\n\u0001\ud83d".repeat(60_000);
    const cut = fitResultText(text);
    const [kept, note] = cut.split("\n\n[cut by shepherd: ");
    assert.ok(kept !== undefined && note !== undefined, "the cut says so");
    assert.ok(text.startsWith(kept));
    const [last, next] = [kept.charCodeAt(kept.length - 1), text.charCodeAt(kept.length)];
    assert.ok(!(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff), "never inside a pair");
    const said = Number(note.split(" ")[0]);
    assert.equal(said, Buffer.byteLength(text, "utf8") - Buffer.byteLength(kept, "utf8"));
    const json = Buffer.byteLength(JSON.stringify(cut), "utf8");
    assert.ok(json <= MAX_RESULT_JSON_BYTES, `${json}`);
    assert.ok(json > MAX_RESULT_JSON_BYTES - 100, `${json}: the budget is used`);
    const frame = encodeFrame({ type: "result", id: 1, text: cut, results: "asks_only", key: "result:x" });
    assert.ok(frame.length <= DEFAULT_MAX_FRAME, "the request frame fits");
    assert.throws(() => encodeFrame({ type: "result", id: 1, text }), /over|limit|large/i, "uncut it would not");
  });
});

describe("results mode", () => {
  test("parsed from SHEPHERD_RESULTS; nonsense is reported and the core's setting applies", () => {
    assert.equal(parseResultsMode("asks-only"), "asks_only");
    assert.equal(parseResultsMode(" OFF "), "off");
    assert.equal(parseResultsMode("some"), null);
    assert.equal(loadConfig({}).results, null);
    assert.equal(loadConfig({ SHEPHERD_RESULTS: "asks_only" }).results, "asks_only");
    const bad = loadConfig({ SHEPHERD_RESULTS: "loud" });
    assert.equal(bad.results, null);
    assert.match(bad.resultsProblem ?? "", /SHEPHERD_RESULTS=loud is not one of all, asks_only, off/);
  });
});

describe("ResultSender", () => {
  async function connected(): Promise<{ core: FakeCore; client: CoreClient }> {
    const core = new FakeCore();
    cleanups.push(() => core.dispose());
    await core.listen();
    const client = new CoreClient({
      socketPath: core.socketPath,
      clientName: "shepherd-pi-ext test",
      registration: () => ({ session_id: "sess-1", cwd: "/tmp", name: "fix-login", status: "idle", role: "lead" }),
      onDeliver: () => {},
      initialBackoffMs: 10,
      maxBackoffMs: 40,
      handshakeTimeoutMs: 2000,
    });
    cleanups.push(() => client.stop());
    client.start();
    const deadline = Date.now() + 3000;
    while (!client.ready) {
      if (Date.now() > deadline) throw new Error("not connected");
      await new Promise((r) => setTimeout(r, 5));
    }
    return { core, client };
  }

  test("a settled run's text goes to the core as `result`, with the session's mode when it has one", async () => {
    const { core, client } = await connected();
    let mode: ResultsMode | null = null;
    const log: string[] = [];
    const sent: Report[] = [];
    const sender = new ResultSender({
      send: async (text, results) => {
        const report = await client.result(text, results);
        sent.push(report);
        return report;
      },
      mode: () => mode,
      supervising: () => false,
      log: (line) => log.push(line),
    });
    sender.started();
    sender.message(assistant("All 214 tests pass."));
    await sender.settled(false);
    assert.deepEqual(core.all.at(-1), { type: "result", id: 3, text: "All 214 tests pass." }, "no mode: the core's setting");
    assert.equal(sent[0]?.kind, "result");

    mode = "asks_only";
    sender.started();
    sender.message(assistant("Second run."));
    await sender.settled(false);
    assert.deepEqual(core.all.at(-1), { type: "result", id: 4, text: "Second run.", results: "asks_only" });

    const before = core.all.length;
    sender.started();
    sender.message(assistant("I will ask.", "toolUse", true));
    sender.message(toolResult);
    await sender.settled(false);
    sender.started();
    sender.message(assistant("cut short"));
    await sender.settled(true);
    assert.equal(core.all.length, before, "tool-only and aborted runs send nothing");
    assert.deepEqual(log.slice(-2), ["run ended without text: no result", "run aborted: no result"]);
  });

  test("a supervisor's runs send nothing; a refusal is logged, never thrown", async () => {
    let supervising = true;
    const log: string[] = [];
    let calls = 0;
    const sender = new ResultSender({
      send: async () => {
        calls++;
        throw new Error("not connected to the shepherd core");
      },
      mode: () => null,
      supervising: () => supervising,
      log: (line) => log.push(line),
    });
    sender.message(assistant("verdict given"));
    await sender.settled(false);
    assert.equal(calls, 0);
    supervising = false;
    sender.message(assistant("done"));
    await sender.settled(false);
    assert.equal(calls, 1);
    assert.equal(log.at(-1), "result not sent: not connected to the shepherd core");
  });

  test("a worker's result that found the core away is sent once registered again; nobody else's is kept", async () => {
    for (const worker of [true, false]) {
      let up = false;
      const sent: string[] = [];
      const keys: string[] = [];
      const sender = new ResultSender({
        send: async (text, _results, key) => {
          keys.push(key);
          if (!up) throw new NotConnectedError("the connection to the shepherd core closed");
          sent.push(text);
          return { id: 8, session_id: "s", session_name: "n", text, created_at: 1, kind: "result", announced: false };
        },
        mode: () => null,
        supervising: () => false,
        keepUnsent: () => worker,
        log: () => undefined,
      });
      sender.started();
      sender.message(assistant("Three callers skip the limiter."));
      await sender.settled(false);
      assert.deepEqual(sent, []);
      up = true;
      await sender.resend();
      await sender.resend();
      assert.deepEqual(sent, worker ? ["Three callers skip the limiter."] : [], `worker: ${worker}`);
      if (worker) {
        assert.equal(keys.length, 2);
        assert.equal(keys[1], keys[0], "sent again with the same key: the core keeps it once");
        assert.match(keys[0] ?? "", /^result:[0-9a-f-]{36}$/);
      }
    }
  });

  test("a result the core refused is not sent again", async () => {
    let calls = 0;
    const sender = new ResultSender({
      send: async () => {
        calls++;
        throw new CoreError("invalid_argument", "text too long", null);
      },
      mode: () => null,
      supervising: () => false,
      keepUnsent: () => true,
      log: () => undefined,
    });
    sender.message(assistant("done"));
    await sender.settled(false);
    await sender.resend();
    assert.equal(calls, 1);
  });
});
