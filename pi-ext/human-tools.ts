// The human-facing tools every session has: ask_human (a question the human decides; the
// answer comes back later as a message, inbox.ts) and report (information, no answer). Both
// are sent at once, or queued in the session while the core is away and sent exactly once when
// it is back (outbox.ts, through the session's sendOrQueue). The core decides what the human
// sees; this file turns its answers and refusals into text for the model. Nothing here throws
// into Pi.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

import { CoreError, type CoreClient } from "./client.ts";
import { newKey, type OutboxItem } from "./outbox.ts";
import { askItem, askParameters, errorText, notRunning, result } from "./tool-glue.ts";
import type { Ask } from "./wire.ts";

/** What this file needs from the extension's per-session state (session.ts). */
export interface HumanSession {
  ctx: ExtensionContext;
  readonly client: CoreClient;
  readonly openAsks: Map<number, Ask>;
  /** Send now, or queue in the session while the core is away (outbox.ts). */
  sendOrQueue<T>(item: OutboxItem, send: () => Promise<T>): Promise<{ sent: T } | { queued: true }>;
  log(line: string): void;
  recordError(context: string, e: unknown): void;
  refreshStatusLine(): void;
}

/** ask_human while the core is away: queued in the session, sent once when it is back. */
const QUEUED_ASK =
  "Queued, will be sent when shepherd is back: the shepherd core is not reachable right now " +
  "(starting or restarting), so the question waits in this session and goes to the human " +
  "exactly once when it reconnects. The answer will arrive as a new message beginning with " +
  "\"[shepherd] Answer to your question\". End your turn now; do not wait or poll for it.";

/** report while the core is away. */
const QUEUED_REPORT =
  "Queued, will be sent when shepherd is back: the shepherd core is not reachable right now, " +
  "so the report waits in this session and is sent exactly once when it reconnects.";

/** After ask_human. */
function askedText(id: number): string {
  return (
    `Question #${id} was sent to the human. The answer will arrive as a new message ` +
    `beginning with "[shepherd] Answer to your question #${id}". End your turn now; ` +
    `do not wait or poll for it.`
  );
}

/** Why an ask or report was not sent: the core's refusal (with its code), or the trouble. */
function why(e: unknown): string {
  return e instanceof CoreError ? `the shepherd core refused it (${e.message})` : errorText(e);
}

/** Registers ask_human and report; `current` is the live session, or null. */
export function registerHumanTools(pi: ExtensionAPI, current: () => HumanSession | null): void {
  pi.registerTool({
    name: "ask_human",
    label: "Ask the human",
    description:
      "Ask the human who supervises this session a question that needs their decision. " +
      "Non-blocking: the question is sent at once and this tool returns immediately; the answer " +
      "arrives later as a new message beginning with \"[shepherd] Answer to your question #<id>\". " +
      "After calling it, end your turn: do not wait, poll or guess the answer.",
    promptSnippet: "Ask the supervising human a question; the answer arrives later as a message",
    promptGuidelines: [
      "Use ask_human only for decisions you cannot make yourself; after calling ask_human, end your turn and wait for the answer message.",
    ],
    parameters: askParameters(
      "Short answers the human can pick (at most 10, each at most 100 characters).",
      "Context the human needs to decide.",
    ),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const s = current();
      if (s === null) return notRunning({ askId: null });
      s.ctx = ctx;
      const item = askItem(params);
      try {
        const sent = await s.sendOrQueue(item, () => s.client.ask(item.question, item.options, item.details, item.key));
        if ("queued" in sent) {
          s.log(`ask ${item.key} queued`);
          return { ...result(QUEUED_ASK, { askId: null, queued: item.key }), terminate: true };
        }
        const ask = sent.sent;
        s.openAsks.set(ask.id, ask);
        s.refreshStatusLine();
        s.log(`ask ${ask.id} sent`);
        return { ...result(askedText(ask.id), { askId: ask.id }), terminate: true };
      } catch (e) {
        s.recordError("ask_human", e);
        return result(`Not sent: ${why(e)}. The human has not seen this question.`, { askId: null }, true);
      }
    },
  });

  pi.registerTool({
    name: "report",
    label: "Report",
    description:
      "Send information (progress, a result, a warning) to whoever supervises this session, " +
      "without asking anything. Returns at once; no answer comes back.",
    promptSnippet: "Send information to the supervising human without asking a question",
    parameters: Type.Object({
      text: Type.String({ minLength: 1, description: "What to report." }),
    }),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const s = current();
      if (s === null) return notRunning({ reportId: null });
      s.ctx = ctx;
      const item: OutboxItem = { kind: "report", key: newKey("report"), text: params.text, queuedAt: Date.now() };
      try {
        const sent = await s.sendOrQueue(item, () => s.client.report(item.text, item.key));
        if ("queued" in sent) {
          s.log(`report ${item.key} queued`);
          return result(QUEUED_REPORT, { reportId: null, queued: item.key });
        }
        const report = sent.sent;
        s.log(`report ${report.id} sent`);
        return result(`Report #${report.id} was sent.`, { reportId: report.id });
      } catch (e) {
        s.recordError("report", e);
        return result(`Not sent: ${why(e)}.`, { reportId: null }, true);
      }
    },
  });
}
