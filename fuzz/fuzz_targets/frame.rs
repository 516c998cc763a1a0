//! The frame reader against arbitrary bytes: every length prefix and truncation ends in a
//! body or a [`FrameError`](shepherd_core::framing::FrameError), never a panic, and no
//! body is over the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut stream = data;
        while let Ok(Some(body)) = shepherd_core::framing::read_frame(&mut stream, LIMIT).await {
            assert!(body.len() <= LIMIT);
        }
    });
});
