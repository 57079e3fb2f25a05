//! Feeds arbitrary bytes to the bench result reader and draws what it reads as `bal-replay report`
//! does for bench results (every chart and `report.md`).
//!
//! Every input is a bench result whose numbers a real run could have produced, reported without a
//! panic and in bounded time (a finite 1.7e308 Mgas/s once spun plotters' key-point search), or a
//! `ResultReadError` naming the file. Seed: `bench --json` results (`fuzz/run.sh`).

#![no_main]

#[path = "report_support.rs"]
mod report_support;

use bal_replay_bench::BenchResult;
use bal_replay_report::Input;
use bal_replay_results::parse_result;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("bench.json");
    let result = match parse_result::<BenchResult>(path, data) {
        Ok(result) => result,
        Err(error) => {
            assert!(error.to_string().starts_with("bench.json"), "{error}");
            return;
        }
    };
    let inputs = [Input::new("bench", result)];
    bal_replay_report::write_report(&inputs, &report_support::small_charts())
        .expect("a bench result within bounds draws");
});
