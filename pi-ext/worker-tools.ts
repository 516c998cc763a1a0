// Managed workers' glue to Pi: the owner tools (list_agents, delegate_agent, continue_agent,
// steer_agent, interrupt_agent, reply_agent, close_agent, inspect_agent,
// read_agent_transcript, approve_agent: a worker's tool call held for approval), a worker's ask_owner, and the `/agents` command. Every tool is
// registered once; workers.ts decides which are active (ask_owner only in a worker, the owner
// tools everywhere but in a leaf worker). The core decides everything that matters (which
// definitions exist, who owns which worker, what a worker's state allows); this file turns its
// answers into text the model can act on, and its refusals into `<what>: <the core's
// reason>` with `details.reason`. One rule is checked here before the core is asked:
// ask_owner must be the only tool call of its assistant message. Delegation never blocks:
// each tool returns once the core accepted the request, and results and questions come back
// later as messages (inbox.ts). Nothing here throws into Pi.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

import type { CoreClient } from "./client.ts";
import { commandFailed, commandSession, guarded, message, notRunning, refusal, result, show, type ToolGlue } from "./tool-glue.ts";
import type { Workers } from "./workers.ts";
import type { AgentDef, Ask, Json, UsageReport, Worker } from "./wire.ts";

/** What this file needs from the extension's per-session state (session.ts). */
export interface WorkerSession {
  ctx: ExtensionContext;
  readonly client: CoreClient;
  readonly workers: Workers;
  readonly openAsks: Map<number, Ask>;
  log(line: string): void;
  recordError(context: string, e: unknown): void;
  refreshStatusLine(): void;
}

// ---- what the model reads ----------------------------------------------------------------

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();
}

/** The agent definitions as a table (usable ones), then the broken files with their error. */
export function agentsText(defs: readonly AgentDef[]): string {
  if (defs.length === 0) return "No agent definitions are available.";
  const usable = defs.filter((d) => d.error === null);
  const broken = defs.filter((d) => d.error !== null);
  const lines = [
    `Agent definitions (${usable.length}); start one with delegate_agent {definition: <name>, task}:`,
    "| name | description | enabled | model | thinking | tools | may delegate to | source |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const d of usable) {
    const tools = d.tools === null ? "Pi's defaults" : d.tools.length === 0 ? "none" : d.tools.join(", ");
    const excluded = d.exclude_tools.length === 0 ? "" : ` (not ${d.exclude_tools.join(", ")})`;
    lines.push(
      `| ${cell(d.name)} | ${cell(d.description === "" ? "-" : d.description)} | ${d.enabled ? "yes" : "no (disabled)"} | ` +
        `${cell(d.model ?? "inherited")} | ${d.thinking ?? "inherited"} | ${cell(tools + excluded)} | ` +
        `${d.agents.length === 0 ? "- (a leaf)" : cell(d.agents.join(", "))} | ${d.source} |`,
    );
  }
  if (broken.length > 0) {
    lines.push("", `Broken definitions (${broken.length}; they cannot be used until fixed):`);
    for (const d of broken) lines.push(`- ${d.name}: ${d.error ?? ""}`);
  }
  return lines.join("\n");
}

function stateText(w: Worker): string {
  if (w.state === "blocked" && w.pending_ask !== null) return `blocked (question #${w.pending_ask} waits for your reply_agent)`;
  return w.state;
}

function clip(text: string, n: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length <= n ? one : `${one.slice(0, n - 1)}…`;
}

/** One worker as a row the model can act on: the label first, then what it may do now. */
export function workerLine(w: Worker, me: string | null): string {
  const parts = [w.label, `definition ${w.definition}`, stateText(w)];
  parts.push(w.available_actions.length === 0 ? "actions: none" : `actions: ${w.available_actions.join(", ")}`);
  if (me !== null && w.owner_id !== me) parts.push(`worker of your worker "${w.owner_name}" (only its owner can act on it)`);
  parts.push(`session ${w.session_file ?? w.session_id}`);
  parts.push(`task "${clip(w.task, 80)}"`);
  return `- ${parts.join(" · ")}`;
}

