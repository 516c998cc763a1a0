//! Decoding a client message from an arbitrary body: it is a message or a decode failure
//! with its error code, never a panic; and what decodes re-encodes to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shepherd_core::protocol::ClientMsg;

fuzz_target!(|body: &[u8]| {
    if let Ok(msg) = ClientMsg::decode(body) {
        let again = serde_json::to_vec(&msg).expect("a decoded message encodes");
        let back = ClientMsg::decode(&again).expect("an encoded message decodes");
        assert_eq!(back, msg);
    }
});
