// The glue every tool and command module shares with Pi (human-tools.ts, supervise-pi.ts,
// role-tools.ts, worker-tools.ts, project-tools.ts, and session.ts and index.ts for errors):
// an error as one line (`message`: the core's own words for a refusal; `errorText`: with the
// error code), a notice shown to the human (stderr in print and rpc modes), a tool's text
// result, the "not running" result, the refusal the owner and project tools give (the core's
// reason in `details.reason`), an ask's parameters and outbox item (ask_human,
// ask_supervisor), and `guarded`, the `execute` of a tool that needs the live
// session: the module's not-running result without one, its ctx refreshed, and any failure
// recorded and turned into the module's refusal. A command's handler likewise gets its session
// from `commandSession` and reports a failure with `commandFailed`. Each module keeps its own
// wording (its not-running details, its refusals' text); what the model reads is decided
// there, not here. Nothing here throws into Pi.

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

import { CoreError } from "./client.ts";
import { newKey, type OutboxItem } from "./outbox.ts";
import type { Json } from "./wire.ts";

export type Level = "info" | "warning" | "error";

/** An error in one line; for a CoreError the core's own message, without its code. */
export function message(e: unknown): string {
  if (e instanceof CoreError) return e.coreMessage;
  return errorText(e);
}

/** An error in one line as it says itself (a CoreError as `<code>: <message>`). */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A notice for the human: Pi's UI when there is one, else stderr; never throws. */
export function show(ctx: ExtensionContext, text: string, level: Level): void {
  try {
    if (ctx.hasUI) ctx.ui.notify(text, level);
    else process.stderr.write(`${text}\n`);
  } catch {
    // no way to show it
  }
}

/** What a tool returns to the model: one text part and its details. */
export interface ToolText {
  content: Array<{ type: "text"; text: string }>;
  details: Record<string, Json>;
  isError?: boolean;
  terminate?: boolean;
}

export function result(text: string, details: Record<string, Json> = {}, isError = false): ToolText {
  return isError ? { content: [{ type: "text", text }], details, isError } : { content: [{ type: "text", text }], details };
}

/** A tool called while the extension has no live session (its details are the tool's own). */
export function notRunning(details: Record<string, Json>): ToolText {
  return result("Not sent: the shepherd extension is not running in this session.", details, true);
}

/** `<what>: <the core's reason>`, with `details.reason` (the core's, or `not_connected`). */
export function refusal(what: string, e: unknown): ToolText {
  if (e instanceof CoreError) {
    const d = e.details;
    const reason = typeof d === "object" && d !== null && !Array.isArray(d) && typeof d["reason"] === "string" ? d["reason"] : null;
    return result(`${what}: ${e.coreMessage}`, { refused: e.code, reason }, true);
  }
  return result(
    `${what}: the shepherd core is not reachable right now (${message(e)}); nothing was done. Try again in a moment.`,
    { refused: "not_connected", reason: "not_connected" },
    true,
  );
}

/** ask_human's and ask_supervisor's parameters; what options and details are for is each tool's. */
export function askParameters(optionsDescription: string, detailsDescription: string) {
  return Type.Object({
    question: Type.String({ minLength: 1, description: "The question, self-contained." }),
    options: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 10,
        description: optionsDescription,
      }),
    ),
    details: Type.Optional(Type.String({ description: detailsDescription })),
  });
}

/** An ask as the outbox keeps it, sent now or queued while the core is away (`supervisor`: ask_supervisor's). */
export function askItem(
  params: { question: string; options?: string[]; details?: string },
  supervisor = false,
): Extract<OutboxItem, { kind: "ask" }> {
  return {
    kind: "ask",
    key: newKey("ask"),
    question: params.question,
    options: params.options ?? [],
    details: params.details ?? null,
    queuedAt: Date.now(),
    ...(supervisor ? { supervisor: true as const } : {}),
  };
}

/** What `guarded` needs of a module's per-session state. */
export interface GuardedSession {
  ctx: ExtensionContext;
  recordError(context: string, e: unknown): void;
}

/** A tool module's answers where `guarded` has no session, or the request failed. */
export interface ToolGlue<S extends GuardedSession> {
  /** The live session, or null. */
  current: () => S | null;
  notRunning: ToolText;
  refusal: (what: string, e: unknown) => ToolText;
}

/**
 * A tool's `execute`: the live session (or the module's not-running result), its ctx
 * refreshed, and any failure recorded under `tool` and returned as the module's refusal of
 * `what`.
 */
export function guarded<S extends GuardedSession, P>(
  glue: ToolGlue<S>,
  tool: string,
  what: string,
  run: (s: S, params: P, toolCallId: string) => Promise<ToolText>,
): (toolCallId: string, params: P, signal: unknown, onUpdate: unknown, ctx: ExtensionContext) => Promise<ToolText> {
  return async (toolCallId, params, _signal, _onUpdate, ctx) => {
    const s = glue.current();
    if (s === null) return glue.notRunning;
    s.ctx = ctx;
    try {
      return await run(s, params, toolCallId);
    } catch (e) {
      s.recordError(tool, e);
      return glue.refusal(what, e);
    }
  };
}

/** A command's live session, its ctx refreshed; without one the human is told so, and it is null. */
export function commandSession<S extends GuardedSession>(current: () => S | null, ctx: ExtensionContext): S | null {
  const s = current();
  if (s === null) {
    show(ctx, "shepherd: not running in this session", "warning");
    return null;
  }
  s.ctx = ctx;
  return s;
}

/** A command's failure: recorded under `context` and shown as `shepherd: <the core's message>`. */
export function commandFailed(s: GuardedSession, ctx: ExtensionContext, context: string, e: unknown): void {
  s.recordError(context, e);
  show(ctx, `shepherd: ${message(e)}`, "warning");
}
