// The worker tools against a fake Pi and a fake core client: which tools and commands are
// registered (ask_owner inactive until workers.ts activates it), what list_agents and the
// owner tools tell the model (non-blocking, the worker's actions, refusals with the core's
// message and details.reason), ask_owner refused locally beside another tool call without
// asking the core, and ending the run when it is alone; `/agents`.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { CoreError, NotConnectedError, type CoreClient } from "../client.ts";
import {
  acceptedText,
  actionText,
  agentsText,
  askedOwnerText,
  registerWorkerTools,
  statsText,
  workerLine,
  workersText,
  type WorkerSession,
} from "../worker-tools.ts";
import { OWNER_TOOLS, Workers } from "../workers.ts";
import { decodeServerMsg, type AgentDef, type Ask, type Worker } from "../wire.ts";
import { fixture, workerRecord } from "./worker-fixtures.ts";

const OWNER_ID = "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69";

function agents(): AgentDef[] {
  const msg = decodeServerMsg(fixture("server", "agents"));
  assert.ok(msg.type === "agents");
  return msg.agents;
}

function ownerAsk(id: number): Ask {
  const msg = decodeServerMsg(fixture("server", "asked.owner"));
  assert.ok(msg.type === "asked");
  return { ...msg.ask, id };
}

interface ToolResultLike {
  content: Array<{ type: string; text: string }>;
  details: Record<string, unknown>;
  isError?: boolean;
  terminate?: boolean;
}

interface RegisteredTool {
  name: string;
  description: string;
  defaultActive?: boolean;
  parameters: { properties: Record<string, unknown> };
  execute(id: string, params: unknown, signal: unknown, onUpdate: unknown, ctx: ExtensionContext): Promise<ToolResultLike>;
}

interface RegisteredCommand {
  handler(args: string, ctx: ExtensionContext): Promise<void>;
}

/** The parts of Pi the registration uses: tools and commands, kept by name. */
class FakePi {
  readonly tools = new Map<string, RegisteredTool>();
  readonly commands = new Map<string, RegisteredCommand>();
  registerTool(tool: RegisteredTool): void {
    this.tools.set(tool.name, tool);
  }
  registerCommand(name: string, command: RegisteredCommand): void {
    this.commands.set(name, command);
  }
  tool(name: string): RegisteredTool {
    const t = this.tools.get(name);
    assert.ok(t !== undefined, `tool ${name} registered`);
    return t;
  }
}

/** A fake core client: records calls, answers from `answer` (or throws what it returns as an Error). */
class FakeClient {
  calls: Array<{ method: string; args: unknown[] }> = [];
  answer: (method: string, args: unknown[]) => unknown = () => undefined;
  #call(method: string, args: unknown[]): Promise<never> {
    this.calls.push({ method, args });
    const out = this.answer(method, args);
    return out instanceof Error ? Promise.reject(out) : Promise.resolve(out as never);
  }
  listAgents(): Promise<AgentDef[]> {
    return this.#call("listAgents", []);
  }
  listWorkers(all = false): Promise<Worker[]> {
    return this.#call("listWorkers", [all]);
  }
  usage(): Promise<unknown> {
    return this.#call("usage", []);
  }
  delegateAgent(...args: unknown[]): Promise<Worker> {
    return this.#call("delegateAgent", args);
  }
  continueAgent(...args: unknown[]): Promise<Worker> {
    return this.#call("continueAgent", args);
  }
  workerAction(...args: unknown[]): Promise<Worker> {
    return this.#call("workerAction", args);
  }
  agentText(...args: unknown[]): Promise<{ worker: Worker; text: string }> {
    return this.#call("agentText", args);
  }
  askOwner(...args: unknown[]): Promise<Ask> {
    return this.#call("askOwner", args);
  }
}

interface Harness {
  pi: FakePi;
  client: FakeClient;
  session: WorkerSession;
  notices: Array<{ text: string; level: string }>;
  ctx: ExtensionContext;
}

function harness(launch: string | null = null): Harness {
  const pi = new FakePi();
  const client = new FakeClient();
  const notices: Array<{ text: string; level: string }> = [];
  const ctx = {
    hasUI: true,
    ui: { notify: (text: string, level: string) => notices.push({ text, level }) },
    sessionManager: { getSessionId: () => OWNER_ID },
  } as unknown as ExtensionContext;
  const workers = new Workers(
    { activeTools: () => [], setActiveTools: () => undefined, allTools: () => [], setFooter: () => undefined, log: () => undefined },
    launch,
  );
  const session: WorkerSession = {
    ctx,
    client: client as unknown as CoreClient,
    workers,
    openAsks: new Map(),
    log: () => undefined,
    recordError: () => undefined,
    refreshStatusLine: () => undefined,
  };
  registerWorkerTools(pi as unknown as ExtensionAPI, () => session);
  return { pi, client, session, notices, ctx };
}

