// The extension in a real Pi (the pinned Pi 1.6, rpc mode), as a managed worker and as an
// owner, against the fake core and a scripted fake model (OpenAI-style SSE). It checks the Pi
// behaviour the worker side relies on: the tools the model is offered (pi.setActiveTools at
// session_start, a `defaultActive: false` tool activated, Pi's `--tools` filter), a `task`
// delivery starting the first turn with its header, ask_owner refused beside another tool
// call (message_end gives the assistant message's tool calls before they execute), ask_owner
// alone ending the run (`terminate: true`: no model request until the answer arrives), the
// answer's turn and its final text sent as the run's `result`, and acks after the entries land.

import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import type { ClientMsg, ServerMsg, Worker } from "../wire.ts";
import { delivery, FakeCore, sessionInfo } from "./fake-core.ts";
import { workerRecord } from "./worker-fixtures.ts";

const here = dirname(fileURLToPath(import.meta.url));
const EXTENSION = join(here, "..", "index.ts");
const LONG = 60_000;

/** The pinned Pi and Node (scripts/test-deps.sh, which scripts/test-ts.sh ran first). */
function deps(): { pi: string; nodeBinDir: string } {
  const fromEnv = process.env["SHEPHERD_PI"];
  const binDir = process.env["SHEPHERD_NODE_BIN_DIR"];
  if (fromEnv !== undefined && binDir !== undefined) return { pi: fromEnv, nodeBinDir: binDir };
  const out = execFileSync(join(here, "..", "..", "scripts", "test-deps.sh"), ["--env"], { encoding: "utf8" });
  const vars = new Map(
    out
      .trim()
      .split("\n")
      .map((line) => {
        const eq = line.indexOf("=");
        return [line.slice(0, eq), line.slice(eq + 1).replace(/^'(.*)'$/, "$1")] as const;
      }),
  );
  const pi = vars.get("SHEPHERD_PI");
  const nodeBinDir = vars.get("SHEPHERD_NODE_BIN_DIR");
  assert.ok(pi !== undefined && nodeBinDir !== undefined, `scripts/test-deps.sh --env printed no Pi: ${out}`);
  return { pi, nodeBinDir };
}

/** A reply, optionally held back `delayMs` after the request arrived. */
type Reply = ({ text: string } | { tools: Array<[string, Record<string, unknown>]> }) & { delayMs?: number };

interface ModelRequest {
  tools?: Array<{ function: { name: string } }>;
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>;
}

/** A scripted model: the n-th request gets the n-th reply. */
class FakeModel {
  readonly requests: ModelRequest[] = [];
  readonly script: Reply[];
  readonly #server: Server;
  constructor(script: Reply[]) {
    this.script = script;
    this.#server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        this.requests.push(JSON.parse(body) as ModelRequest);
        const n = this.requests.length;
        const reply = this.script[n - 1] ?? { text: "(unscripted)" };
        const chunk = (delta: object, finish: string | null): string =>
          `data: ${JSON.stringify({ id: `c${n}`, object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        let out = chunk({ role: "assistant", content: "" }, null);
        if ("tools" in reply) {
          reply.tools.forEach(([name, args], i) => {
            out += chunk({ tool_calls: [{ index: i, id: `call_${n}_${i}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] }, null);
          });
          out += chunk({}, "tool_calls");
        } else {
          out += chunk({ content: reply.text }, null) + chunk({}, "stop");
        }
        out += `data: ${JSON.stringify({ id: `c${n}`, object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } })}\n\ndata: [DONE]\n\n`;
        setTimeout(() => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(out);
        }, reply.delayMs ?? 0);
      });
    });
  }
  listen(): Promise<number> {
    return new Promise((resolve) => this.#server.listen(0, "127.0.0.1", () => resolve((this.#server.address() as AddressInfo).port)));
  }
  close(): void {
    this.#server.close();
  }
  toolsOffered(n: number): string[] {
    return (this.requests[n]?.tools ?? []).map((t) => t.function.name).sort();
  }
  /** The text of the last message of request n (a user message or a tool result). */
  lastText(n: number): string {
    return textOf(this.requests[n]?.messages.at(-1)?.content);
  }
  toolResults(n: number): string[] {
    return (this.requests[n]?.messages ?? []).filter((m) => m.role === "tool").map((m) => textOf(m.content));
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p: unknown) => (typeof p === "object" && p !== null && "text" in p && typeof p.text === "string" ? p.text : "")).join("");
}

async function until(what: string, predicate: () => boolean, timeoutMs = LONG): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Run {
  core: FakeCore;
  model: FakeModel;
  pi: ChildProcess;
  sessionId: string;
}