/** "Your workers:" and a row per worker (`me`: this session's id, to tell its own workers from theirs). */
export function workersText(workers: readonly Worker[], me: string | null): string {
  if (workers.length === 0) return "Your workers: none.";
  return `Your workers (${workers.length}; address one by its label):\n${workers.map((w) => workerLine(w, me)).join("\n")}`;
}

/** After delegate_agent and continue_agent: accepted, not done; nothing to poll. */
export function acceptedText(w: Worker, continued: boolean): string {
  const what = continued ? `continues its saved session as worker ${w.label}` : `worker ${w.label} was started`;
  return (
    `Accepted: ${what} (definition ${w.definition}, id ${w.id}, ${w.state}). This does not wait for the work: ` +
    `its result arrives later as a message "[shepherd] Result from your managed worker "${w.label}"", and a question ` +
    `from it as a message too. Do not poll or inspect it to wait: end your turn or keep working on something else.`
  );
}

/** After steer, interrupt, reply and close. */
export function actionText(action: "steer" | "interrupt" | "reply" | "close", w: Worker): string {
  switch (action) {
    case "steer":
      return `Steered ${w.label} (${w.state}): it reads your message at its next step. No second result comes from it; its one result arrives later as a message.`;
    case "interrupt":
      return `Interrupted ${w.label} (${w.state}): its current step is aborted and it continues the same assignment with your message. Its result arrives later as a message.`;
    case "reply":
      return `Replied to ${w.label} (${w.state}): it continues its assignment with your answer. Its result arrives later as a message.`;
    case "close":
      return (
        `Closed ${w.label} (${w.state}); its own workers were closed first and no result will come. Its session is kept: ` +
        `continue_agent {session: "${w.session_file ?? w.session_id}", task} starts it again.`
      );
  }
}

/** The local refusal of an ask_owner made beside other tool calls. */
export function notAloneText(others: readonly string[]): string {
  return (
    `Not asked: ask_owner must be the only tool call of its message, and this message also calls ${others.join(", ")}. ` +
    `Nothing was sent to your owner. Let those calls finish, then call ask_owner alone.`
  );
}

/** After ask_owner: the run ends here; the reply comes as a message. */
export function askedOwnerText(ask: Ask): string {
  return (
    `Asked your owner (question #${ask.id}); the reply arrives as a message beginning with ` +
    `"[shepherd] Answer to your question #${ask.id}". Your turn ends now: do not wait or poll.`
  );
}

/** `/agents stats`: this session's and its workers' tokens and cost, per session and model. */
export function statsText(report: UsageReport): string {
  const tokens = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n));
  const money = (c: number) => `$${c.toFixed(4)}`;
  const lines = [
    `Usage: ${tokens(report.total.total_tokens)} tokens, ${money(report.total.cost)} ` +
      `(${report.sessions.length} session${report.sessions.length === 1 ? "" : "s"}: this one and its workers)`,
  ];
  for (const s of report.sessions) {
    lines.push(
      s.error !== undefined
        ? `- ${s.name}: not counted (${s.error})`
        : `- ${s.name}: ${tokens(s.total_tokens)} tokens, ${money(s.cost)}`,
    );
  }
  if (report.models.length > 0) lines.push("By model:");
  for (const m of report.models) {
    lines.push(`- ${m.model ?? "(no model recorded)"}: ${tokens(m.total_tokens)} tokens, ${money(m.cost)}`);
  }
  if (!report.complete) {
    lines.push(`Coverage incomplete: ${report.missing.map((m) => `${m.session_id.slice(0, 8)} (${m.reason})`).join("; ")}`);
  }
  return lines.join("\n");
}