function run(h: Harness, tool: string, params: unknown, toolCallId = "call-1"): Promise<ToolResultLike> {
  return h.pi.tool(tool).execute(toolCallId, params, undefined, undefined, h.ctx);
}

function text(r: ToolResultLike): string {
  return r.content.map((c) => c.text).join("");
}

const refused = (reason: string, message: string) =>
  new CoreError("worker_refused", message, { reason });

describe("registration", () => {
  test("the nine owner tools and ask_owner (inactive until a worker activates it), and /agents", () => {
    const h = harness();
    assert.deepEqual([...h.pi.tools.keys()].sort(), [...OWNER_TOOLS, "ask_owner"].sort());
    for (const name of OWNER_TOOLS) assert.notEqual(h.pi.tool(name).defaultActive, false, name);
    assert.equal(h.pi.tool("ask_owner").defaultActive, false);
    assert.ok(h.pi.commands.has("agents"));
  });

  test("parameter names are the issue's", () => {
    const h = harness();
    const params = (name: string) => Object.keys(h.pi.tool(name).parameters.properties).sort();
    assert.deepEqual(params("list_agents"), []);
    assert.deepEqual(params("delegate_agent"), ["definition", "fork", "label", "task"]);
    assert.deepEqual(params("continue_agent"), ["session", "task"]);
    assert.deepEqual(params("steer_agent"), ["agent", "message"]);
    assert.deepEqual(params("interrupt_agent"), ["agent", "message"]);
    assert.deepEqual(params("reply_agent"), ["agent", "answer"]);
    for (const t of ["close_agent", "inspect_agent", "read_agent_transcript"]) assert.deepEqual(params(t), ["agent"]);
    assert.deepEqual(params("ask_owner"), ["question"]);
  });

  test("delegation says it does not block", () => {
    const h = harness();
    for (const t of ["delegate_agent", "continue_agent"]) {
      assert.match(h.pi.tool(t).description, /returns once accepted; the result arrives later as a message; do not poll, end your turn or keep working/);
    }
  });
});

