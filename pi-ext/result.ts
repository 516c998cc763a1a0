// A run's result: the final assistant text of a Pi run, sent to the core (`result`) when the
// run settles, so the human reads it on the phone without a `report` tool call. Pure: it
// watches the run's messages (message_end) and says, when the run settles, what to send.
// A run that ended with only tool calls (ask_human ends the run on its tool result), that
// was aborted or that failed has no result. Also reads the session's `results` setting
// (SHEPHERD_RESULTS, `/shepherd results <mode>`); the core applies it (it knows the asks).
// A managed worker's result is its one answer to its owner, and an assigned Lead's (a Lead the
// core launched for a work assignment) is its Manager's assignment update, so one that could
// not be sent (the core was away) is kept and sent again once registered; the core takes such
// a result once, so sending it twice after a lost reply is harmless.

import { randomUUID } from "node:crypto";

import { NotConnectedError } from "./client.ts";
import { DEFAULT_MAX_FRAME } from "./wire/frame.ts";
import { RESULTS_MODES, type Report, type ResultsMode } from "./wire.ts";

/** The parts of a Pi message this reads (AgentMessage is wider). */
export interface RunMessage {
  role: string;
  content?: unknown;
  stopReason?: string;
}

/** The text parts of an assistant message, joined and trimmed. */
export function assistantText(message: RunMessage): string {
  if (!Array.isArray(message.content)) return typeof message.content === "string" ? message.content.trim() : "";
  const parts: string[] = [];
  for (const part of message.content as unknown[]) {
    if (typeof part !== "object" || part === null) continue;
    const p = part as { type?: unknown; text?: unknown };
    if (p.type === "text" && typeof p.text === "string") parts.push(p.text);
  }
  return parts.join("").trim();
}

/**
 * The most a result's text may take as a JSON string: the frame limit less the room the core
 * keeps for what carries it (the same budget the core cuts to, so a text cut here is not cut
 * again).
 */
export const MAX_RESULT_JSON_BYTES = DEFAULT_MAX_FRAME - 16 * 1024;

/** Bytes one code point takes inside a JSON string as JSON.stringify writes it. */
function escapedLength(ch: string): number {
  const code = ch.codePointAt(0) ?? 0;
  if (ch === '"' || ch === "\\" || ch === "\n" || ch === "\r" || ch === "\t" || ch === "\b" || ch === "\f") return 2;
  if (code < 0x20) return 6;
  if (code >= 0xd800 && code <= 0xdfff) return 6; // a lone surrogate: written as \udXXX
  return Buffer.byteLength(ch, "utf8");
}

/**
 * A run's text whole when it fits in a result frame; else its start, cut at a character, and a
 * line saying how much was cut (a run's end is never lost for its size, and the core would
 * refuse a frame over its limit).
 */
export function fitResultText(text: string, budget: number = MAX_RESULT_JSON_BYTES): string {
  let whole = 2;
  for (const ch of text) whole += escapedLength(ch);
  if (whole <= budget) return text;
  const note = (cut: number): string =>
    `\n\n[cut by shepherd: ${cut} more bytes did not fit in one message (core.limits.max_frame_bytes); the whole text is in the session]`;
  const total = Buffer.byteLength(text, "utf8");
  const room = budget - (JSON.stringify(note(total)).length + 8);
  let used = 2;
  let end = 0;
  for (const ch of text) {
    const len = escapedLength(ch);
    if (used + len > room) break;
    used += len;
    end += ch.length;
  }
  const kept = text.slice(0, end);
  return kept + note(total - Buffer.byteLength(kept, "utf8"));
}

/** Follows one run at a time: the candidate result is the last assistant text not followed by a tool result. */
export class RunResult {
  #text = "";

  /** A run started (agent_start): nothing yet. */
  started(): void {
    this.#text = "";
  }

  /** A message ended (message_end). */
  message(message: RunMessage): void {
    if (message.role === "assistant") {
      const failed = message.stopReason === "aborted" || message.stopReason === "error";
      this.#text = failed ? "" : assistantText(message);
    } else if (message.role === "toolResult") {
      // The run went on past that text (or ended on a tool, as ask_human does): not its result.
      this.#text = "";
    }
  }

  /** The run settled (agent_settled): the text to send, or null. Forgets it either way. */
  settled(aborted: boolean): string | null {
    const text = this.#text;
    this.#text = "";
    return aborted || text === "" ? null : text;
  }
}

/** A `results` mode from SHEPHERD_RESULTS or `/shepherd results <mode>` (`asks-only` too). */
export function parseResultsMode(value: string): ResultsMode | null {
  const v = value.trim().toLowerCase().replace("-", "_");
  return RESULTS_MODES.find((m) => m === v) ?? null;
}

/** What `/shepherd results …` says when the mode is missing or wrong. */
export const RESULTS_USAGE = `usage: /shepherd results ${RESULTS_MODES.join("|")} (all: every run's final text goes to the phone; asks_only: only runs that asked you; off: none)`;

/** What sending results needs from the session. */
export interface ResultHost {
  /** Send `result {text, results, key}` to the core (the key makes sending it again harmless). */
  send(text: string, results: ResultsMode | null, key: string): Promise<Report>;
  /** This session's mode (null: the core's `core.results`). */
  mode(): ResultsMode | null;
  /** Whether this session supervises another now: its runs answer looks, and the verdicts already reach the phone. */
  supervising(): boolean;
  /** Whether a result the core did not get must be sent again once registered (a managed worker's, an assigned Lead's). */
  keepUnsent?(): boolean;
  log(line: string): void;
}

/** Watches runs and sends each one's result as it settles; never throws. */
export class ResultSender {
  readonly #host: ResultHost;
  readonly #run = new RunResult();
  /** A result that found the core away, sent again (with its key) by resend(). */
  #unsent: { text: string; key: string } | null = null;

  constructor(host: ResultHost) {
    this.#host = host;
  }

  started(): void {
    this.#run.started();
  }

  message(message: RunMessage): void {
    this.#run.message(message);
  }

  /** The run settled: send its result, if it has one. Resolves once sent (or refused). */
  async settled(aborted: boolean): Promise<void> {
    const text = this.#run.settled(aborted);
    if (text === null) {
      this.#host.log(aborted ? "run aborted: no result" : "run ended without text: no result");
      return;
    }
    if (this.#host.supervising()) {
      this.#host.log("run ended while supervising: its verdicts are the result");
      return;
    }
    await this.#send({ text: fitResultText(text), key: `result:${randomUUID()}` });
  }

  /** Registered again: send a worker's result that found the core away. */
  async resend(): Promise<void> {
    const unsent = this.#unsent;
    if (unsent === null) return;
    this.#unsent = null;
    this.#host.log("sending the result the core did not get");
    await this.#send(unsent);
  }

  async #send(result: { text: string; key: string }): Promise<void> {
    try {
      // The core applies the mode (asks_only needs the asks it keeps) and keeps the result either way.
      const report = await this.#host.send(result.text, this.#host.mode(), result.key);
      this.#host.log(`result ${report.id} sent (${report.announced ? "announced" : "kept, not announced"})`);
    } catch (e) {
      this.#host.log(`result not sent: ${e instanceof Error ? e.message : String(e)}`);
      if (e instanceof NotConnectedError && this.#host.keepUnsent?.() === true) {
        this.#unsent = result;
        this.#host.log("result kept: it goes to the core once it is back");
      }
    }
  }
}
