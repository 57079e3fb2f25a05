//! Feeds arbitrary text to the bench result reader, as if it were a `bench --json` file, and
//! projects what it reads, as `bal-replay project` and `study --from-bench` do.
//!
//! Every input is a bench result whose numbers a real run could have produced, projected without
//! a panic and in bounded time (libFuzzer's `-timeout`), or a `ResultReadError` naming the file.
//! Seed the corpus with real results (`fuzz/run.sh` does).

#![no_main]

use bal_replay_bench::{BenchResult, ResultReadError, parse_result};
use bal_replay_model::DiskModel;
use bal_replay_projection::{MeasuredMachine, TargetOptions, project_benches};
use libfuzzer_sys::fuzz_target;
use std::{num::NonZeroUsize, path::Path};

fn error_path(error: &ResultReadError) -> &Path {
    match error {
        ResultReadError::Read { path, .. }
        | ResultReadError::TooLarge { path, .. }
        | ResultReadError::Version { path, .. }
        | ResultReadError::Parse { path, .. }
        | ResultReadError::NotJson { path, .. }
        | ResultReadError::Field { path, .. } => path,
    }
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("bench.json");
    let bench = match parse_result::<BenchResult>(path, data) {
        Ok(bench) => bench,
        Err(error) => {
            assert_eq!(error_path(&error), path);
            return;
        }
    };
    let measured_on = MeasuredMachine {
        disk: DiskModel::parse_fio_table("1 25000 40\n16 90000 177\n", "fio.txt")
            .expect("a valid fio table"),
        cores: None,
        worker_start: bench.worker_start,
    };
    let target = TargetOptions {
        research_machine: true,
        ..TargetOptions::default()
    }
    .machine(bench.worker_start)
    .expect("the research machine");
    let workers = [NonZeroUsize::MIN, NonZeroUsize::new(16).expect("16 > 0")];
    let _ = project_benches(
        std::slice::from_ref(&bench),
        &measured_on,
        target.as_ref(),
        &workers,
        &mut |_| {},
    );
});