/** Start a Pi with the extension against a fresh fake core and model. */
async function startPi(opts: { script: Reply[]; launch: string | null; args?: string[]; respond: (msg: ClientMsg, sessionId: string) => ServerMsg[] | undefined }): Promise<Run> {
  const { pi: piBin, nodeBinDir } = deps();
  const model = new FakeModel(opts.script);
  const port = await model.listen();
  cleanups.push(() => model.close());
  const core = new FakeCore();
  await core.listen();
  cleanups.push(() => core.dispose());
  const sessionId = randomUUID();
  core.responder = (msg, conn) => {
    if (msg.type === "register") conn.sessionId = msg.session.session_id;
    return opts.respond(msg, sessionId);
  };
  const agentDir = mkdtempSync(join(tmpdir(), "shepherd-pi-worker-"));
  cleanups.push(() => rmSync(agentDir, { recursive: true, force: true }));
  writeFileSync(
    join(agentDir, "models.json"),
    JSON.stringify({
      providers: {
        fake: {
          baseUrl: `http://127.0.0.1:${port}/v1`,
          api: "openai-completions",
          apiKey: "fake-key",
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: "fake-model", contextWindow: 100000, maxTokens: 4096 }],
        },
      },
    }),
  );
  const env: NodeJS.ProcessEnv = {
    HOME: agentDir,
    PATH: `${nodeBinDir}:/usr/local/bin:/usr/bin:/bin`,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    SHEPHERD_SOCKET: core.socketPath,
    SHEPHERD_AUTOSTART: "0",
  };
  if (opts.launch !== null) env["SHEPHERD_LAUNCH"] = opts.launch;
  const args = ["--mode", "rpc", "--provider", "fake", "--model", "fake-model", "--session-id", sessionId, ...(opts.args ?? []), "-ne", "-e", EXTENSION];
  const pi = spawn(piBin, args, { cwd: agentDir, env, stdio: ["pipe", "ignore", "ignore"] });
  cleanups.push(() => {
    pi.kill("SIGKILL");
  });
  return { core, model, pi, sessionId };
}

const OWNER = { kind: "pi" as const, session_id: "owner-1", name: "app" };

/** A core that binds the worker and hands it its task, answers ask_owner, and takes results. */
function workerCore(record: (sessionId: string) => Worker, results: string[]) {
  return (msg: ClientMsg, sessionId: string): ServerMsg[] | undefined => {
    switch (msg.type) {
      case "register":
        return [
          { type: "registered", id: msg.id, session: sessionInfo(sessionId, "scout-1"), pending: 1, pairings: [], worker: record(sessionId) },
          { type: "deliver", message: delivery(880, "Find every caller of login()", { kind: "task", from: OWNER }) },
        ];
      case "ask_owner":
        return [
          {
            type: "asked",
            id: msg.id,
            ask: {
              id: 12,
              session_id: sessionId,
              session_name: "scout-1",
              question: msg.question,
              options: [],
              details: null,
              state: "open",
              answer: null,
              answered_by: null,
              created_at: 1,
              answered_at: null,
              to: { role: "lead", repo_id: null, project: null, session_id: "owner-1", session_name: "app", worker: 7 },
            },
          },
        ];
      case "result":
        results.push(msg.text);
        return undefined;
      default:
        return undefined;
    }
  };
}

