// The wire layer against the core's golden fixtures (tests/fixtures/protocol): every fixture
// decodes, re-encodes to the same JSON, and survives framing however the stream is chunked;
// malformed input fails with the core's error codes.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  CLIENT_TYPES,
  decodeClientMsg,
  decodeServerMsg,
  DEFAULT_MAX_FRAME,
  encodeFrame,
  ERROR_CODES,
  FrameDecoder,
  FrameTooLargeError,
  PROTOCOL_VERSION,
  REPLY_TYPES,
  SERVER_TYPES,
  TruncatedFrameError,
  WireDecodeError,
  type ClientMsg,
  type ServerMsg,
} from "../wire.ts";

const here = dirname(fileURLToPath(import.meta.url));
const fixturesRoot = join(here, "..", "..", "tests", "fixtures", "protocol");

interface Fixture {
  /** The message type (the file name up to its first dot: `deliver.interrupt.json` is a `deliver`). */
  name: string;
  /** The file name without `.json`. */
  file: string;
  text: string;
  json: unknown;
}

function fixtures(side: "client" | "server"): Fixture[] {
  const dir = join(fixturesRoot, side);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => {
      const text = readFileSync(join(dir, f), "utf8");
      const file = f.slice(0, -".json".length);
      return { name: file.split(".")[0] ?? file, file, text, json: JSON.parse(text) };
    });
}

/** What goes over the wire, read back as plain JSON. */
function reencoded(msg: ClientMsg | ServerMsg): unknown {
  const frame = encodeFrame(msg);
  assert.equal(frame.readUInt32BE(0), frame.length - 4);
  return JSON.parse(frame.subarray(4).toString("utf8"));
}

