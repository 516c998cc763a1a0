// A minimal stand-in for the shepherd core, for the client tests: a Unix socket server that
// speaks wire.ts frames, records every client message, answers hello/register/ask/report/
// update/list_asks the way docs/PROTOCOL.md describes, and lets a test push deliveries,
// drop connections or answer with errors. Not a model of the core's rules.

import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  decodeClientMsg,
  encodeFrame,
  FrameDecoder,
  PROTOCOL_VERSION,
  type Ask,
  type ClientMsg,
  type Delivery,
  type Pairing,
  type ServerMsg,
  type SessionInfo,
} from "../wire.ts";

export interface FakeConnection {
  socket: Socket;
  received: ClientMsg[];
  sessionId: string | null;
}

/** Override the answer to one request: return messages to send instead of the default. */
export type Responder = (msg: ClientMsg, conn: FakeConnection) => ServerMsg[] | undefined;

export function sessionInfo(id: string, name: string | null): SessionInfo {
  return {
    id,
    name: name ?? id.slice(0, 8),
    cwd: "/tmp",
    pid: 1,
    model: null,
    status: "idle",
    role: "lead",
    connected: true,
    context_tokens: null,
    context_window: null,
    context_percent: null,
    repo: null,
    branch: null,
    head: null,
    worktree: false,
    repo_id: null,
    project: null,
    session_file: null,
    subagent: false,
    open_asks: 0,
    pending_messages: 0,
    first_seen: 1,
    last_seen: 1,
  };
}

export function delivery(id: number, text: string, overrides: Partial<Delivery> = {}): Delivery {
  return {
    id,
    kind: "steer",
    text,
    from: { kind: "cli", session_id: null, name: "cli" },
    ask_id: null,
    question: null,
    pairing_id: null,
    look: null,
    created_at: 1_764_670_100_000,
    ...overrides,
  };
}

export class FakeCore {
  readonly dir: string;
  readonly socketPath: string;
  storeId = "store-1";
  protocol = PROTOCOL_VERSION;
  readonly connections: FakeConnection[] = [];
  /** Deliveries sent after every `registered` (the core's pending list). */
  pending: Delivery[] = [];
  /** Active pairings listed in every `registered`. */
  pairings: Pairing[] = [];
  asks: Ask[] = [];
  /** `bye` notices received, in order (their `returning`). */
  byes: boolean[] = [];
  responder: Responder | null = null;
  #server: Server | null = null;
  #nextAsk = 1;
  #waiters: Array<() => void> = [];

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), "shepherd-fake-core-"));
    this.socketPath = join(this.dir, "shepherd.sock");
  }

  get all(): ClientMsg[] {
    return this.connections.flatMap((c) => c.received);
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      const server = createServer((socket) => this.#accept(socket));
      server.once("error", reject);
      server.listen(this.socketPath, () => resolve());
      this.#server = server;
    });
  }

  /** Stop listening and drop every connection (like a core that died). */
  async kill(): Promise<void> {
    for (const c of this.connections) c.socket.destroy();
    const server = this.#server;
    this.#server = null;
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async dispose(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  send(conn: FakeConnection, msg: ServerMsg): void {
    conn.socket.write(encodeFrame(msg));
  }

  /** The newest connection that registered. */
  registered(): FakeConnection | undefined {
    return [...this.connections].reverse().find((c) => c.sessionId !== null && !c.socket.destroyed);
  }

  /** Resolve once `predicate` holds (checked after every received message). */
  async until(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error("fake core: condition not reached in time");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 10);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  #accept(socket: Socket): void {
    const conn: FakeConnection = { socket, received: [], sessionId: null };
    this.connections.push(conn);
    const decoder = new FrameDecoder();
    socket.on("data", (chunk: Buffer) => {
      for (const body of decoder.push(chunk)) {
        const msg = decodeClientMsg(body);
        conn.received.push(msg);
        this.#answer(msg, conn);
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const w of waiters) w();
      }
    });
    socket.on("error", () => undefined);
  }

  #answer(msg: ClientMsg, conn: FakeConnection): void {
    const custom = this.responder?.(msg, conn);
    if (custom !== undefined) {
      // Write all in one chunk, as a busy core would.
      conn.socket.write(Buffer.concat(custom.map((m) => encodeFrame(m))));
      return;
    }
    switch (msg.type) {
      case "hello":
        if (msg.protocol !== this.protocol) {
          this.send(conn, {
            type: "error",
            id: msg.id,
            code: "protocol_mismatch",
            message: `core speaks ${this.protocol}, client ${msg.protocol}`,
            details: null,
          });
          conn.socket.end();
          return;
        }
        this.send(conn, { type: "welcome", id: msg.id, protocol: this.protocol, core_version: "0.0.0-fake", store_id: this.storeId, pid: process.pid });
        return;
      case "register": {
        conn.sessionId = msg.session.session_id;
        const frames: ServerMsg[] = [
          {
            type: "registered",
            id: msg.id,
            session: sessionInfo(msg.session.session_id, msg.session.name ?? null),
            pending: this.pending.length,
            pairings: this.pairings,
          },
          ...this.pending.map((d): ServerMsg => ({ type: "deliver", message: d })),
        ];
        conn.socket.write(Buffer.concat(frames.map((m) => encodeFrame(m))));
        return;
      }
      case "update":
        this.send(conn, { type: "updated", id: msg.id, session: sessionInfo(conn.sessionId ?? "?", msg.name ?? null) });
        return;
      case "ask": {
        const ask: Ask = {
          id: this.#nextAsk++,
          session_id: conn.sessionId ?? "?",
          session_name: "fake",
          question: msg.question,
          options: msg.options ?? [],
          details: msg.details ?? null,
          state: "open",
          answer: null,
          answered_by: null,
          created_at: 1,
          answered_at: null,
        };
        this.asks.push(ask);
        this.send(conn, { type: "asked", id: msg.id, ask });
        return;
      }
      case "report":
        this.send(conn, {
          type: "reported",
          id: msg.id,
          report: { id: 7, session_id: conn.sessionId ?? "?", session_name: "fake", text: msg.text, created_at: 1, kind: "report", announced: true },
        });
        return;
      case "result":
        this.send(conn, {
          type: "reported",
          id: msg.id,
          report: { id: 8, session_id: conn.sessionId ?? "?", session_name: "fake", text: msg.text, created_at: 1, kind: "result", announced: msg.results !== "off" },
        });
        return;
      case "list_asks":
        this.send(conn, { type: "asks", id: msg.id, asks: this.asks });
        return;
      case "ack":
        this.pending = this.pending.filter((d) => !msg.ids.includes(d.id));
        return;
      case "ping":
        this.send(conn, { type: "pong", id: msg.id });
        return;
      case "bye":
        this.byes.push(msg.returning ?? false);
        return;
      case "host_mail_ack":
        return; // Only a linked core sends it.
      default:
        this.send(conn, { type: "error", id: msg.id, code: "forbidden", message: `fake core: ${msg.type} not supported`, details: null });
    }
  }
}
