//! Feeds arbitrary text to the manifest parser, as if it were a dump's `manifest.json`.
//!
//! Every input is a manifest that agrees with itself or a `DumpError` naming the file, never a
//! panic (counts and block numbers anywhere in `u64`). Seed the corpus with real manifests
//! (`fuzz/run.sh` does).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("manifest.json");
    match bal_replay_dump::Manifest::parse(text, path) {
        Ok(manifest) => {
            // What parses is valid, and stays so through a write and a read.
            manifest
                .validate(path)
                .expect("a parsed manifest validates");
            let again = serde_json::to_string(&manifest).expect("serializes");
            let reparsed = bal_replay_dump::Manifest::parse(&again, path).expect("round trip");
            assert_eq!(reparsed, manifest);
        }
        Err(error) => assert_eq!(error.path(), path),
    }
});
