//! Which of a bench's runs the page reads: the parallel runs over the state's store, and the
//! fastest of a design at a batch over its worker counts.

use bal_replay_bench::{BenchResult, RunResult, StoreKind};
use bal_replay_engine::{ExecMode, IoDesign};

/// The runs the findings read: parallel over the state's store (no baselines).
pub(crate) fn measured(bench: &BenchResult) -> impl Iterator<Item = &RunResult> {
    bench
        .runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel && r.store != StoreKind::Memory)
}

/// The fastest run of `design` at `batch`, over thread counts.
pub(crate) fn best(bench: &BenchResult, design: IoDesign, batch: usize) -> Option<&RunResult> {
    measured(bench)
        .filter(|r| r.design == design && r.batch == batch)
        .max_by(|a, b| a.throughput.mgas_per_s.total_cmp(&b.throughput.mgas_per_s))
}
