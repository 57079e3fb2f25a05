//! Feeds arbitrary bytes to the segment parser as if they were a segment file.
//!
//! The parser must never panic, hang or allocate much beyond the input's size (bounded by the
//! frame length checks and zstd's fixed output capacity): every input is a list of records or a
//! `DumpError`. Seed the corpus with real segment files (`segment-*.bin`) for the fuzzer to mutate.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = bal_replay_dump::decode_segment_bytes(data);
});
