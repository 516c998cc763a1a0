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
    let mut buf = vec![0u8; HEADER_LEN];
    serde_json::to_writer(&mut buf, msg).expect("protocol types always serialize");
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
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| (DecodeError::Malformed(format!("invalid JSON: {e}")), None))?;
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
}
