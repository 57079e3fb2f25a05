//! Feeds arbitrary bytes to the `bench-db --json` reader and draws what it reads over a fio curve,
//! as `bal-replay report` does (charts and `read-engines.md`).
//!
//! Every input is told apart (a sweep or not) without building its values, and a sweep is either
//! one a real run could have written, reported without a panic and in bounded time, or a
//! `ResultReadError` naming the file. Seed: the golden sweep (`fuzz/run.sh`).

#![no_main]

#[path = "report_support.rs"]
mod report_support;

use bal_replay_bench::point_reads::{BenchDbResult, looks_like_bench_db};
use bal_replay_model::DiskModel;
use bal_replay_results::parse_result;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if !looks_like_bench_db(data) {
        return;
    }
    let path = Path::new("bench-db.json");
    let result = match parse_result::<BenchDbResult>(path, data) {
        Ok(result) => result,
        Err(error) => {
            assert!(error.to_string().starts_with("bench-db.json"), "{error}");
            return;
        }
    };
    if result.stores.iter().all(|s| s.rows.is_empty()) {
        return;
    }
    let disk = DiskModel::parse_fio_table("1 25000 40\n16 90000 177\n", "fio.txt")
        .expect("a valid fio table");
    let _ = bal_replay_report::render_read_engines_markdown(&result.stores, Some(&disk));
    bal_replay_report::write_read_engines_report(
        &result.stores,
        Some(&disk),
        &report_support::small_charts(),
    )
    .expect("a sweep within bounds draws");
});
