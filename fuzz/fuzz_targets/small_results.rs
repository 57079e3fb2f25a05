//! Feeds arbitrary bytes to the readers of the smaller result formats: the reference executor's
//! (`ReferenceThroughput`) and the study's regime sweep (`RegimeSweep`, read back from a study's
//! directory). The first byte picks the reader.
//!
//! Each answers with a value within its bounds or a `ResultReadError` naming the file, never a
//! panic, in bounded time. Seed: the golden files (`fuzz/run.sh`).

#![no_main]

use bal_replay_bench::ReferenceThroughput;
use bal_replay_results::{VersionedResult, parse_result};
use bal_replay_study::RegimeSweep;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fn read<T: VersionedResult>(data: &[u8]) {
    let path = Path::new("result.json");
    if let Err(error) = parse_result::<T>(path, data) {
        assert!(error.to_string().starts_with("result.json"), "{error}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, json)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        read::<ReferenceThroughput>(json);
    } else {
        read::<RegimeSweep>(json);
    }
});