function expectDecodeError(run: () => unknown, code: string, requestId: number | null, mentions?: string): void {
  assert.throws(run, (e: unknown) => {
    assert.ok(e instanceof WireDecodeError, `expected WireDecodeError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.equal(e.requestId, requestId);
    if (mentions !== undefined) assert.match(e.message, new RegExp(mentions));
    return true;
  });
}

describe("golden fixtures", () => {
  for (const side of ["client", "server"] as const) {
    const all = fixtures(side);
    const decode = side === "client" ? decodeClientMsg : decodeServerMsg;
    const types: readonly string[] = side === "client" ? CLIENT_TYPES : SERVER_TYPES;

    test(`${side}: one fixture per message type, none unknown`, () => {
      assert.deepEqual(
        all.filter((f) => f.name === f.file).map((f) => f.name),
        [...types].sort(),
      );
      for (const f of all) assert.ok(types.includes(f.name), `${f.file}: unknown type ${f.name}`);
    });

    test(`${side}: a fixture's protocol is this extension's PROTOCOL_VERSION`, () => {
      const versioned = all.filter((f) => typeof f.json === "object" && f.json !== null && "protocol" in f.json);
      assert.deepEqual(
        versioned.map((f) => f.file),
        [side === "client" ? "hello" : "welcome"],
      );
      for (const f of versioned) {
        assert.equal((f.json as { protocol: unknown }).protocol, PROTOCOL_VERSION, `${side}/${f.file}.json`);
      }
    });

    for (const f of all) {
      test(`${side}/${f.file}: decodes and re-encodes unchanged`, () => {
        const msg = decode(f.text);
        assert.equal(msg.type, f.name);
        assert.deepEqual(reencoded(msg), f.json);
        // Decoding from bytes (as off the socket) gives the same message.
        assert.deepEqual(decode(Buffer.from(f.text, "utf8")), msg);
      });
    }

    test(`${side}: every fixture through one stream, cut at every byte`, () => {
      const msgs = all.map((f) => decode(f.text));
      const stream = Buffer.concat(msgs.map((m) => encodeFrame(m)));
      const expected = msgs.map((m) => reencoded(m));
      // One chunk; single bytes; and every two-way split.
      const cuts: number[][] = [[], Array.from({ length: stream.length - 1 }, (_, i) => i + 1)];
      for (let i = 1; i < stream.length; i += 7) cuts.push([i]);
      for (const cut of cuts) {
        const decoder = new FrameDecoder();
        const bodies: Buffer[] = [];
        let start = 0;
        for (const end of [...cut, stream.length]) {
          bodies.push(...decoder.push(stream.subarray(start, end)));
          start = end;
        }
        decoder.finish();
        assert.equal(decoder.buffered, 0);
        assert.deepEqual(
          bodies.map((b) => reencoded(decode(b))),
          expected,
        );
      }
    });
  }
});

describe("replies", () => {
  test("every request declares its reply; only the notices (ack, bye, host_mail_ack) have none", () => {
    const requests = Object.keys(REPLY_TYPES);
    assert.deepEqual(
      CLIENT_TYPES.filter((t) => !requests.includes(t)),
      ["ack", "bye", "host_mail_ack"],
    );
    for (const t of requests) assert.ok((CLIENT_TYPES as readonly string[]).includes(t), `${t}: not a client type`);
  });

  test("each declared reply is a response: its fixture decodes and echoes a request id", () => {
    const server = new Map(fixtures("server").map((f) => [f.file, f]));
    for (const [request, reply] of Object.entries(REPLY_TYPES)) {
      const f = server.get(reply);
      assert.ok(f !== undefined, `${request} → ${reply}: no server fixture ${reply}.json`);
      const msg = decodeServerMsg(f.text);
      assert.equal(msg.type, reply);
      assert.equal(typeof (msg as { id?: unknown }).id, "number", `${request} → ${reply}: not a response`);
    }
  });
});

describe("framing", () => {
  test("the length prefix is the big-endian UTF-8 byte length of the body", () => {
    const frame = encodeFrame({ type: "report", id: 1, text: "é🐑" });
    const body = frame.subarray(4);
    assert.deepEqual([...frame.subarray(0, 4)], [0, 0, 0, body.length]);
    assert.equal(body.toString("utf8"), '{"type":"report","id":1,"text":"é🐑"}');
    assert.ok(body.length > body.toString("utf8").length, "multi-byte characters count as bytes");
  });

  test("a header split over chunks, a body split over many, and several frames per chunk", () => {
    const a = encodeFrame({ type: "ping", id: 1 });
    const b = encodeFrame({ type: "report", id: 2, text: "x".repeat(70_000) });
    const decoder = new FrameDecoder();
    assert.deepEqual(decoder.push(a.subarray(0, 2)), []);
    assert.deepEqual(decoder.push(a.subarray(2, 3)), []);
    const stream = Buffer.concat([a.subarray(3), b]);
    const got: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 4096) got.push(...decoder.push(stream.subarray(i, i + 4096)));
    assert.equal(got.length, 2);
    assert.deepEqual(decodeClientMsg(got[0] ?? Buffer.alloc(0)), { type: "ping", id: 1 });
    const second = decodeClientMsg(got[1] ?? Buffer.alloc(0));
    assert.equal(second.type === "report" ? second.text.length : -1, 70_000);
  });

  test("the decoder copies its input (callers may reuse their buffer)", () => {
    const frame = encodeFrame({ type: "ping", id: 9 });
    const scratch = Buffer.from(frame);
    const decoder = new FrameDecoder();
    assert.deepEqual(decoder.push(scratch.subarray(0, 6)), []);
    scratch.fill(0);
    scratch.set(frame.subarray(0, 6));
    const [body] = decoder.push(frame.subarray(6));
    assert.deepEqual(decodeClientMsg(body ?? Buffer.alloc(0)), { type: "ping", id: 9 });
  });

  test("an empty body is a frame (and then a malformed message)", () => {
    const decoder = new FrameDecoder();
    const [body] = decoder.push(Buffer.from([0, 0, 0, 0]));
    assert.equal(body?.length, 0);
    expectDecodeError(() => decodeServerMsg(body ?? Buffer.alloc(0)), "malformed_frame", null);
  });

  test("a length prefix over the limit is refused before the body arrives", () => {
    const decoder = new FrameDecoder(1024);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(1025, 0);
    assert.throws(() => decoder.push(header), FrameTooLargeError);
    const big = new FrameDecoder();
    header.writeUInt32BE(DEFAULT_MAX_FRAME + 1, 0);
    assert.throws(() => big.push(header), FrameTooLargeError);
  });

  test("encoding a body over the limit fails instead of sending it", () => {
    assert.throws(() => encodeFrame({ type: "report", id: 1, text: "x".repeat(2000) }, 1000), FrameTooLargeError);
  });

  test("a stream that ends inside a frame is truncated", () => {
    const decoder = new FrameDecoder();
    decoder.push(encodeFrame({ type: "ping", id: 1 }).subarray(0, 7));
    assert.throws(() => decoder.finish(), TruncatedFrameError);
  });
});

describe("decoding errors, as the core classifies them", () => {
  test("not UTF-8, not JSON, not an object: malformed_frame", () => {
    expectDecodeError(() => decodeClientMsg(Buffer.from([0xff, 0xfe])), "malformed_frame", null);
    expectDecodeError(() => decodeClientMsg("{"), "malformed_frame", null);
    expectDecodeError(() => decodeClientMsg("[1,2]"), "malformed_frame", null);
    expectDecodeError(() => decodeServerMsg("null"), "malformed_frame", null);
  });

  test("unknown type: unknown_type, with the id when readable", () => {
    expectDecodeError(() => decodeClientMsg('{"type":"fly","id":4}'), "unknown_type", 4);
    expectDecodeError(() => decodeServerMsg('{"type":"teleported"}'), "unknown_type", null);
  });

  test("missing or non-string type, wrong fields: invalid_message naming the field", () => {
    expectDecodeError(() => decodeClientMsg('{"id":3}'), "invalid_message", 3, "type");
    expectDecodeError(() => decodeClientMsg('{"type":7,"id":3}'), "invalid_message", 3, "type");
    expectDecodeError(() => decodeClientMsg('{"type":"ask","id":5,"question":7}'), "invalid_message", 5, "question");
    expectDecodeError(() => decodeClientMsg('{"type":"ask","id":5}'), "invalid_message", 5, "question: missing");
    expectDecodeError(() => decodeClientMsg('{"type":"ping","id":-1}'), "invalid_message", null, "id");
    expectDecodeError(() => decodeClientMsg('{"type":"ping","id":1.5}'), "invalid_message", null, "id");
    expectDecodeError(
      () => decodeServerMsg('{"type":"deliver","message":{"id":1,"kind":"shout","text":"","from":{"kind":"cli","name":"cli"},"created_at":1}}'),
      "invalid_message",
      null,
      "message.kind",
    );
    expectDecodeError(
      () => decodeClientMsg('{"type":"register","id":2,"session":{"session_id":"s","cwd":"/","role":"boss"}}'),
      "invalid_message",
      2,
      "session.role",
    );
  });

  test("null where Rust has a default but no Option is refused", () => {
    expectDecodeError(() => decodeClientMsg('{"type":"ask","id":1,"question":"q","options":null}'), "invalid_message", 1, "options");
    expectDecodeError(
      () => decodeClientMsg('{"type":"register","id":1,"session":{"session_id":"s","cwd":"/","context":null}}'),
      "invalid_message",
      1,
      "context",
    );
    expectDecodeError(() => decodeClientMsg('{"type":"list_asks","id":1,"all":null}'), "invalid_message", 1, "all");
    expectDecodeError(
      () => decodeClientMsg('{"type":"register","id":1,"session":{"session_id":"s","cwd":"/","subagent":null}}'),
      "invalid_message",
      1,
      "subagent",
    );
    expectDecodeError(() => decodeClientMsg('{"type":"verdict","id":1,"verdict":"done","text":null}'), "invalid_message", 1, "text");
    expectDecodeError(() => decodeClientMsg('{"type":"verdict","id":1,"verdict":"approve"}'), "invalid_message", 1, "verdict");
  });
});

describe("field conventions", () => {
  test("a minimal register keeps absent fields absent (the core fills the defaults)", () => {
    const msg = decodeClientMsg('{"type":"register","id":1,"session":{"session_id":"s","cwd":"/"}}');
    assert.deepEqual(msg, { type: "register", id: 1, session: { session_id: "s", cwd: "/" } });
    assert.equal(encodeFrame(msg).subarray(4).toString(), '{"type":"register","id":1,"session":{"session_id":"s","cwd":"/"}}');
  });

  test("records from the core read absent Option fields as null and absent lists as empty", () => {
    const msg = decodeServerMsg(
      '{"type":"deliver","message":{"id":1,"kind":"steer","text":"t","from":{"kind":"cli","name":"cli"},"created_at":1}}',
    );
    assert.deepEqual(msg, {
      type: "deliver",
      message: {
        id: 1,
        kind: "steer",
        text: "t",
        from: { kind: "cli", session_id: null, name: "cli" },
        ask_id: null,
        question: null,
        pairing_id: null,
        look: null,
        created_at: 1,
      },
    });
    const asked = decodeServerMsg(
      '{"type":"asked","id":2,"ask":{"id":3,"session_id":"s","session_name":"n","question":"q","state":"open","created_at":1}}',
    );
    assert.ok(asked.type === "asked");
    assert.deepEqual(asked.ask.options, []);
    assert.equal(asked.ask.answer, null);
    const error = decodeServerMsg('{"type":"error","code":"internal","message":"m"}');
    assert.deepEqual(error, { type: "error", id: null, code: "internal", message: "m", details: null });
  });

  test("supervision records: absent defaults read as the core's defaults", () => {
    const reg = decodeServerMsg(
      '{"type":"registered","id":2,"pending":0,"session":{"id":"s","name":"n","cwd":"/","status":"idle","role":"supervisor","connected":true,"worktree":false,"open_asks":0,"pending_messages":0,"first_seen":1,"last_seen":1}}',
    );
    assert.ok(reg.type === "registered");
    assert.deepEqual(reg.pairings, []);
    assert.equal(reg.session.subagent, false);
    assert.equal(reg.session.role, "supervisor");
    const accepted = decodeServerMsg(
      '{"type":"verdict_accepted","id":3,"pairing":' +
        JSON.stringify({ id: 7, supervisor_id: "a", supervisor_name: "a", worker_id: "b", worker_name: "b", cwd: "/", state: "active", looks: 1, steers: 0, created_at: 1, supervisor_connected: true, worker_connected: false }) +
        ',"verdict":{"kind":"let_it_run","text":"","look":1,"created_at":2}}',
    );
    assert.ok(accepted.type === "verdict_accepted");
    assert.equal(accepted.hint, null);
    assert.equal(accepted.pairing.goal, null);
    assert.equal(accepted.pairing.evidence, null);
  });

  test("a field the core leaves out reads null as absent, as Rust reads it as None", () => {
    const asked = decodeServerMsg(
      '{"type":"asked","id":2,"ask":{"id":3,"session_id":"s","session_name":"n","question":"q","state":"open","created_at":1,"to":null}}',
    );
    assert.ok(asked.type === "asked");
    assert.equal("to" in asked.ask, false);
    expectDecodeError(
      () => decodeServerMsg('{"type":"staff","id":1,"members":[],"assignments":null}'),
      "invalid_message",
      1,
      "assignments",
    );
    // A client's Option field keeps its null, as sent.
    assert.deepEqual(decodeClientMsg('{"type":"report","id":1,"text":"t","key":null}'), {
      type: "report",
      id: 1,
      text: "t",
      key: null,
    });
  });

  test("unknown fields are dropped, unknown error codes kept (compatible additions)", () => {
    const msg = decodeServerMsg('{"type":"pong","id":1,"extra":true}');
    assert.deepEqual(msg, { type: "pong", id: 1 });
    const error = decodeServerMsg('{"type":"error","id":3,"code":"some_new_code","message":"m","details":{"a":[1,null]}}');
    assert.ok(error.type === "error");
    assert.equal(error.code, "some_new_code");
    assert.deepEqual(error.details, { a: [1, null] });
  });

  test("PROTOCOL_VERSION is the core's (core/src/protocol/mod.rs)", () => {
    const rust = readFileSync(join(here, "..", "..", "core", "src", "protocol", "mod.rs"), "utf8");
    const found = /pub const PROTOCOL_VERSION: u32 = (\d+);/.exec(rust);
    assert.ok(found, "PROTOCOL_VERSION in core/src/protocol/mod.rs");
    assert.equal(PROTOCOL_VERSION, Number(found[1]));
  });

  test("every error code of core/src/protocol/error_code.rs is known here", () => {
    const rust = readFileSync(join(here, "..", "..", "core", "src", "protocol", "error_code.rs"), "utf8");
    const codes = [...rust.matchAll(/\(ErrorCode::\w+, "([a-z_]+)"\)/g)].map((m) => m[1] ?? "");
    assert.ok(codes.length >= 20, `read ${codes.length} codes from error_code.rs`);
    const known = new Set<string>(ERROR_CODES);
    assert.deepEqual(
      codes.filter((c) => !known.has(c)),
      [],
    );
  });
});
