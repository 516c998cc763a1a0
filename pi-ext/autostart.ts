// What the extension does when no core answers: start `shepherd up --log-file <log>` in the
// background the first time (only if no core was reached yet in this session: one that went
// away later may have been stopped on purpose, and is only waited for), and say so in one
// notice each: a lost core, a missing binary or autostart turned off, a started core that
// does not answer. When the started core exits with a failure, the reason it wrote to its log
// (`… the core did not start: <reason>`, see src/cli/up.rs) is shown once, at the next
// failed connection attempt (so a core started meanwhile by another session shows nothing),
// and never again on later reconnect attempts. Process spawning and file reading come in
// through a host, so tests drive it with fakes.

import { existsSync, readFileSync, statSync } from "node:fs";

type Level = "info" | "warning" | "error";

/** The marker `shepherd up` writes before the reason it did not start. */
export const START_FAILED = "the core did not start: ";

/** A notice longer than this is cut (the log has the rest). */
const MAX_REASON = 300;

/** The reason of the last start-up failure in `text` (a log's tail), or null. */
export function startFailureIn(text: string): string | null {
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? "";
    const at = line.indexOf(START_FAILED);
    if (at < 0) continue;
    if (line.startsWith("{")) {
      try {
        const parsed: unknown = JSON.parse(line);
        const fields = typeof parsed === "object" && parsed !== null ? (parsed as { fields?: { message?: unknown } }).fields : undefined;
        const msg = fields?.message;
        if (typeof msg === "string" && msg.includes(START_FAILED)) return msg.slice(msg.indexOf(START_FAILED) + START_FAILED.length);
      } catch {
        // not JSON after all: take the text
      }
    }
    return line.slice(at + START_FAILED.length).trim();
  }
  return null;
}

/** The one-line notice for a core that did not start. */
export function startFailureNotice(reason: string | null, exit: string, log: string): string {
  if (reason === null) return `shepherd: the core did not start (\`shepherd up\` ${exit}); see ${log}`;
  const cut = reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON - 1)}…` : reason;
  return `shepherd: the core did not start: ${cut} (see ${log})`;
}

/** What a started `shepherd up` tells us. */
export interface StartedCore {
  readonly pid?: number | undefined;
  on(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  on(event: "error", listener: (e: Error) => void): unknown;
  unref(): void;
}

export interface AutostartHost {
  /** Start `bin args` detached, output ignored. */
  spawn(bin: string, args: string[]): StartedCore;
  /** The log's size now (0 when missing), and its text from `offset` (all of it when shorter). */
  logSize(path: string): number;
  readLog(path: string, offset: number): string;
  notify(text: string, level: Level): void;
  log(line: string): void;
}

/** Node's fs for the log. */
export const fsLog = {
  logSize(path: string): number {
    try {
      return existsSync(path) ? statSync(path).size : 0;
    } catch {
      return 0;
    }
  },
  readLog(path: string, offset: number): string {
    try {
      const bytes = readFileSync(path);
      return bytes.subarray(offset <= bytes.length ? offset : 0).toString("utf8");
    } catch {
      return "";
    }
  },
};

export interface AutostartSettings {
  socketPath: string;
  autostart: boolean;
  shepherdBin: string | null;
  logPath: string;
}

export class Autostart {
  readonly #host: AutostartHost;
  readonly #settings: AutostartSettings;
  readonly #shown = new Set<string>();
  #started: { at: number; bin: string } | null = null;
  /** The notice for a started core that exited with a failure, until it is shown. */
  #failure: string | null = null;
  readonly #now: () => number;

  constructor(host: AutostartHost, settings: AutostartSettings, now: () => number = Date.now) {
    this.#host = host;
    this.#settings = settings;
    this.#now = now;
  }

  /** Why the core this session started did not start (the notice's text), or null. */
  get failure(): string | null {
    return this.#failure;
  }

  /** The core did not answer a connection attempt; `everConnected`: one answered before. */
  unreachable(everConnected: boolean): void {
    const where = this.#settings.socketPath;
    const bin = this.#settings.shepherdBin;
    if (everConnected) {
      this.#once("lost", `shepherd: lost the core at ${where}; reconnecting in the background`, "warning");
      return;
    }
    if (this.#settings.autostart && bin !== null) {
      if (this.#started === null) {
        this.#started = { at: this.#now(), bin };
        this.#start(bin);
      } else if (this.#failure !== null) {
        this.#once("autostart", this.#failure, "error");
      } else if (this.#now() - this.#started.at > 15_000 && !this.#shown.has("autostart")) {
        this.#once("unreachable", `shepherd: started \`${bin} up\`, but no core answers at ${where}; retrying in the background`, "warning");
      }
      return;
    }
    const why = this.#settings.autostart ? "no `shepherd` binary is on PATH to start one" : "autostart is off (SHEPHERD_AUTOSTART=0)";
    this.#once("unreachable", `shepherd: no core is running at ${where} and ${why}; run \`shepherd up\`. Retrying quietly.`, "warning");
  }

  #once(key: string, text: string, level: Level): void {
    if (this.#shown.has(key)) return;
    this.#shown.add(key);
    this.#host.notify(text, level);
  }

  #start(bin: string): void {
    const log = this.#settings.logPath;
    const failed = (e: unknown): void => {
      const msg = e instanceof Error ? e.message : String(e);
      this.#host.log(`starting ${bin} up failed: ${msg}`);
      this.#once("autostart", `shepherd: could not start \`${bin} up\`: ${msg}`, "warning");
    };
    try {
      const offset = this.#host.logSize(log);
      const child = this.#host.spawn(bin, ["up", "--log-file", log]);
      child.on("error", failed);
      child.on("exit", (code, signal) => {
        if (code === 0) return;
        const exit = signal !== null ? `was killed by ${signal}` : `exited with code ${code ?? "?"}`;
        const reason = startFailureIn(this.#host.readLog(log, offset));
        this.#host.log(`${bin} up ${exit}: ${reason ?? "no reason in its log"}`);
        this.#failure = startFailureNotice(reason, exit, log);
      });
      child.unref();
      this.#host.log(`started ${bin} up --log-file ${log} (pid ${child.pid ?? "?"})`);
    } catch (e) {
      failed(e);
    }
  }
}