describe("a real Pi with the extension", { timeout: 4 * LONG }, () => {
  test("as a leaf worker: its tools, the task's turn, ask_owner's rule, the answer's turn and one result", async () => {
    const results: string[] = [];
    const run = await startPi({
      launch: "nonce-1",
      script: [
        { tools: [["ask_owner", { question: "Include the CLI?" }], ["bash", { command: "echo hi" }]] },
        { tools: [["ask_owner", { question: "Include the CLI?" }]] },
        { text: "Three callers skip the limiter." },
      ],
      respond: workerCore((id) => workerRecord({ session_id: id, state: "working", pending_ask: null, delegates: false }), results),
    });
    const { core, model } = run;
    await until("the worker asked its owner", () => core.all.some((m) => m.type === "ask_owner"));
    const register = core.all.find((m) => m.type === "register");
    assert.ok(register?.type === "register");
    assert.equal(register.session.launch, "nonce-1");
    assert.deepEqual(model.toolsOffered(0), ["ask_owner", "bash", "edit", "read", "write"]);
    assert.match(model.lastText(0), /^\[shepherd\] Task from "app" \(you are managed worker scout-1, definition scout\)\. Work on it;[^\n]*\n\nFind every caller of login\(\)$/);
    const [refused, bash] = model.toolResults(1);
    assert.match(refused ?? "", /^Not asked: ask_owner must be the only tool call of its message, and this message also calls bash\./);
    assert.equal(bash, "hi\n", "the other call ran");
    assert.equal(core.all.filter((m) => m.type === "ask_owner").length, 1, "the refused one never reached the core");
    // The lone ask_owner ended the run: no model request until the answer arrives.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(model.requests.length, 2);
    assert.deepEqual(results, [], "a run that ended on ask_owner has no result");
    const conn = core.registered();
    assert.ok(conn !== undefined);
    core.send(conn, { type: "deliver", message: delivery(890, "Yes, include it", { kind: "answer", ask_id: 12, question: "Include the CLI?", from: OWNER }) });
    await until("the result", () => results.length === 1);
    assert.equal(model.lastText(2), '[shepherd] Answer to your question #12, from your owner "app" (owner-1):\nQuestion: Include the CLI?\nAnswer: Yes, include it');
    assert.deepEqual(results, ["Three callers skip the limiter."]);
    await until("both deliveries acked", () => core.all.filter((m) => m.type === "ack").flatMap((m) => (m.type === "ack" ? m.ids : [])).length === 2);
  });

  test("as a delegating worker: the owner tools too; with --tools only what the list allows (and ask_owner)", async () => {
    const results: string[] = [];
    const delegating = await startPi({
      launch: "nonce-2",
      script: [{ text: "done" }],
      respond: workerCore((id) => workerRecord({ session_id: id, state: "working", pending_ask: null, delegates: true }), results),
    });
    await until("the delegating worker's first request", () => delegating.model.requests.length === 1);
    assert.deepEqual(delegating.model.toolsOffered(0), [
      "approve_agent",
      "ask_owner",
      "bash",
      "close_agent",
      "continue_agent",
      "delegate_agent",
      "edit",
      "inspect_agent",
      "interrupt_agent",
      "list_agents",
      "read",
      "read_agent_transcript",
      "reply_agent",
      "steer_agent",
      "write",
    ]);
    const listed = await startPi({
      launch: "nonce-3",
      args: ["--tools", "read,ask_owner"],
      script: [{ text: "done" }],
      respond: workerCore((id) => workerRecord({ session_id: id, state: "working", pending_ask: null, delegates: true }), results),
    });
    await until("the listed worker's first request", () => listed.model.requests.length === 1);
    assert.deepEqual(listed.model.toolsOffered(0), ["ask_owner", "read"]);
  });

  test("a worker's result made while the core was away reaches it once the core is back, once", async () => {
    const results: string[] = [];
    const run = await startPi({
      launch: "nonce-4",
      script: [{ text: "Three callers skip the limiter.", delayMs: 1500 }],
      respond: workerCore((id) => workerRecord({ session_id: id, state: "working", pending_ask: null }), results),
    });
    const { core, model } = run;
    await until("the task's model request", () => model.requests.length === 1);
    await core.kill();
    // The run settles while nothing listens; the extension keeps the result.
    await new Promise((r) => setTimeout(r, 2500));
    await core.listen();
    await until("the result, after registering again", () => results.length === 1);
    assert.deepEqual(results, ["Three callers skip the limiter."]);
    assert.equal(core.all.filter((m) => m.type === "register").length, 2);
    assert.equal(model.requests.length, 1, "the task delivered again is recognised, not run twice");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(results.length, 1);
  });

  test("as an owner: no ask_owner; a worker's question starts a turn; reply_agent and delegate_agent reach the core", async () => {
    const results: string[] = [];
    const run = await startPi({
      launch: null,
      script: [
        { tools: [["reply_agent", { agent: "scout-1", answer: "yes" }]] },
        { tools: [["delegate_agent", { definition: "scout", task: "look at admin", label: "scout-2" }]] },
        { text: "Waiting for scout-2." },
      ],
      respond: (msg, sessionId) => {
        switch (msg.type) {
          case "register":
            return [
              { type: "registered", id: msg.id, session: sessionInfo(sessionId, "app"), pending: 1, pairings: [] },
              {
                type: "deliver",
                message: delivery(887, "Agent question · agent=scout-1 · definition=scout · ask=12\n\nInclude the CLI?", {
                  kind: "agent_ask",
                  ask_id: 12,
                  question: "Include the CLI?",
                  from: { kind: "pi", session_id: "w-1", name: "scout-1" },
                }),
              },
            ];
          case "reply_agent":
            return [{ type: "worker", id: msg.id, worker: workerRecord({ state: "working", pending_ask: null }) }];
          case "delegate_agent":
            return [{ type: "worker", id: msg.id, worker: workerRecord({ id: 8, label: "scout-2", state: "starting", pending_ask: null }) }];
          case "result":
            results.push(msg.text);
            return undefined;
          default:
            return undefined;
        }
      },
    });
    const { core, model } = run;
    await until("the owner's result", () => results.length === 1);
    const register = core.all.find((m) => m.type === "register");
    assert.ok(register?.type === "register");
    assert.equal("launch" in register.session, false);
    const offered = model.toolsOffered(0);
    assert.ok(!offered.includes("ask_owner"), offered.join(","));
    for (const t of ["list_agents", "delegate_agent", "reply_agent", "ask_human", "report"]) assert.ok(offered.includes(t), t);
    assert.match(model.lastText(0), /^\[shepherd\] Question #12 from your managed worker "scout-1", which waits until you answer\./);
    assert.deepEqual(
      core.all.filter((m) => m.type === "reply_agent" || m.type === "delegate_agent"),
      [
        { type: "reply_agent", id: core.all.find((m) => m.type === "reply_agent")?.id ?? -1, agent: "scout-1", answer: "yes" },
        { type: "delegate_agent", id: core.all.find((m) => m.type === "delegate_agent")?.id ?? -1, definition: "scout", task: "look at admin", label: "scout-2" },
      ],
    );
    assert.match(model.lastText(2), /^Accepted: worker scout-2 was started \(definition scout, id 8, starting\)\. This does not wait for the work/);
    assert.deepEqual(results, ["Waiting for scout-2."]);
  });
});
