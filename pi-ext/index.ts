// The shepherd extension's entry point: the factory Pi calls, which follows Pi's events and
// hands them to the live session. On session_start it makes a ShepherdSession (session.ts: the
// connection to the core, presence, deliveries, the outbox, the footer and notices) and stops
// the previous one; on session_shutdown it says goodbye; every other event (name, model, turns,
// tools, boundaries, settling, messages, compaction) goes to that session. It registers every
// tool and command once: ask_human and report (human-tools.ts), supervisor mode (`/supervise`,
// the verdict tools, pruning; supervise-pi.ts, with the pairing followed by supervision.ts),
// roles (`/manager`, `/chief`, the direct-edge tools; role-tools.ts, with the role followed by
// roles.ts), a Manager's project tools (project-tools.ts), managed workers (the owner tools, a
// worker's ask_owner, `/agents`; worker-tools.ts, with whether this session is a worker the
// core launched followed by workers.ts), and `/shepherd` itself here.
// Every handler catches its own failures: the extension reports trouble in one line and
// never throws into Pi. UI calls are guarded so print, json and rpc modes work.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { loadConfig } from "./config.ts";
import { DELIVERY_CUSTOM_TYPES } from "./dedupe.ts";
import { registerHumanTools } from "./human-tools.ts";
import { registerProjectTools } from "./project-tools.ts";
import { parseResultsMode, RESULTS_USAGE } from "./result.ts";
import { registerRoles } from "./role-tools.ts";
import { ShepherdSession } from "./session.ts";
import { registerSupervisor } from "./supervise-pi.ts";
import { errorText } from "./tool-glue.ts";
import type { Json } from "./wire.ts";
import { registerWorkerTools } from "./worker-tools.ts";

/** The extension factory Pi calls once per runtime (and again after /reload, /new, …). */
export default function shepherd(pi: ExtensionAPI): void {
  let current: ShepherdSession | null = null;

  /** Run `fn` with the live session, remembering the newest ctx; never throws. */
  const withSession = <T>(ctx: ExtensionContext, what: string, fn: (s: ShepherdSession) => T): T | undefined => {
    const s = current;
    if (s === null) return undefined;
    try {
      s.ctx = ctx;
      return fn(s);
    } catch (e) {
      s.recordError(what, e);
      return undefined;
    }
  };

  pi.on("session_start", (_event, ctx) => {
    try {
      current?.stop();
      current = null;
      const s = new ShepherdSession(pi, ctx, loadConfig(process.env));
      current = s;
      s.start();
    } catch (e) {
      try {
        if (ctx.hasUI) ctx.ui.notify(`shepherd: could not start: ${errorText(e)}`, "error");
      } catch {
        // nothing left to tell the user with
      }
    }
  });

  // Pi closes this session: say goodbye, so the phone hears "closed" rather than a crash;
  // a /reload comes straight back and announces no ending.
  pi.on("session_shutdown", (event) => {
    try {
      current?.stop({ returning: event.reason === "reload" });
    } catch {
      // shutting down anyway
    }
    current = null;
  });

  pi.on("session_info_changed", (event, ctx) => {
    withSession(ctx, "session_info_changed", (s) => {
      if (event.name !== undefined && event.name !== "") s.update({ name: event.name });
    });
  });

  pi.on("model_select", (event, ctx) => {
    withSession(ctx, "model_select", (s) => {
      s.update({ model: `${event.model.provider}/${event.model.id}` });
      s.updateContext();
    });
  });

  pi.on("before_provider_request", (_event, ctx) => {
    withSession(ctx, "before_provider_request", (s) => s.turnStarted());
  });

  pi.on("agent_start", (_event, ctx) => {
    withSession(ctx, "agent_start", (s) => {
      s.inbox.runStarted();
      s.results.started();
      s.setStatus("thinking");
    });
  });

  // Every tool call waits for the approval policy's ruling first (approvals.ts).
  pi.on("tool_call", async (event, ctx) => {
    const s = current;
    if (s === null) return undefined;
    try {
      s.ctx = ctx;
      return await s.approvals.check(event.toolName, event.toolCallId, event.input as Json, ctx.signal);
    } catch (e) {
      s.recordError("tool_call", e);
      return { block: true, reason: `shepherd could not rule on this call (${errorText(e)}); it did not run` };
    }
  });

  pi.on("tool_execution_start", (event, ctx) => {
    withSession(ctx, "tool_execution_start", (s) => s.toolStarted(event.toolCallId, event.toolName));
  });

  pi.on("tool_execution_end", (event, ctx) => {
    withSession(ctx, "tool_execution_end", (s) => s.toolEnded(event.toolCallId));
  });

  pi.on("turn_end", (event, ctx) => {
    return withSession(ctx, "turn_end", (s) => {
      s.updateContext();
      s.reconcile();
      return s.atBoundary(event);
    });
  });

  pi.on("agent_before_settle", (event, ctx) => {
    return withSession(ctx, "agent_before_settle", (s) => s.atBoundary(event));
  });

  pi.on("agent_settled", (event, ctx) => {
    withSession(ctx, "agent_settled", (s) => {
      s.settled();
      s.flushBriefs();
      s.inbox.runSettled(event.aborted);
      s.answerStrandedView();
      s.reconcile();
      void s.results.settled(event.aborted);
    });
  });

  pi.on("message_end", (event, ctx) => {
    withSession(ctx, "message_end", (s) => {
      const m = event.message;
      s.results.message(m);
      s.workers.message(m);
      if (m.role === "custom" && DELIVERY_CUSTOM_TYPES.has(m.customType)) s.reconcile();
    });
  });

  pi.on("session_compact", (_event, ctx) => {
    withSession(ctx, "session_compact", (s) => {
      s.updateContext();
      s.supervision.reanchor();
    });
  });

  registerHumanTools(pi, () => current);
  registerSupervisor(pi, () => current);
  registerRoles(pi, () => current);
  registerProjectTools(pi, () => current);
  registerWorkerTools(pi, () => current);

  pi.registerCommand("shepherd", {
    description:
      "Show the shepherd connection, this session's id and name, open asks and the last error; `/shepherd results all|asks_only|off` sets which runs' results go to the phone",
    handler: async (args, ctx) => {
      const s = current;
      const words = args.trim().split(/\s+/);
      if (s !== null && words[0] === "results") {
        s.ctx = ctx;
        const mode = parseResultsMode(words[1] ?? "");
        if (mode !== null) s.resultsMode = mode;
        s.notify(mode === null ? `shepherd: ${RESULTS_USAGE}` : `shepherd: results for this session: ${mode}`, mode === null ? "warning" : "info");
        return;
      }
      const text = s === null ? "shepherd: not running in this session" : (withSession(ctx, "/shepherd", (x) => x.describe()) ?? "shepherd: status unavailable");
      try {
        if (ctx.hasUI) ctx.ui.notify(text, "info");
        else process.stderr.write(`${text}\n`);
      } catch {
        // no way to show it
      }
    },
  });
}