describe("what the owner tools tell the model", () => {
  test("list_agents: a table of usable definitions, the broken ones, then Your workers", async () => {
    const h = harness();
    h.client.answer = (m) => (m === "listAgents" ? agents() : [workerRecord(), workerRecord({ id: 9, label: "deep", owner_id: "other", owner_name: "scout-1", parent_worker: 7 })]);
    const r = await run(h, "list_agents", {});
    const out = text(r);
    assert.equal(r.isError, undefined);
    assert.match(out, /^Agent definitions \(3\); start one with delegate_agent \{definition: <name>, task\}:\n\| name \| description \|/);
    assert.match(out, /\n\| docs \| Writes and checks the user documentation\. \| yes \| anthropic\/claude-sonnet-4-5 \| high \| read, grep, find, ls, edit, write \| scout \| project \|/);
    assert.match(out, /\n\| reviewer \| Reviews without the shell\. \| no \(disabled\) \| inherited \| inherited \| Pi's defaults \(not bash\) \| - \(a leaf\) \| global \|/);
    assert.match(out, /\nBroken definitions \(1; they cannot be used until fixed\):\n- scout: \/home\/u\/src\/app\/\.pi\/agents\/scout\.md: frontmatter: unknown field `colour`/);
    assert.match(out, /\n\nYour workers \(2; address one by its label\):\n- scout-1 · definition scout · blocked \(question #12 waits for your reply_agent\) · actions: reply, steer, close, inspect, transcript · /);
    assert.match(out, /\n- deep · .* · worker of your worker "scout-1" \(only its owner can act on it\)/);
    assert.deepEqual(r.details["agents"], ["docs", "implementer", "reviewer", "scout"]);
  });

  test("list_agents with no workers, and when only the workers cannot be listed", async () => {
    const h = harness();
    h.client.answer = (m) => (m === "listAgents" ? [] : []);
    assert.equal(text(await run(h, "list_agents", {})), "No agent definitions are available.\n\nYour workers: none.");
    h.client.answer = (m) => (m === "listAgents" ? [] : new NotConnectedError("the connection closed"));
    assert.match(text(await run(h, "list_agents", {})), /Your workers: could not be listed \(the connection closed\)\./);
  });

  test("delegate_agent: the request as given, accepted, nothing to poll", async () => {
    const h = harness();
    h.client.answer = () => workerRecord({ state: "starting", available_actions: ["close", "transcript"] });
    const r = await run(h, "delegate_agent", { definition: "scout", task: "find callers", label: "scout-1" });
    assert.deepEqual(h.client.calls, [{ method: "delegateAgent", args: ["scout", "find callers", "scout-1", null] }]);
    assert.equal(
      text(r),
      'Accepted: worker scout-1 was started (definition scout, id 7, starting). This does not wait for the work: its result arrives later as a message "[shepherd] Result from your managed worker "scout-1"", and a question from it as a message too. Do not poll or inspect it to wait: end your turn or keep working on something else.',
    );
    assert.deepEqual(r.details, { worker: 7, label: "scout-1", state: "starting", available_actions: ["close", "transcript"] });
    assert.equal(r.terminate, undefined, "the owner's run goes on");
  });

  test("refusals: the core's message, its code and details.reason", async () => {
    const h = harness();
    h.client.answer = () => refused("agent_label_exists", "scout-1 is already one of your live workers; pick another label or close it");
    const r = await run(h, "delegate_agent", { definition: "scout", task: "t", label: "scout-1" });
    assert.equal(r.isError, true);
    assert.equal(text(r), "Not delegated: scout-1 is already one of your live workers; pick another label or close it");
    assert.deepEqual(r.details, { refused: "worker_refused", reason: "agent_label_exists" });
    h.client.answer = () => refused("not_direct_owner", "scout-1 is not your worker");
    const steer = await run(h, "steer_agent", { agent: "scout-1", message: "stop" });
    assert.deepEqual(steer.details, { refused: "worker_refused", reason: "not_direct_owner" });
    assert.match(text(steer), /^Not steered: scout-1 is not your worker$/);
    h.client.answer = () => new NotConnectedError("the connection to the shepherd core closed");
    const away = await run(h, "close_agent", { agent: "scout-1" });
    assert.deepEqual(away.details, { refused: "not_connected", reason: "not_connected" });
    assert.match(text(away), /^Not closed: the shepherd core is not reachable right now/);
  });

  test("steer, interrupt, reply and close: the request and the worker's state after", async () => {
    const h = harness();
    h.client.answer = () => workerRecord({ state: "working", pending_ask: null });
    await run(h, "steer_agent", { agent: "scout-1", message: "skip tests/" });
    await run(h, "interrupt_agent", { agent: "scout-1", message: "src/ only" });
    const reply = await run(h, "reply_agent", { agent: "scout-1", answer: "yes" });
    h.client.answer = () => workerRecord({ state: "closed", available_actions: ["transcript"] });
    const close = await run(h, "close_agent", { agent: "scout-1" });
    assert.deepEqual(
      h.client.calls.map((c) => c.args),
      [
        ["steer", "scout-1", "skip tests/"],
        ["interrupt", "scout-1", "src/ only"],
        ["reply", "scout-1", "yes"],
        ["close", "scout-1", ""],
      ],
    );
    assert.match(text(reply), /^Replied to scout-1 \(working\): it continues its assignment/);
    assert.match(text(close), /^Closed scout-1 \(closed\);.*continue_agent \{session: "\/home\/ada\/.*\.jsonl", task\} starts it again\.$/);
  });

  test("inspect and transcript: the core's text under the worker's label", async () => {
    const h = harness();
    h.client.answer = () => ({ worker: workerRecord(), text: "scout-1 · tool:grep" });
    const r = await run(h, "inspect_agent", { agent: "scout-1" });
    assert.equal(text(r), "scout-1 (blocked (question #12 waits for your reply_agent)), live view:\n\nscout-1 · tool:grep");
    await run(h, "read_agent_transcript", { agent: "scout-1" });
    assert.deepEqual(h.client.calls.map((c) => c.args), [["inspect", "scout-1"], ["transcript", "scout-1"]]);
  });

  test("texts: rows and acceptance", () => {
    assert.equal(workersText([], OWNER_ID), "Your workers: none.");
    assert.match(workerLine(workerRecord({ available_actions: [] , state: "unknown"}), OWNER_ID), /^- scout-1 · definition scout · unknown · actions: none · session /);
    assert.match(acceptedText(workerRecord(), true), /^Accepted: continues its saved session as worker scout-1/);
    assert.match(actionText("interrupt", workerRecord()), /aborted and it continues the same assignment/);
    assert.match(agentsText(agents()), /\| implementer \| Implements one well-defined change/);
  });
});

describe("ask_owner", () => {
  const assistant = (...calls: Array<[string, string]>) => ({
    role: "assistant",
    content: calls.map(([id, name]) => ({ type: "toolCall", id, name, arguments: {} })),
  });

  test("beside another tool call: refused here, the core never asked, the run goes on", async () => {
    const h = harness("nonce");
    h.session.workers.message(assistant(["c1", "ask_owner"], ["c2", "bash"]));
    const r = await run(h, "ask_owner", { question: "CLI too?" }, "c1");
    assert.equal(r.isError, true);
    assert.equal(r.terminate, undefined);
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(r.details, { refused: "not_alone", reason: "not_only_tool_call", others: ["bash"] });
    assert.match(text(r), /^Not asked: ask_owner must be the only tool call of its message, and this message also calls bash\. Nothing was sent/);
  });

  test("alone: asked; the run ends like ask_human's (terminate), the reply comes as a message", async () => {
    const h = harness("nonce");
    h.session.workers.message(assistant(["c1", "ask_owner"]));
    h.client.answer = () => ownerAsk(12);
    const r = await run(h, "ask_owner", { question: "CLI too?" }, "c1");
    assert.deepEqual(h.client.calls, [{ method: "askOwner", args: ["CLI too?"] }]);
    assert.equal(r.terminate, true);
    assert.equal(r.isError, undefined);
    assert.equal(text(r), askedOwnerText(ownerAsk(12)));
    assert.match(text(r), /^Asked your owner \(question #12\); the reply arrives as a message beginning with "\[shepherd\] Answer to your question #12"/);
    assert.ok(h.session.openAsks.has(12));
  });

  test("the core's refusal (one already pending) reaches the model with its reason", async () => {
    const h = harness("nonce");
    h.session.workers.message(assistant(["c1", "ask_owner"]));
    h.client.answer = () => refused("ask_pending", "ask 12 is still waiting for your owner's reply; end your turn and wait");
    const r = await run(h, "ask_owner", { question: "again?" }, "c1");
    assert.equal(r.terminate, undefined);
    assert.deepEqual(r.details, { refused: "worker_refused", reason: "ask_pending" });
    assert.equal(text(r), "Not asked: ask 12 is still waiting for your owner's reply; end your turn and wait");
  });
});

describe("/agents", () => {
  async function command(h: Harness, args: string): Promise<{ text: string; level: string } | undefined> {
    const c = h.pi.commands.get("agents");
    assert.ok(c !== undefined);
    await c.handler(args, h.ctx);
    return h.notices.at(-1);
  }

  test("lists the workers (all: ended ones too)", async () => {
    const h = harness();
    h.client.answer = () => [workerRecord()];
    assert.match((await command(h, ""))?.text ?? "", /^Your workers \(1; address one by its label\):\n- scout-1/);
    await command(h, "all");
    assert.deepEqual(h.client.calls.map((c) => c.args), [[false], [true]]);
  });

  test("stats: the core's usage over this session and its workers; anything else: usage", async () => {
    const h = harness();
    const totals = { input: 900, output: 100, cache_read: 0, cache_write: 0, total_tokens: 1000, cost: 0.0123, records: 2 };
    const report = {
      sessions: [
        { session_id: "o", name: "app", file: "/s/o.jsonl", ...totals },
        { session_id: "w1234567", name: "scout-1", file: null, ...totals, total_tokens: 0, cost: 0, error: "no session file yet" },
      ],
      models: [{ model: "fake/fake-model", ...totals }],
      total: totals,
      complete: false,
      missing: [{ session_id: "w1234567", reason: "no session file yet" }],
    };
    h.client.answer = () => report;
    const shown = await command(h, "stats");
    assert.deepEqual(shown, { text: statsText(report), level: "info" });
    assert.match(shown?.text ?? "", /^Usage: 1000 tokens, \$0\.0123 \(2 sessions/);
    assert.match(shown?.text ?? "", /scout-1: not counted \(no session file yet\)/);
    assert.match(shown?.text ?? "", /Coverage incomplete: w1234567 \(no session file yet\)/);
    assert.deepEqual(h.client.calls.map((c) => c.method), ["usage"]);
    assert.match((await command(h, "bogus"))?.text ?? "", /^shepherd: usage: \/agents/);
  });
});
