//! Feeds arbitrary bytes to the projection reader, as if they were a `project --json` file, and
//! draws and writes what it reads as `bal-replay report` does (charts and `projection.md`).
//!
//! Every input is a projection whose numbers a real projection could hold, reported without a
//! panic and in bounded time (libFuzzer's `-timeout`: crafted values once spun plotters' key-point
//! search), or a `ResultReadError` naming the file. Seed: the golden projection (`fuzz/run.sh`).

#![no_main]

#[path = "report_support.rs"]
mod report_support;

use bal_replay_model::ProjectionReport;
use bal_replay_results::{ResultReadError, parse_result};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("projection.json");
    let report = match parse_result::<ProjectionReport>(path, data) {
        Ok(report) => report,
        Err(error) => {
            assert!(!matches!(error, ResultReadError::Read { .. }), "{error}");
            assert!(error.to_string().starts_with("projection.json"), "{error}");
            return;
        }
    };
    let _ = bal_replay_report::render_projection_markdown(&report);
    bal_replay_report::write_projection_report(&report, &report_support::small_charts())
        .expect("a projection within bounds draws");
});
