// The framing of the intercom stream: a 4-byte big-endian body length, then one UTF-8 JSON
// object. encodeFrame writes one message; FrameDecoder splits a byte stream, however it is
// chunked, into frame bodies for wire/decode.ts. Pure code: no sockets.

import type { ClientMsg } from "./generated/client.ts";
import type { ServerMsg } from "./generated/server.ts";

/** Bytes in the length prefix. */
export const HEADER_LEN = 4;
/** The core's default largest body (1 MiB, `core.limits.max_frame_bytes`). */
export const DEFAULT_MAX_FRAME = 1024 * 1024;
/**
 * The largest body a client reads from the core: its other frames fit in the frame limit,
 * but a listing (every session, every open ask) holds what was asked for (PROTOCOL.md).
 */
export const MAX_INBOUND_FRAME = 64 * 1024 * 1024;

/** A frame whose body is over the limit (encoding, or announced by a length prefix). */
export class FrameTooLargeError extends Error {
  readonly size: number;
  readonly max: number;
  constructor(size: number, max: number) {
    super(`frame body of ${size} bytes is over the ${max}-byte limit`);
    this.name = "FrameTooLargeError";
    this.size = size;
    this.max = max;
  }
}

/** The stream ended inside a frame. */
export class TruncatedFrameError extends Error {
  constructor(buffered: number) {
    super(`stream ended inside a frame (${buffered} bytes buffered)`);
    this.name = "TruncatedFrameError";
  }
}

/** One complete frame: the big-endian body length, then the UTF-8 JSON body. */
export function encodeFrame(msg: ClientMsg | ServerMsg, maxBody: number = DEFAULT_MAX_FRAME): Buffer {
  const body = Buffer.from(JSON.stringify(msg), "utf8");
  if (body.length > maxBody) throw new FrameTooLargeError(body.length, maxBody);
  const frame = Buffer.allocUnsafe(HEADER_LEN + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, HEADER_LEN);
  return frame;
}

/**
 * Splits a byte stream into frame bodies. Feed it chunks as they arrive, in any sizes; it
 * returns every body completed so far. A length prefix over `maxBody` throws
 * FrameTooLargeError (the stream cannot be resynchronized after that).
 */
export class FrameDecoder {
  readonly maxBody: number;
  #chunks: Buffer[] = [];
  #buffered = 0;

  constructor(maxBody: number = DEFAULT_MAX_FRAME) {
    this.maxBody = maxBody;
  }

  /** Bytes received that do not yet form a whole frame. */
  get buffered(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): Buffer[] {
    if (chunk.length > 0) {
      this.#chunks.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer
      this.#buffered += chunk.length;
    }
    const bodies: Buffer[] = [];
    for (;;) {
      if (this.#buffered < HEADER_LEN) break;
      const len = this.#peekLength();
      if (len > this.maxBody) throw new FrameTooLargeError(len, this.maxBody);
      if (this.#buffered < HEADER_LEN + len) break;
      const frame = this.#take(HEADER_LEN + len);
      bodies.push(frame.subarray(HEADER_LEN));
    }
    return bodies;
  }

  /** Call at end of stream: throws TruncatedFrameError if a frame was cut off. */
  finish(): void {
    if (this.#buffered > 0) throw new TruncatedFrameError(this.#buffered);
  }

  #peekLength(): number {
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= HEADER_LEN) return first.readUInt32BE(0);
    return this.#flatten().readUInt32BE(0);
  }

  #flatten(): Buffer {
    if (this.#chunks.length !== 1) this.#chunks = [Buffer.concat(this.#chunks, this.#buffered)];
    const only = this.#chunks[0];
    return only ?? Buffer.alloc(0);
  }

  #take(n: number): Buffer {
    const all = this.#flatten();
    const out = Buffer.from(all.subarray(0, n));
    const rest = all.subarray(n);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    return out;
  }
}
