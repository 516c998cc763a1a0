//! Frame layout: a 4-byte big-endian body length, then that many bytes of UTF-8 JSON
//! holding one object. These helpers are pure; the async reader and writer that use them are
//! [`crate::framing`], shared by the server's connection tasks and [`crate::client`].

use serde::Serialize;

/// Bytes in the length prefix.
pub const HEADER_LEN: usize = 4;

/// Default largest body the core accepts (1 MiB); configurable with
/// `core.limits.max_frame_bytes`.
pub const DEFAULT_MAX_FRAME: usize = 1024 * 1024;

/// Serialize `msg` into one complete frame (prefix + body).
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    framed(|buf| serde_json::to_writer(buf, msg).expect("protocol types always serialize"))
}

/// One complete frame whose body `write_body` appends to the buffer it is given.
pub fn framed(write_body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    // Most frames are a few hundred bytes: start with room for one, grow for the rest.
    let mut buf = Vec::with_capacity(512);
    buf.extend_from_slice(&[0u8; HEADER_LEN]);
    write_body(&mut buf);
    let len = (buf.len() - HEADER_LEN) as u32;
    buf[..HEADER_LEN].copy_from_slice(&len.to_be_bytes());
    buf
}

/// Read the body length out of a frame header.
pub fn body_len(header: [u8; HEADER_LEN]) -> usize {
    u32::from_be_bytes(header) as usize
}

/// Why a frame body could not be turned into a message.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not UTF-8 or not a JSON object: the stream can no longer be trusted.
    #[error("frame body is not a UTF-8 JSON object: {0}")]
    Malformed(String),
    /// A JSON object whose `type` names no message of this protocol version.
    #[error("unknown message type {0:?}")]
    UnknownType(String),
    /// A known `type` whose fields are missing or of the wrong type.
    #[error("invalid {kind} message: {detail}")]
    Invalid { kind: String, detail: String },
}

impl DecodeError {
    /// The wire error code for this failure.
    pub fn code(&self) -> crate::protocol::ErrorCode {
        use crate::protocol::ErrorCode;
        match self {
            DecodeError::Malformed(_) => ErrorCode::MalformedFrame,
            DecodeError::UnknownType(_) => ErrorCode::UnknownType,
            DecodeError::Invalid { .. } => ErrorCode::InvalidMessage,
        }
    }
}

/// A failed decode: the reason, plus the request id when one could be read so the error
/// frame can echo it.
pub type DecodeFailure = (DecodeError, Option<u64>);

/// A frame body checked to be a JSON object with a known string `type`.
pub struct TypedObject {
    pub kind: String,
    pub id: Option<u64>,
    pub fields: serde_json::Map<String, serde_json::Value>,
}

/// Parse a body into a JSON object and check its `type` against `known_types`.
pub fn parse_object(body: &[u8], known_types: &[&str]) -> Result<TypedObject, DecodeFailure> {
    let text = std::str::from_utf8(body)
        .map_err(|e| (DecodeError::Malformed(format!("invalid UTF-8: {e}")), None))?;
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(value) => value,
        // A string cut in the middle of a surrogate pair (Node's JSON.stringify of a text
        // sliced inside an emoji writes `\ud83d` alone) is text, not an attack: read it
        // with U+FFFD in place of the lone half rather than drop the connection.
        Err(e) => match replace_lone_surrogates(text) {
            Some(repaired) => serde_json::from_str(&repaired),
            None => Err(e),
        }
        .map_err(|e| (DecodeError::Malformed(format!("invalid JSON: {e}")), None))?,
    };
    let serde_json::Value::Object(fields) = value else {
        return Err((DecodeError::Malformed("not a JSON object".into()), None));
    };
    let id = fields.get("id").and_then(serde_json::Value::as_u64);
    let invalid = |detail: &str| DecodeError::Invalid {
        kind: "?".into(),
        detail: detail.into(),
    };
    let kind = match fields.get("type") {
        Some(serde_json::Value::String(kind)) => kind.clone(),
        Some(_) => return Err((invalid("`type` must be a string"), id)),
        None => return Err((invalid("missing `type`"), id)),
    };
    if !known_types.contains(&kind.as_str()) {
        return Err((DecodeError::UnknownType(kind), id));
    }
    Ok(TypedObject { kind, id, fields })
}

