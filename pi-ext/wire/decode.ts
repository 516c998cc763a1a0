// Decoding: one frame body (bytes or text) into a checked ClientMsg or ServerMsg, or a
// WireDecodeError with the code the core would give (`malformed_frame`, `unknown_type`,
// `invalid_message` naming the wrong field). The body of each message `type` is read by its
// generated decoder (wire/generated/decoders.ts, over the field readers of wire/fields.ts).

import { FieldError, isObject, type Bodies, type Conv } from "./fields.ts";
import { CLIENT_TYPES, type ClientMsg } from "./generated/client.ts";
import { CLIENT_BODIES, SERVER_BODIES } from "./generated/decoders.ts";
import { SERVER_TYPES, type ServerMsg } from "./generated/server.ts";

export type DecodeErrorCode = "malformed_frame" | "unknown_type" | "invalid_message";

/** Why a frame body is not a message; `requestId` is set when the body's id could be read. */
export class WireDecodeError extends Error {
  readonly code: DecodeErrorCode;
  readonly requestId: number | null;
  constructor(code: DecodeErrorCode, message: string, requestId: number | null) {
    super(message);
    this.name = "WireDecodeError";
    this.code = code;
    this.requestId = requestId;
  }
}

// ---------------------------------------------------------------------------------------
// Frame bodies

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Parse a body into a JSON object with a known `type`, as the core's `frame::parse_object`. */
function parseTyped<T extends string>(
  body: Uint8Array | string,
  known: readonly T[],
): { type: T; value: Record<string, unknown>; id: number | null } {
  let text: string;
  if (typeof body === "string") {
    text = body;
  } else {
    try {
      text = utf8.decode(body);
    } catch (e) {
      throw new WireDecodeError("malformed_frame", `frame body is not UTF-8: ${String(e)}`, null);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new WireDecodeError("malformed_frame", `frame body is not JSON: ${String(e)}`, null);
  }
  if (!isObject(value)) throw new WireDecodeError("malformed_frame", "frame body is not a JSON object", null);
  const rawId = value["id"];
  const id = typeof rawId === "number" && Number.isSafeInteger(rawId) && rawId >= 0 ? rawId : null;
  const rawType = value["type"];
  if (rawType === undefined) throw new WireDecodeError("invalid_message", "missing `type`", id);
  if (typeof rawType !== "string") throw new WireDecodeError("invalid_message", "`type` must be a string", id);
  const type = known.find((t) => t === rawType);
  if (type === undefined) throw new WireDecodeError("unknown_type", `unknown message type "${rawType}"`, id);
  return { type, value, id };
}

/** Parse a frame body, then read the rest of the message its `type` names from `bodies`. */
function decodeMessage<M extends { type: string }>(
  body: Uint8Array | string,
  known: readonly M["type"][],
  bodies: Bodies<M>,
): M {
  const { type, value, id } = parseTyped(body, known);
  const decodeFields: Conv<object> = bodies[type];
  try {
    // Sound because `Bodies<M>` gave each type the decoder of the rest of its message.
    return { type, ...decodeFields(value, type) } as M;
  } catch (e) {
    if (e instanceof FieldError) throw new WireDecodeError("invalid_message", `invalid ${type} message: ${e.message}`, id);
    throw e;
  }
}

/** Decode one frame body sent by the core. Throws WireDecodeError. */
export function decodeServerMsg(body: Uint8Array | string): ServerMsg {
  return decodeMessage(body, SERVER_TYPES, SERVER_BODIES);
}

/** Decode one frame body sent by a client (used by tests and fakes). Throws WireDecodeError. */
export function decodeClientMsg(body: Uint8Array | string): ClientMsg {
  return decodeMessage(body, CLIENT_TYPES, CLIENT_BODIES);
}

/** The id of the request a server message answers; null for events and connection errors. */
export function responseId(msg: ServerMsg): number | null {
  return "id" in msg ? msg.id : null;
}
