// Supervisor mode's glue to Pi: the `/supervise` command, the verdict tools (worker_view,
// set_goal, steer, let_it_run, done), the pruning of old looks before each model call, and
// the plain-text question a supervisor ends its turn with, forwarded to the human as an ask.
// The core decides everything that matters (who may pair, what a view holds, which verdicts
// are refused); this file turns its answers into text for the human or the model. The tools
// are registered once, inactive (supervision.ts activates them while the session
// supervises). Nothing here throws into Pi: every failure becomes a notice or a tool result.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

import { CoreError, type CoreClient } from "./client.ts";
import type { ShepherdConfig } from "./config.ts";
import { goalText, workerLabel } from "./policy.ts";
import { pruneLooks } from "./prune.ts";
import { parseSuperviseArgs, SUPERVISE_USAGE, type SuperviseCommand } from "./supervise-args.ts";
import { questionForHuman, type Supervision } from "./supervision.ts";
import { commandFailed, commandSession, guarded, message, result, show, type Level, type ToolGlue, type ToolText } from "./tool-glue.ts";
import type { Ask, Json, Pairing, VerdictKind } from "./wire.ts";

/** What this file needs from the extension's per-session state (session.ts). */
export interface SupervisorSession {
  ctx: ExtensionContext;
  readonly client: CoreClient;
  readonly supervision: Supervision;
  readonly config: ShepherdConfig;
  readonly openAsks: Map<number, Ask>;
  log(line: string): void;
  recordError(context: string, e: unknown): void;
  refreshStatusLine(): void;
}

/** How the model is told to end its turn after a verdict. */
export const END_TURN = "End your turn now: reply in one short line, no more tool calls.";
const END_TURN_LOWER = "end your turn now: reply in one short line, no more tool calls.";

// ---- /supervise ------------------------------------------------------------------------

/** One session the core offered when `/supervise` matched several. */
export interface Candidate {
  id: string;
  name: string;
  cwd: string | null;
  connected: boolean | null;
}

/** `details.candidates` of an `ambiguous_session` error, read defensively. */
export function candidatesOf(details: Json): Candidate[] {
  if (typeof details !== "object" || details === null || Array.isArray(details)) return [];
  const list = details["candidates"];
  if (!Array.isArray(list)) return [];
  return list.flatMap((c): Candidate[] => {
    if (typeof c !== "object" || c === null || Array.isArray(c)) return [];
    const id = c["id"];
    const name = c["name"];
    if (typeof id !== "string" || id === "") return [];
    const cwd = c["cwd"];
    const connected = c["connected"];
    return [
      {
        id,
        name: typeof name === "string" ? name : id,
        cwd: typeof cwd === "string" ? cwd : null,
        connected: typeof connected === "boolean" ? connected : null,
      },
    ];
  });
}

/** Picker labels: name, id prefix and cwd; distinct (full ids when prefixes collide). */
export function candidateLabels(candidates: readonly Candidate[]): string[] {
  const label = (c: Candidate, id: string): string =>
    `${c.name} (${id})${c.cwd === null ? "" : ` in ${c.cwd}`}${c.connected === false ? " [not connected]" : ""}`;
  const short = candidates.map((c) => label(c, c.id.slice(0, 8)));
  return new Set(short).size === short.length ? short : candidates.map((c) => label(c, c.id));
}

function pairedText(p: Pairing): string {
  return `shepherd: supervising ${workerLabel(p)}, pairing ${p.id}\ngoal: ${goalText(p)}`;
}

async function startPairing(
  s: SupervisorSession,
  cmd: Extract<SuperviseCommand, { kind: "start" }>,
  ctx: ExtensionContext,
): Promise<{ text: string; level: Level } | null> {
  const request = { cwd: ctx.cwd, ...(cmd.worker === undefined ? {} : { worker: cmd.worker }), ...(cmd.goal === undefined ? {} : { goal: cmd.goal }) };
  try {
    return { text: pairedText(await s.client.supervise(request)), level: "info" };
  } catch (e) {
    if (!(e instanceof CoreError) || e.code !== "ambiguous_session") throw e;
    const candidates = candidatesOf(e.details);
    if (!ctx.hasUI || candidates.length === 0) return { text: `shepherd: ${e.coreMessage}`, level: "warning" };
    const labels = candidateLabels(candidates);
    const choice = await ctx.ui.select("Supervise which session?", labels);
    const picked = choice === undefined ? undefined : candidates[labels.indexOf(choice)];
    if (picked === undefined) return { text: "shepherd: /supervise cancelled", level: "info" };
    return { text: pairedText(await s.client.supervise({ ...request, worker: picked.id })), level: "info" };
  }
}