/// `text` with every `\uXXXX` escape of a lone UTF-16 surrogate (a high one not followed
/// by a low one, or a low one alone) replaced by `\ufffd`; `None` when there is none. Only
/// escapes are looked at: outside strings a JSON text has no backslashes, and `\\` is
/// skipped as the escaped backslash it is.
fn replace_lone_surrogates(text: &str) -> Option<String> {
    fn unit_at(b: &[u8], i: usize) -> Option<u16> {
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    }
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied, mut changed) = (0, 0, false);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit_at(b, i) {
            Some(u) if is_high(u) && unit_at(b, i + 6).is_some_and(is_low) => i += 12,
            Some(u) if is_high(u) || is_low(u) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
                changed = true;
            }
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    changed.then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

/// Deserialize with the failing field's path in the error.
pub fn deserialize_traced<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    kind: &str,
    id: Option<u64>,
) -> Result<T, DecodeFailure> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let detail = if path == "." {
            inner
        } else {
            format!("{path}: {inner}")
        };
        let kind = kind.to_string();
        (DecodeError::Invalid { kind, detail }, id)
    })
}

/// Decode a body into any message enum tagged by `type`.
pub fn decode<T: serde::de::DeserializeOwned>(
    body: &[u8],
    known_types: &[&str],
) -> Result<T, DecodeFailure> {
    let obj = parse_object(body, known_types)?;
    deserialize_traced(serde_json::Value::Object(obj.fields), &obj.kind, obj.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ClientMsg, ErrorCode};

    #[test]
    fn encode_prefixes_big_endian_length() {
        let frame = encode(&serde_json::json!({"a": 1}));
        assert_eq!(&frame[..4], &[0, 0, 0, 7]);
        assert_eq!(&frame[4..], br#"{"a":1}"#);
    }

    #[test]
    fn decode_classifies_failures() {
        let err = |b: &[u8]| ClientMsg::decode(b).unwrap_err();
        assert_eq!(err(b"\xff\xfe").0.code(), ErrorCode::MalformedFrame);
        assert_eq!(err(b"[1,2]").0.code(), ErrorCode::MalformedFrame);
        let (e, id) = err(br#"{"type":"fly","id":4}"#);
        assert_eq!((e.code(), id), (ErrorCode::UnknownType, Some(4)));
        let (e, id) = err(br#"{"type":"ask","id":5,"question":7}"#);
        assert_eq!((e.code(), id), (ErrorCode::InvalidMessage, Some(5)));
        assert!(e.to_string().contains("question"), "{e}");
    }

    #[test]
    fn a_lone_surrogate_reads_as_the_replacement_character() {
        // Node's JSON.stringify of "fix 🎉".slice(0, 5): the high half alone.
        let msg = ClientMsg::decode(br#"{"type":"report","id":3,"text":"fix \ud83c"}"#).unwrap();
        let ClientMsg::Report(report) = msg else {
            panic!("{msg:?}")
        };
        assert_eq!(report.text, "fix \u{fffd}");
        // A low half alone, a pair kept whole, and an escaped backslash left as it is.
        let text = r#""a\udc00 \ud83c\udf89 \\ud800 \ud800""#;
        let repaired = replace_lone_surrogates(text).unwrap();
        assert_eq!(repaired, r#""a\ufffd \ud83c\udf89 \\ud800 \ufffd""#);
        let value: String = serde_json::from_str(&repaired).unwrap();
        assert_eq!(value, "a\u{fffd} 🎉 \\ud800 \u{fffd}");
        assert_eq!(replace_lone_surrogates(r#""\ud83c\udf89 \n""#), None);
    }
}