export const AGENTS_USAGE = "usage: /agents (your workers), /agents all (ended ones too), /agents stats (usage totals)";

// ---- tools ---------------------------------------------------------------------------------

const NOT_RUNNING = notRunning({ reason: "not_running" });

function workerDetails(w: Worker): Record<string, Json> {
  return { worker: w.id, label: w.label, state: w.state, available_actions: [...w.available_actions] };
}

const NON_BLOCKING =
  "Non-blocking: returns once accepted; the result arrives later as a message; do not poll, end your turn or keep working.";
const AGENT = "The worker's label, as list_agents shows it under \"Your workers\".";

function sessionId(s: WorkerSession): string | null {
  try {
    return s.ctx.sessionManager.getSessionId();
  } catch {
    return null;
  }
}

/** Registers the tools and `/agents`; `current` is the live session, or null. */
export function registerWorkerTools(pi: ExtensionAPI, current: () => WorkerSession | null): void {
  const glue: ToolGlue<WorkerSession> = { current, notRunning: NOT_RUNNING, refusal };
  pi.registerTool({
    name: "list_agents",
    label: "List agents",
    description:
      "List the agent definitions you can delegate to (name, description, model, tools, whether it may delegate " +
      "further, where it is defined; broken files with their error), then your managed workers with their " +
      "label, definition, state and the actions available on each now.",
    parameters: Type.Object({}),
    execute: guarded(glue, "list_agents", "No list", async (s, _params) => {
      const defs = await s.client.listAgents();
      let workers: string;
      try {
        workers = workersText(await s.client.listWorkers(), sessionId(s));
      } catch (e) {
        workers = `Your workers: could not be listed (${message(e)}).`;
      }
      return result(`${agentsText(defs)}\n\n${workers}`, { agents: defs.map((d) => d.name) });
    }),
  });

  pi.registerTool({
    name: "delegate_agent",
    label: "Delegate to an agent",
    description:
      "Hand bounded work to a new managed worker: another Pi session running the agent definition `definition` " +
      "(list_agents names them) on `task`, in this directory. " +
      NON_BLOCKING +
      " The worker may ask you a question (it arrives as a message; answer with reply_agent).",
    promptSnippet: "Delegate a bounded task to a managed worker; its result arrives later as a message",
    promptGuidelines: [
      "delegate_agent does not wait for the work: after it, keep working or end your turn; never poll for the result.",
    ],
    parameters: Type.Object({
      definition: Type.String({ minLength: 1, description: "The agent definition's name, as list_agents shows it." }),
      task: Type.String({ minLength: 1, description: "The assignment, self-contained: the worker sees nothing else of this session." }),
      label: Type.Optional(
        Type.String({
          pattern: "^[a-z][a-z0-9_-]{0,31}$",
          description: "A label for the worker (lowercase, unique among your live workers); default: the definition's name with a number.",
        }),
      ),
      fork: Type.Optional(Type.String({ minLength: 1, description: "Start from a copy of this saved session (its file path or id)." })),
    }),
    execute: guarded(glue, "delegate_agent", "Not delegated", async (s, params) => {
      const w = await s.client.delegateAgent(params.definition, params.task, params.label ?? null, params.fork ?? null);
      s.log(`delegate_agent: worker ${w.id} "${w.label}" (${w.definition}) ${w.state}`);
      return result(acceptedText(w, false), workerDetails(w));
    }),
  });

  pi.registerTool({
    name: "continue_agent",
    label: "Continue an agent",
    description:
      "Start a new assignment on a saved worker session (its file path or id, as a result or list_agents shows it): " +
      "it runs in that session's directory with its definition read again. Refused while that session has a live worker. " +
      NON_BLOCKING,
    parameters: Type.Object({
      session: Type.String({ minLength: 1, description: "The saved worker session's file path or id." }),
      task: Type.String({ minLength: 1, description: "The new assignment." }),
    }),
    execute: guarded(glue, "continue_agent", "Not continued", async (s, params) => {
      const w = await s.client.continueAgent(params.session, params.task);
      s.log(`continue_agent: worker ${w.id} "${w.label}" on ${w.session_id}`);
      return result(acceptedText(w, true), workerDetails(w));
    }),
  });

  pi.registerTool({
    name: "steer_agent",
    label: "Steer an agent",
    description:
      "Redirect one of your working workers: your message reaches it at its next step and changes its current " +
      "assignment (no second result). Returns at once; do not poll.",
    parameters: Type.Object({
      agent: Type.String({ minLength: 1, description: AGENT }),
      message: Type.String({ minLength: 1, description: "The instruction, as you would say it to the worker." }),
    }),
    execute: guarded(glue, "steer_agent", "Not steered", async (s, params) => {
      const w = await s.client.workerAction("steer", params.agent, params.message);
      s.log(`steer_agent: "${w.label}" now ${w.state}`);
      return result(actionText("steer", w), workerDetails(w));
    }),
  });

  pi.registerTool({
    name: "interrupt_agent",
    label: "Interrupt an agent",
    description:
      "Abort what one of your workers is doing right now and have it continue the same assignment with your " +
      "message instead. Returns at once; do not poll.",
    parameters: Type.Object({
      agent: Type.String({ minLength: 1, description: AGENT }),
      message: Type.String({ minLength: 1, description: "What it should do instead." }),
    }),
    execute: guarded(glue, "interrupt_agent", "Not interrupted", async (s, params) => {
      const w = await s.client.workerAction("interrupt", params.agent, params.message);
      s.log(`interrupt_agent: "${w.label}" now ${w.state}`);
      return result(actionText("interrupt", w), workerDetails(w));
    }),
  });

  pi.registerTool({
    name: "reply_agent",
    label: "Reply to an agent",
    description:
      "Answer the question one of your workers asked you (it arrived as a message \"[shepherd] Question #<id> from " +
      "your managed worker\"); it then continues its assignment. Returns at once; its result arrives later as a message.",
    parameters: Type.Object({
      agent: Type.String({ minLength: 1, description: AGENT }),
      answer: Type.String({ minLength: 1, description: "Your answer, as the worker should read it." }),
    }),
    execute: guarded(glue, "reply_agent", "Not replied", async (s, params) => {
      const w = await s.client.workerAction("reply", params.agent, params.answer);
      s.log(`reply_agent: "${w.label}" now ${w.state}`);
      return result(actionText("reply", w), workerDetails(w));
    }),
  });

  pi.registerTool({
    name: "close_agent",
    label: "Close an agent",
    description:
      "Close one of your workers (its own workers first): its process stops, a question it asked is dropped and no " +
      "result will come. Its session is kept for continue_agent.",
    parameters: Type.Object({ agent: Type.String({ minLength: 1, description: AGENT }) }),
    execute: guarded(glue, "close_agent", "Not closed", async (s, params) => {
      const w = await s.client.workerAction("close", params.agent, "");
      s.log(`close_agent: "${w.label}" now ${w.state}`);
      return result(actionText("close", w), workerDetails(w));
    }),
  });

  pi.registerTool({
    name: "approve_agent",
    label: "Decide a worker's held tool call",
    description:
      "Decide one of your worker's tool calls that waits for approval (you are told of each, with its number): " +
      "allow it once, allow it for the rest of the worker's session (the same rule stops asking it), or deny it " +
      "with a reason the worker reads. The human may decide it too; the first decision wins.",
    parameters: Type.Object({
      agent: Type.String({ minLength: 1, description: AGENT }),
      approval: Type.Integer({ minimum: 1, description: "The approval's number, from the notice." }),
      decision: Type.Union([Type.Literal("allow"), Type.Literal("allow_session"), Type.Literal("deny")]),
      reason: Type.Optional(Type.String({ description: "For deny: what the worker reads." })),
    }),
    execute: guarded(glue, "approve_agent", "Not decided", async (s, params) => {
      const a = await s.client.approveAgent(params.agent, params.approval, params.decision, params.reason ?? null);
      s.log(`approve_agent: approval ${a.id} ${a.state}`);
      return result(`Approval #${a.id} (${a.tool} \`${a.subject}\`): ${a.state}.`, { approval: a.id, state: a.state });
    }),
  });

  pi.registerTool({
    name: "inspect_agent",
    label: "Inspect an agent",
    description:
      "A bounded live view (at most 16 KiB) of what one of your workers did recently: messages, tool calls and " +
      "results, errors. Not a way to wait for it: its result arrives as a message by itself.",
    parameters: Type.Object({ agent: Type.String({ minLength: 1, description: AGENT }) }),
    execute: guarded(glue, "inspect_agent", "No view", async (s, params) => {
      const got = await s.client.agentText("inspect", params.agent);
      return result(`${got.worker.label} (${stateText(got.worker)}), live view:\n\n${got.text}`, workerDetails(got.worker));
    }),
  });

  pi.registerTool({
    name: "read_agent_transcript",
    label: "Read an agent's transcript",
    description:
      "The saved conversation of one of your workers (at most 16 KiB, the newest kept), also after it ended.",
    parameters: Type.Object({ agent: Type.String({ minLength: 1, description: AGENT }) }),
    execute: guarded(glue, "read_agent_transcript", "No transcript", async (s, params) => {
      const got = await s.client.agentText("transcript", params.agent);
      return result(`${got.worker.label} (${stateText(got.worker)}), transcript:\n\n${got.text}`, workerDetails(got.worker));
    }),
  });

  pi.registerTool({
    name: "ask_owner",
    label: "Ask your owner",
    description:
      "Managed workers only: ask the session that gave you your task (your owner) a question you cannot settle " +
      "yourself. It must be the ONLY tool call of its message and ends your turn; the reply arrives later as a " +
      "message. One question at a time; no timeout.",
    promptSnippet: "Ask your owner a question (the only tool call of the message); the reply arrives later as a message",
    promptGuidelines: ["Call ask_owner alone, with no other tool call in the same message; your turn ends with it."],
    parameters: Type.Object({ question: Type.String({ minLength: 1, description: "The question, self-contained." }) }),
    defaultActive: false,
    execute: guarded(glue, "ask_owner", "Not asked", async (s, params, toolCallId) => {
      const others = s.workers.othersBeside(toolCallId);
      if (others.length > 0) {
        s.log(`ask_owner refused: beside ${others.join(", ")}`);
        return result(notAloneText(others), { refused: "not_alone", reason: "not_only_tool_call", others: [...others] }, true);
      }
      const ask = await s.client.askOwner(params.question);
      s.openAsks.set(ask.id, ask);
      s.refreshStatusLine();
      s.log(`ask_owner: ask ${ask.id}`);
      return { ...result(askedOwnerText(ask), { askId: ask.id }), terminate: true };
    }),
  });

  pi.registerCommand("agents", {
    description: "List your managed workers (`/agents all`: ended ones too); `/agents stats`: usage totals",
    handler: async (args, ctx) => {
      const s = commandSession(current, ctx);
      if (s === null) return;
      const word = args.trim().toLowerCase();
      if (word === "stats") {
        try {
          show(ctx, statsText(await s.client.usage()), "info");
        } catch (e) {
          commandFailed(s, ctx, "/agents stats", e);
        }
        return;
      }
      if (word !== "" && word !== "all") {
        show(ctx, `shepherd: ${AGENTS_USAGE}`, "warning");
        return;
      }
      try {
        const workers = await s.client.listWorkers(word === "all");
        show(ctx, workersText(workers, sessionId(s)), "info");
      } catch (e) {
        commandFailed(s, ctx, "/agents", e);
      }
    },
  });
}
