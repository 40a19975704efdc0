//! Fuzz target `client_msg`: what a browser or a hub sends on `/ws`, decoded as the sessions do
//! (`serde_json::from_str::<shared::ClientMsg>`, only messages up to
//! `MAX_CLIENT_MESSAGE_BYTES`); a message that decodes is encoded and decoded again, equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::ClientMsg;
use shared::protocol::MAX_CLIENT_MESSAGE_BYTES;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_CLIENT_MESSAGE_BYTES {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(msg) = serde_json::from_str::<ClientMsg>(text) else {
        return;
    };
    let encoded = serde_json::to_string(&msg).expect("a ClientMsg encodes");
    let again: ClientMsg = serde_json::from_str(&encoded).expect("an encoded ClientMsg decodes");
    assert_eq!(again, msg, "{encoded}");
});