/** Runs one parsed command; the text to show, or null when supervision.ts already said it. */
export async function runSuperviseCommand(
  s: SupervisorSession,
  cmd: SuperviseCommand,
  ctx: ExtensionContext,
): Promise<{ text: string; level: Level } | null> {
  switch (cmd.kind) {
    case "help":
      return { text: SUPERVISE_USAGE, level: "info" };
    case "invalid":
      return { text: `shepherd: ${cmd.message}\n${SUPERVISE_USAGE}`, level: "warning" };
    case "start":
      return startPairing(s, cmd, ctx);
    case "stop": {
      const p = await s.client.unpair();
      // The supervisor's side is announced by supervision.ts as the pairing ends.
      if (p.supervisor_id === s.ctx.sessionManager.getSessionId()) return null;
      return { text: `shepherd: pairing ${p.id} stopped; "${p.supervisor_name}" no longer supervises this session`, level: "info" };
    }
    case "goal": {
      const p = await s.client.setGoal(cmd.goal, ctx.cwd);
      return { text: `shepherd: goal of pairing ${p.id} set:\n${goalText(p)}`, level: "info" };
    }
    case "look": {
      const p = await s.client.look();
      return { text: `shepherd: look requested at "${p.worker_name}"; the view arrives as the next message`, level: "info" };
    }
    case "status": {
      if (s.client.ready) {
        try {
          s.supervision.sync(await s.client.listPairings(), "list");
        } catch (e) {
          s.recordError("list_pairings", e);
        }
      }
      const stale = s.client.ready ? "" : "\n(not connected to the core: as last known)";
      return { text: `shepherd: ${s.supervision.statusText()}${stale}`, level: "info" };
    }
  }
}

// ---- verdict tools ---------------------------------------------------------------------

const NOT_RUNNING = result("The shepherd extension is not running in this session.", {}, true);

/** worker_view's and set_goal's failure: `<what>: <the core's message>`, no details. */
function failed(what: string, e: unknown): ToolText {
  return result(`${what}: ${message(e)}`, {}, true);
}

/** What the model reads after a verdict the core accepted. */
export function verdictAcceptedText(kind: VerdictKind, worker: string, hint: string | null): string {
  let text: string;
  switch (kind) {
    case "steer":
      text = `Steer sent to "${worker}". Verdict recorded. ${END_TURN}`;
      break;
    case "let_it_run":
      text = `Verdict recorded: let it run. ${END_TURN}`;
      break;
    case "done":
      text = `Verdict recorded: done. The pairing has ended. ${END_TURN}`;
      break;
  }
  return hint === null ? text : `${text}\nNote from shepherd: ${hint}`;
}

async function verdict(kind: VerdictKind, text: string, s: SupervisorSession | null, ctx: ExtensionContext): Promise<ToolText> {
  if (s === null) return NOT_RUNNING;
  s.ctx = ctx;
  try {
    const res = await s.client.verdict(kind, text);
    s.log(`verdict ${kind} accepted (look ${res.verdict.look})${res.hint === null ? "" : `, hint: ${res.hint}`}`);
    return result(verdictAcceptedText(kind, res.pairing.worker_name, res.hint), {
      verdict: kind,
      look: res.verdict.look,
      pairing_id: res.pairing.id,
      hint: res.hint,
    });
  } catch (e) {
    s.recordError(`verdict ${kind}`, e);
    if (e instanceof CoreError && e.code === "runaway") {
      try {
        ctx.abort();
      } catch (abortError) {
        s.recordError("abort", abortError);
      }
      return result(`Not recorded: ${e.coreMessage} This turn is being stopped; wait for the next look.`, { verdict: kind, refused: "runaway" }, true);
    }
    if (e instanceof CoreError && e.code === "verdict_refused") {
      return result(`Not recorded: ${e.coreMessage}`, { verdict: kind, refused: "verdict_refused" }, true);
    }
    if (e instanceof CoreError && e.code === "not_paired") {
      return result(`Not recorded: ${e.coreMessage} You are not supervising anyone now. ${END_TURN}`, { verdict: kind, refused: "not_paired" }, true);
    }
    if (e instanceof CoreError && e.code === "invalid_argument") {
      return result(`Not recorded: ${e.coreMessage} Call the verdict again with it, or ${END_TURN_LOWER}`, { verdict: kind, refused: "invalid_argument" }, true);
    }
    return result(`Not recorded: ${message(e)}. Try again at the next look; ${END_TURN_LOWER}`, { verdict: kind, refused: e instanceof CoreError ? e.code : "error" }, true);
  }
}

