// The intercom wire format, as the TypeScript side sees it, in one import: the rest of the
// extension imports from here, the parts live in wire/:
// - wire/generated/: written from the Rust protocol types (core/src/protocol/) by
//   `SHEPHERD_REGENERATE=1 cargo test -p shepherd-core --lib protocol::wire_gen`, never by
//   hand: the closed sets of names and error codes (names.ts), the records inside messages
//   (records.ts), ClientMsg and ServerMsg with every message type (client.ts, server.ts),
//   and their checked decoders (decoders.ts);
// - wire/fields.ts: the converters and field readers the decoders are written over, and the
//   field conventions (what absence and null mean);
// - wire/decode.ts: an untrusted frame body into a message, or the core's error code naming
//   the wrong field;
// - wire/frame.ts: the framing, a 4-byte big-endian body length then one UTF-8 JSON object.
// Pure code: no sockets, no Pi. docs/PROTOCOL.md is the prose contract; the golden fixtures
// in tests/fixtures/protocol/ are checked against these files by the tests.

export type { Json, JsonObject } from "./wire/fields.ts";
export * from "./wire/generated/names.ts";
export * from "./wire/generated/records.ts";
export * from "./wire/generated/client.ts";
export * from "./wire/generated/server.ts";
export * from "./wire/decode.ts";
export * from "./wire/frame.ts";
