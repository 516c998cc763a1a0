// The intercom wire format, as the TypeScript side sees it, in one import: the rest of the
// extension imports from here, the parts live in wire/:
// - wire/records.ts: the records inside messages (sessions, asks, deliveries, pairings, …),
//   their closed sets of names, the error codes and the field conventions;
// - wire/messages.ts: ClientMsg and ServerMsg, every message type of protocol 2;
// - wire/decode.ts: checked decoders that turn an untrusted frame body into a message (or
//   say which field is wrong), written over the field readers of wire/fields.ts;
// - wire/workers.ts: managed workers: the Worker record, its states and actions, the worker
//   requests and replies with their decoders (joined into ClientMsg and ServerMsg);
// - wire/projects.ts: project work: Assignment, Project, Integration, the project requests,
//   replies and events with their decoders; wire/shared.ts: decoders several parts use;
// - wire/frame.ts: the framing, a 4-byte big-endian body length then one UTF-8 JSON object.
// Pure code: no sockets, no Pi. docs/PROTOCOL.md is the prose contract; the golden fixtures
// in tests/fixtures/protocol/ are checked against these files by the tests.

export * from "./wire/records.ts";
export * from "./wire/messages.ts";
export * from "./wire/decode.ts";
export * from "./wire/workers.ts";
export * from "./wire/projects.ts";
export * from "./wire/frame.ts";
