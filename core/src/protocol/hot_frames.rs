//! The two frames every routed message costs, `deliver` and `sent`, written by hand.
//!
//! serde_json spends most of an encode escaping strings a byte at a time (keys included)
//! and walking each field through its generic map writer; these two frames go out for every
//! message, so they are written directly instead, into exactly the bytes serde_json writes
//! for them (the tests compare the two on the golden fixtures and on strings holding every
//! byte that needs an escape). Every other frame, and a delivery with images, goes through
//! serde ([`super::frame::encode`]). [`encode`] is how the hub encodes what it sends.

use super::frame::framed;
use super::messages::ServerMsg;
use super::types::{Delivery, Sender};

/// `msg` as one complete frame (prefix + body): [`super::frame::encode`]'s bytes, written
/// here by hand for `deliver` and `sent`.
pub fn encode(msg: &ServerMsg) -> Vec<u8> {
    by_hand(msg).unwrap_or_else(|| super::frame::encode(msg))
}

/// `msg` as one complete frame, if it is one of the frames written here.
fn by_hand(msg: &ServerMsg) -> Option<Vec<u8>> {
    match msg {
        ServerMsg::Deliver { message } if message.images.is_empty() => Some(framed(|buf| {
            let mut w = Writer(buf);
            w.raw(br#"{"type":"deliver","message":"#);
            w.delivery(message);
            w.raw(b"}");
        })),
        ServerMsg::Sent {
            id,
            message_id,
            session_id,
            session_name,
            connected,
        } => Some(framed(|buf| {
            let mut w = Writer(buf);
            w.raw(br#"{"type":"sent","id":"#);
            w.number(*id);
            w.raw(br#","message_id":"#);
            w.number(message_id.get());
            w.raw(br#","session_id":"#);
            w.string(session_id.as_str());
            w.raw(br#","session_name":"#);
            w.string(session_name);
            w.raw(br#","connected":"#);
            w.raw(if *connected { &b"true"[..] } else { b"false" });
            w.raw(b"}");
        })),
        _ => None,
    }
}

/// A frame's body being written.
struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn raw(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn number(&mut self, n: u64) {
        self.raw(itoa::Buffer::new().format(n).as_bytes());
    }

    fn optional(&mut self, n: Option<u64>) {
        match n {
            Some(n) => self.number(n),
            None => self.raw(b"null"),
        }
    }

    fn optional_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.string(s),
            None => self.raw(b"null"),
        }
    }

    fn delivery(&mut self, d: &Delivery) {
        self.raw(br#"{"id":"#);
        self.number(d.id.get());
        self.raw(br#","kind":""#);
        self.raw(d.kind.as_str().as_bytes());
        self.raw(br#"","text":"#);
        self.string(&d.text);
        self.raw(br#","from":"#);
        self.sender(&d.from);
        self.raw(br#","ask_id":"#);
        self.optional(d.ask_id.map(|a| a.get()));
        self.raw(br#","question":"#);
        self.optional_string(d.question.as_deref());
        self.raw(br#","pairing_id":"#);
        self.optional(d.pairing_id.map(|p| p.get()));
        self.raw(br#","look":"#);
        self.optional(d.look.map(u64::from));
        self.raw(br#","created_at":"#);
        self.number(d.created_at);
        self.raw(b"}");
    }

    fn sender(&mut self, s: &Sender) {
        self.raw(br#"{"kind":""#);
        self.raw(s.kind.as_str().as_bytes());
        self.raw(br#"","session_id":"#);
        self.optional_string(s.session_id.as_ref().map(|id| id.as_str()));
        self.raw(br#","name":"#);
        self.string(&s.name);
        self.raw(b"}");
    }

    /// `s` as a JSON string, escaped as serde_json escapes it: `"` and `\`, the control
    /// characters (`\b \f \n \r \t`, the rest as `\u00xx`), nothing else. Runs of bytes that
    /// need no escape (nearly all text) are found eight at a time and copied whole.
    fn string(&mut self, s: &str) {
        let bytes = s.as_bytes();
        self.0.push(b'"');
        let (mut start, mut i) = (0, 0);
        while i < bytes.len() {
            if let Some(word) = bytes.get(i..i + 8) {
                let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
                if !any_needs_escape(word) {
                    i += 8;
                    continue;
                }
            }
            let b = bytes[i];
            if needs_escape(b) {
                self.0.extend_from_slice(&bytes[start..i]);
                self.escape(b);
                start = i + 1;
            }
            i += 1;
        }
        self.0.extend_from_slice(&bytes[start..]);
        self.0.push(b'"');
    }

    fn escape(&mut self, b: u8) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        match b {
            b'"' => self.raw(br#"\""#),
            b'\\' => self.raw(br"\\"),
            0x08 => self.raw(br"\b"),
            0x0c => self.raw(br"\f"),
            b'\n' => self.raw(br"\n"),
            b'\r' => self.raw(br"\r"),
            b'\t' => self.raw(br"\t"),
            _ => self.raw(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
    }
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether any of the eight bytes in `word` needs an escape: one under 0x20, a `"` or a
/// `\` (the classic "has a byte less than n" and "has a zero byte" tests, exact for these).
fn any_needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let less_than = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (less_than(word, 0x20) | less_than(quote, 1) | less_than(backslash, 1)) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ClientKind, DeliveryKind, MessageId, SessionId};

    /// What serde writes for `msg`.
    fn serde_frame(msg: &ServerMsg) -> Vec<u8> {
        crate::protocol::frame::encode(msg)
    }

    fn same_as_serde(msg: &ServerMsg) {
        let hand = by_hand(msg).expect("written by hand");
        let serde = serde_frame(msg);
        assert_eq!(
            String::from_utf8_lossy(&hand),
            String::from_utf8_lossy(&serde)
        );
        assert_eq!(hand, serde);
    }

    fn delivery(text: &str, name: &str) -> Delivery {
        Delivery {
            id: MessageId::from(u64::MAX),
            kind: DeliveryKind::PeerMessage,
            text: text.to_string(),
            from: Sender {
                kind: ClientKind::Pi,
                session_id: Some(SessionId::from(name)),
                name: name.to_string(),
            },
            ask_id: None,
            question: None,
            pairing_id: None,
            look: None,
            created_at: 1_764_670_100_000,
            images: Vec::new(),
        }
    }

    /// Every golden `deliver` and `sent` fixture without images encodes to serde's bytes;
    /// with images, the hand writer steps aside.
    #[test]
    fn the_fixtures_encode_as_serde_encodes_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/protocol/server");
        let (mut hand, mut serde) = (0, 0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let msg: ServerMsg = serde_json::from_str(&text).unwrap();
            match by_hand(&msg) {
                Some(_) => {
                    same_as_serde(&msg);
                    hand += 1;
                }
                None => serde += 1,
            }
            assert_eq!(encode(&msg), serde_frame(&msg), "{path:?}");
        }
        assert!(hand >= 10, "only {hand} fixtures written by hand");
        assert!(serde > 50, "only {serde} fixtures through serde");
    }

    /// Strings with every byte below 0x80 (each alone, and at each offset within and
    /// across the eight-byte steps), with multi-byte characters, and empty ones.
    #[test]
    fn strings_are_escaped_as_serde_escapes_them() {
        let mut texts: Vec<String> = vec![String::new(), "é".into(), "日本語 · ✓ 🐑".into()];
        for b in 0u8..0x80 {
            let c = char::from(b);
            texts.push(c.to_string());
            for at in 0..18 {
                let mut t: String = "abcdefghijklmnopq".chars().take(at).collect();
                t.push(c);
                t.push_str("tail ü");
                texts.push(t);
            }
        }
        texts.push("\"\\\u{0}\u{1f}\u{7f}\n\r\t\u{8}\u{c}".repeat(5));
        for text in &texts {
            let mut d = delivery(text, text);
            same_as_serde(&ServerMsg::Deliver { message: d.clone() });
            d.question = Some(text.clone());
            d.ask_id = Some(7.into());
            d.pairing_id = Some(9.into());
            d.look = Some(u32::MAX);
            d.from.session_id = None;
            same_as_serde(&ServerMsg::Deliver { message: d });
            same_as_serde(&ServerMsg::Sent {
                id: 0,
                message_id: MessageId::from(41),
                session_id: SessionId::from(text.as_str()),
                session_name: text.clone(),
                connected: text.len() % 2 == 0,
            });
        }
    }

    /// Each kind's name is its serde name, for every kind the schema lists.
    #[test]
    fn kind_names_are_the_serde_names() {
        let names = |value: serde_json::Value| -> Vec<String> {
            let mut out = Vec::new();
            collect_strings(&value["oneOf"], &mut out);
            collect_strings(&value["enum"], &mut out);
            out
        };
        let kinds = names(serde_json::to_value(schemars::schema_for!(DeliveryKind)).unwrap());
        assert_eq!(kinds.len(), 16, "{kinds:?}");
        for name in kinds {
            let kind: DeliveryKind = serde_json::from_value(name.clone().into()).unwrap();
            assert_eq!(kind.as_str(), name);
        }
        let clients = names(serde_json::to_value(schemars::schema_for!(ClientKind)).unwrap());
        assert_eq!(clients.len(), 4, "{clients:?}");
        for name in clients {
            let kind: ClientKind = serde_json::from_value(name.clone().into()).unwrap();
            assert_eq!(kind.as_str(), name);
        }
    }

    /// The strings under `value` that are `const` or `enum` values of a schema.
    fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
            serde_json::Value::Object(map) => {
                for key in ["const", "enum"] {
                    if let Some(v) = map.get(key) {
                        collect_strings(v, out);
                    }
                }
            }
            _ => {}
        }
    }
}