/** Registers the command, tools and hooks; `current` is the live session, or null. */
export function registerSupervisor(pi: ExtensionAPI, current: () => SupervisorSession | null): void {
  const glue: ToolGlue<SupervisorSession> = { current, notRunning: NOT_RUNNING, refusal: failed };
  pi.registerCommand("supervise", {
    description: "Supervise another Pi session toward a goal: /supervise [@session] [goal|file] | goal <goal> | look | status | stop",
    handler: async (args, ctx) => {
      const s = commandSession(current, ctx);
      if (s === null) return;
      const cmd = parseSuperviseArgs(args);
      try {
        const out = await runSuperviseCommand(s, cmd, ctx);
        if (out !== null) show(ctx, out.text, out.level);
      } catch (e) {
        commandFailed(s, ctx, `/supervise ${cmd.kind}`, e);
      }
    },
  });

  pi.registerTool({
    name: "worker_view",
    label: "Worker view",
    description:
      "Supervisor only: what the worker did since the last look (messages, tool calls and results, errors, " +
      "files and commits changed), fetched now. It is not a new look and needs no verdict by itself.",
    promptSnippet: "Fetch the supervised worker's latest progress",
    parameters: Type.Object({}),
    defaultActive: false,
    execute: guarded(glue, "worker_view", "No view", async (s, _params) => {
      const view = await s.client.workerView();
      return result(view.text, {
        pairing_id: view.pairing_id,
        look: view.look,
        reason: view.reason,
        unchanged: view.unchanged,
        pending_tool_calls: view.pending_tool_calls,
      });
    }),
  });

  pi.registerTool({
    name: "set_goal",
    label: "Set goal",
    description:
      "Supervisor only: replace the pairing's goal, when the human asked for a different one. A single word " +
      "containing / or . is read as a file path relative to this session's directory.",
    parameters: Type.Object({ goal: Type.String({ minLength: 1, description: "The new goal, or a path to a goal file." }) }),
    defaultActive: false,
    execute: guarded(glue, "set_goal", "Goal not changed", async (s, params) => {
      const p = await s.client.setGoal(params.goal, s.ctx.cwd);
      return result(`Goal set:\n${goalText(p)}`, { pairing_id: p.id });
    }),
  });

  pi.registerTool({
    name: "steer",
    label: "Steer the worker",
    description:
      "Supervisor verdict: send the worker ONE concrete next action (it arrives as a user message). Use when it " +
      "is off track, stuck or looping. Refused while the pairing has no goal.",
    promptSnippet: "Verdict: give the supervised worker one concrete next action",
    promptGuidelines: ["Answer each look with exactly one verdict tool (steer, let_it_run or done), then end your turn with one short line."],
    parameters: Type.Object({ text: Type.String({ minLength: 1, description: "The one next action, as you would say it to the worker." }) }),
    defaultActive: false,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      return verdict("steer", params.text, current(), ctx);
    },
  });

  pi.registerTool({
    name: "let_it_run",
    label: "Let it run",
    description: "Supervisor verdict: the worker is on track; nothing is sent to it.",
    promptSnippet: "Verdict: the supervised worker is on track",
    parameters: Type.Object({ reason: Type.Optional(Type.String({ description: "Why, in a few words (recorded, not sent)." })) }),
    defaultActive: false,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      return verdict("let_it_run", params.reason ?? "", current(), ctx);
    },
  });

  pi.registerTool({
    name: "done",
    label: "Goal met",
    description:
      "Supervisor verdict: the goal is met; the pairing ends. Only with evidence from the views (tests that " +
      "passed, the commit, the output). Refused while the worker still has a tool call or child process running.",
    promptSnippet: "Verdict: the supervised worker met the goal (with evidence)",
    parameters: Type.Object({ evidence: Type.String({ minLength: 1, description: "What in the views shows the goal is met." }) }),
    defaultActive: false,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      return verdict("done", params.evidence, current(), ctx);
    },
  });

  pi.on("context", (event) => {
    const s = current();
    if (s === null || !s.config.prune) return undefined;
    try {
      const pruned = pruneLooks(event.messages);
      return pruned === null ? undefined : { messages: pruned };
    } catch (e) {
      s.recordError("pruning", e);
      return undefined;
    }
  });

  const asked = new Set<string>();
  pi.on("agent_end", (event, ctx) => {
    const s = current();
    if (s === null) return;
    try {
      s.ctx = ctx;
      const p = s.supervision.supervising;
      if (p === null) return;
      const question = questionForHuman(event.messages);
      if (question === null || asked.has(question)) return;
      asked.add(question);
      s.client
        .ask(question, [], `From the supervisor of "${p.worker_name}" (pairing ${p.id}).`)
        .then((ask) => {
          s.openAsks.set(ask.id, ask);
          s.refreshStatusLine();
          s.log(`supervisor question sent as ask ${ask.id}`);
        })
        .catch((e: unknown) => s.recordError("supervisor question", e));
    } catch (e) {
      s.recordError("agent_end", e);
    }
  });
}
