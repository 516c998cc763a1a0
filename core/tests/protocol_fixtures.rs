//! Golden fixtures: every protocol message type has one JSON file in
//! `tests/fixtures/protocol/{client,server}/<type>.json`, and each must round-trip through
//! the Rust types unchanged. A type may have more fixtures for other shapes of the same
//! message (`<type>.<variant>.json`: `deliver.interrupt.json`). A fixture's `protocol`
//! (`hello`, `welcome`) is the core's [`PROTOCOL_VERSION`]. The TypeScript extension's
//! tests read the same files.

use std::path::PathBuf;

use shepherd_core::protocol::requests::Register;
use shepherd_core::protocol::{ClientMsg, PROTOCOL_VERSION, ServerMsg, frame};

fn fixture_dir(side: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/protocol")
        .join(side)
}

/// Checks every fixture of `side` round-trips, one per type; returns the files (stems)
/// that carry a `protocol` field, each checked to be [`PROTOCOL_VERSION`].
fn check_side<T, E: std::fmt::Display>(
    side: &str,
    types: &[&str],
    decode: impl Fn(&[u8]) -> Result<T, (E, Option<u64>)>,
) -> Vec<String>
where
    T: serde::Serialize,
{
    let mut versioned = Vec::new();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(fixture_dir(side)).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let (name, variant) = match stem.split_once('.') {
            Some((name, variant)) => (name.to_string(), Some(variant)),
            None => (stem.to_string(), None),
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            original["type"],
            name.as_str(),
            "{} names its type",
            path.display()
        );
        if let Some(version) = original.get("protocol") {
            assert_eq!(
                version.as_u64(),
                Some(u64::from(PROTOCOL_VERSION)),
                "{} says protocol {version}; the core speaks {PROTOCOL_VERSION}",
                path.display()
            );
            versioned.push(stem.to_string());
        }
        let msg: T =
            decode(text.as_bytes()).unwrap_or_else(|(e, _)| panic!("{}: {e}", path.display()));
        let back = serde_json::to_value(&msg).unwrap();
        assert_eq!(back, original, "{} round-trips unchanged", path.display());
        if variant.is_none() {
            seen.push(name);
        }
    }
    seen.sort();
    let mut expected: Vec<String> = types.iter().map(|t| t.to_string()).collect();
    expected.sort();
    assert_eq!(seen, expected, "one {side} fixture per message type");
    versioned.sort();
    versioned
}

#[test]
fn client_fixtures_round_trip() {
    let versioned = check_side("client", ClientMsg::TYPES, ClientMsg::decode);
    assert_eq!(
        versioned,
        ["hello"],
        "the protocol version was checked in hello"
    );
}

#[test]
fn server_fixtures_round_trip() {
    let versioned = check_side("server", ServerMsg::TYPES, |b| {
        frame::decode::<ServerMsg>(b, ServerMsg::TYPES)
    });
    assert_eq!(
        versioned,
        ["welcome"],
        "the protocol version was checked in welcome"
    );
}

#[test]
fn minimal_requests_fill_defaults() {
    let msg =
        ClientMsg::decode(br#"{"type":"register","id":1,"session":{"session_id":"s","cwd":"/"}}"#)
            .unwrap();
    let ClientMsg::Register(Register { session, .. }) = msg else {
        panic!("{msg:?}")
    };
    assert_eq!(session.status, "idle");
    assert_eq!(session.name, None);
}
