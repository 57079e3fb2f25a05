//! What a key read costs each design, split by where the CPU went, set against the floor: RocksDB's
//! own reads of the same keys over the same state, measured in the same bench
//! ([`bal_replay_bench::ReadFloor`]).
//!
//! A design's reads cost the CPU it used beyond full BAL's (which reads no state), per key it read
//! from the store. Of that: RocksDB's own work (the time inside its reads less its file reads: the
//! index, filter and data-block searches and its block cache), the kernel's (system CPU beyond
//! full BAL's: the `pread`s and io_uring submissions of block reads), and the rest, this project's
//! layers (the shared cache, the overlay, revm's `State` in front of the store) with what the
//! on-demand reads do to execution around them. Sleeps and preemptions per key read say how often
//! a read made its thread wait, for the disk or for a core. RocksDB's time is measured by the
//! clock around each call, so a thread preempted inside a read counts it there.

use crate::runs::measured;
use bal_replay_bench::{BenchResult, FloorReads, ReadFloor, RunResult};
use bal_replay_engine::IoDesign;

/// CPU per key read, µs, split by where it went; and how often a read made its thread wait.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadCost {
    /// Key reads it is divided by.
    pub key_reads: u64,
    /// Device read requests per key read, where the device's counters tell.
    pub device_reads_per_key: Option<f64>,
    /// All of the reads' CPU.
    pub cpu_us: f64,
    /// Inside RocksDB's reads, less its file reads; `None` where RocksDB's timers were off, or
    /// counted more than the reads' CPU outside the kernel (readers waiting for a core inside
    /// them).
    pub rocksdb_us: Option<f64>,
    /// In the kernel.
    pub kernel_us: f64,
    /// The rest: this project's layers, and what reading does to execution around it.
    pub layers_us: Option<f64>,
    /// Sleeps per key read.
    pub sleeps_per_key: f64,
    /// Preemptions per key read.
    pub preemptions_per_key: f64,
}

impl ReadCost {
    /// A design's run against full BAL's at the same batch: `None` without the CPU split (a
    /// result written before it was recorded) or key reads.
    pub fn of_run(run: &RunResult, full: &RunResult) -> Option<Self> {
        let keys = run.disk.key_reads;
        let (cpu, full_cpu) = (run.cpu?, full.cpu?);
        if keys == 0 {
            return None;
        }
        let per_key = |s: f64| s * 1e6 / keys as f64;
        let total = |c: &bal_replay_probe::CpuUse| Some(c.user_s? + c.system_s?);
        let cpu_us = per_key((total(&cpu)? - total(&full_cpu)?).max(0.0));
        let kernel_us = per_key((cpu.system_s? - full_cpu.system_s?).max(0.0));
        let rocksdb_us = run
            .disk
            .rocksdb_read_s
            .zip(run.disk.rocksdb_file_read_s)
            .and_then(|(read, file)| {
                rocksdb_within(per_key((read - file).max(0.0)), cpu_us, kernel_us)
            });
        let count = |now: Option<u64>, full: Option<u64>| {
            now.zip(full)
                .map_or(0.0, |(n, f)| n.saturating_sub(f) as f64 / keys as f64)
        };
        Some(Self {
            key_reads: keys,
            device_reads_per_key: run.disk.device_reads.map(|d| d as f64 / keys as f64),
            cpu_us,
            rocksdb_us,
            kernel_us,
            layers_us: rocksdb_us.map(|r| cpu_us - r - kernel_us),
            sleeps_per_key: count(cpu.sleeps, full_cpu.sleeps),
            preemptions_per_key: count(cpu.preemptions, full_cpu.preemptions),
        })
    }

    /// One reader of the floor: its thread's CPU per key (`layers_us` is the floor's own loop).
    pub fn of_floor(reads: &FloorReads) -> Self {
        let keys = reads.keys.max(1) as f64;
        let per_key = |s: f64| s * 1e6 / keys;
        let cpu_us = reads.cpu_us_per_key();
        let kernel_us = per_key(reads.system_s);
        let rocksdb_us = rocksdb_within(
            per_key((reads.rocksdb_read_s - reads.rocksdb_file_read_s).max(0.0)),
            cpu_us,
            kernel_us,
        );
        Self {
            key_reads: reads.keys,
            device_reads_per_key: reads.device_reads.map(|d| d as f64 / keys),
            cpu_us,
            rocksdb_us,
            kernel_us,
            layers_us: rocksdb_us.map(|r| cpu_us - r - kernel_us),
            sleeps_per_key: reads.sleeps as f64 / keys,
            preemptions_per_key: 0.0,
        }
    }
}

/// RocksDB's own µs per key read from its timers, where they fit in the reads' CPU outside the
/// kernel. The timers are wall clocks: where its readers outnumbered the cores (batched I/O's
/// prefetch readers) or a short run's CPU sampling disagrees with them, they count more than the
/// CPU there was, and then they split nothing.
fn rocksdb_within(rocksdb_us: f64, cpu_us: f64, kernel_us: f64) -> Option<f64> {
    (rocksdb_us <= cpu_us - kernel_us).then_some(rocksdb_us)
}

/// The floor's two readers at the headline batch.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FloorRows {
    /// Blocks whose keys the floor read.
    pub blocks: u64,
    /// Point reads in key order: what parallel I/O's reads cost without its layers.
    pub point: ReadCost,
    /// Sorted multi-gets: what batched I/O's prefetch costs without its layers.
    pub multiget: ReadCost,
}

impl FloorRows {
    /// The floor measured at `batch`, where the bench measured one.
    pub fn at(floors: &[ReadFloor], batch: usize) -> Option<Self> {
        let floor = floors.iter().find(|f| f.batch == batch)?;
        Some(Self {
            blocks: floor.blocks,
            point: ReadCost::of_floor(&floor.point),
            multiget: ReadCost::of_floor(&floor.multiget),
        })
    }
}

/// One reading design's run: its reads' CPU per key read, and the share of full BAL's throughput
/// it kept at the same batch and worker count. A point of the page's chart of what share a read
/// path of a given cost keeps.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadCostPoint {
    /// The design.
    pub design: IoDesign,
    /// Workers, the same for the design's run and full BAL's.
    pub threads: usize,
    /// The regime sweep's point it was measured at (its label); `None` for the page's own runs.
    pub regime: Option<String>,
    /// Its reads' CPU per key read, µs ([`ReadCost::cpu_us`]).
    pub cpu_us_per_key: f64,
    /// Its throughput over full BAL's (medians of the repeats).
    pub share_of_full: f64,
}

/// Every run of a reading design at `batch` in `bench` that has a full BAL run at the same worker
/// count, with the CPU split to cost its reads; `regime` names where a sweep measured them.
pub fn read_cost_points(
    bench: &BenchResult,
    batch: usize,
    regime: Option<&str>,
) -> Vec<ReadCostPoint> {
    let full_at = |threads: usize| {
        measured(bench)
            .find(|r| r.design == IoDesign::Full && r.batch == batch && r.threads == threads)
    };
    let mut points: Vec<ReadCostPoint> = measured(bench)
        .filter(|r| r.batch == batch && reads_state(r.design))
        .filter_map(|run| {
            let full = full_at(run.threads)?;
            let cost = ReadCost::of_run(run, full)?;
            let full_mgas = full.throughput.mgas_per_s;
            (full_mgas > 0.0).then(|| ReadCostPoint {
                design: run.design,
                threads: run.threads,
                regime: regime.map(str::to_owned),
                cpu_us_per_key: cost.cpu_us,
                share_of_full: run.throughput.mgas_per_s / full_mgas,
            })
        })
        .collect();
    points.sort_by(|a, b| (a.design.name(), a.threads).cmp(&(b.design.name(), b.threads)));
    points
}

/// Whether `design` reads the state on execution's path: the ones the chart sets against full BAL.
fn reads_state(design: IoDesign) -> bool {
    design == IoDesign::Batched || design.diffs_only()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_probe::CpuUse;

    fn run(user_s: f64, system_s: f64, sleeps: u64, key_reads: u64) -> RunResult {
        let bench: bal_replay_bench::BenchResult = serde_json::from_str(include_str!(
            "../../../measurement/bench/tests/golden/bench-result-v4.json"
        ))
        .unwrap();
        let mut run = bench.runs[0].clone();
        run.disk.rocksdb_read_s = None;
        run.disk.rocksdb_file_read_s = None;
        run.disk.key_reads = key_reads;
        run.cpu = Some(CpuUse {
            wall_s: 3.5,
            process_s: user_s + system_s,
            user_s: Some(user_s),
            system_s: Some(system_s),
            sleeps: Some(sleeps),
            preemptions: Some(sleeps / 10),
            ..CpuUse::default()
        });
        run
    }

    /// 100,000 key reads that cost 1.2 s of CPU beyond full BAL's, 0.2 s of it in the kernel,
    /// 0.4 s inside RocksDB beyond its file reads: 12 µs per key, 4 RocksDB's, 2 the kernel's,
    /// 6 the layers'.
    #[test]
    fn a_designs_cost_is_split_against_full_bal() {
        let full = run(3.0, 0.1, 1_000, 0);
        let mut parallel = run(4.0, 0.3, 61_000, 100_000);
        parallel.disk.rocksdb_read_s = Some(0.9);
        parallel.disk.rocksdb_file_read_s = Some(0.5);
        let cost = ReadCost::of_run(&parallel, &full).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(cost.cpu_us, 12.0), "{cost:?}");
        assert!(close(cost.kernel_us, 2.0), "{cost:?}");
        assert!(close(cost.rocksdb_us.unwrap(), 4.0), "{cost:?}");
        assert!(close(cost.layers_us.unwrap(), 6.0), "{cost:?}");
        assert!(close(cost.sleeps_per_key, 0.6), "{cost:?}");
        assert!(close(cost.preemptions_per_key, 0.06), "{cost:?}");
        // Timers that counted more than the CPU outside the kernel (10 µs here): no split.
        parallel.disk.rocksdb_read_s = Some(1.6);
        let cost = ReadCost::of_run(&parallel, &full).unwrap();
        assert_eq!((cost.rocksdb_us, cost.layers_us), (None, None), "{cost:?}");
        assert!(
            close(cost.cpu_us, 12.0) && close(cost.kernel_us, 2.0),
            "{cost:?}"
        );
        // Without RocksDB's timers the split stops at the kernel; without the CPU split, none.
        parallel.disk.rocksdb_read_s = None;
        let cost = ReadCost::of_run(&parallel, &full).unwrap();
        assert_eq!((cost.rocksdb_us, cost.layers_us), (None, None));
        parallel.cpu.as_mut().unwrap().system_s = None;
        assert_eq!(ReadCost::of_run(&parallel, &full), None);
    }

    /// Each reading run against full BAL's at its own worker count; a run without full BAL at
    /// its count, full BAL itself, full BAL verified and another batch are no points.
    #[test]
    fn a_point_is_a_reading_run_against_full_bal_at_its_workers() {
        let at = |design, threads, batch, mgas: f64, user_s: f64| {
            let mut r = run(
                user_s,
                0.1,
                0,
                if design == IoDesign::Full { 0 } else { 100_000 },
            );
            r.design = design;
            r.threads = threads;
            r.batch = batch;
            r.throughput.mgas_per_s = mgas;
            r
        };
        let mut bench: BenchResult = serde_json::from_str(include_str!(
            "../../../measurement/bench/tests/golden/bench-result-v4.json"
        ))
        .unwrap();
        bench.runs = vec![
            at(IoDesign::Full, 1, 50, 1000.0, 3.0),
            at(IoDesign::Full, 2, 50, 1800.0, 3.2),
            at(IoDesign::Parallel, 1, 50, 250.0, 5.0),
            at(IoDesign::Parallel, 2, 50, 360.0, 5.6),
            at(IoDesign::Batched, 4, 50, 900.0, 3.5),
            at(IoDesign::FullVerify, 1, 50, 700.0, 4.0),
            at(IoDesign::Parallel, 1, 10, 200.0, 5.0),
        ];
        let points = read_cost_points(&bench, 50, Some("direct"));
        let got: Vec<(IoDesign, usize, f64, f64)> = points
            .iter()
            .map(|p| (p.design, p.threads, p.cpu_us_per_key, p.share_of_full))
            .collect();
        // 2.0 s and 2.4 s beyond full BAL's over 100,000 keys.
        let want = [
            (IoDesign::Parallel, 1, 20.0, 0.25),
            (IoDesign::Parallel, 2, 24.0, 0.2),
        ];
        assert_eq!(got.len(), want.len(), "{points:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0, g.1), (w.0, w.1), "{points:?}");
            assert!(
                (g.2 - w.2).abs() < 1e-9 && (g.3 - w.3).abs() < 1e-9,
                "{points:?}"
            );
        }
        assert!(points.iter().all(|p| p.regime.as_deref() == Some("direct")));
    }

    #[test]
    fn the_floor_is_its_threads_cpu_per_key() {
        let floor = ReadFloor {
            batch: 50,
            blocks: 120,
            point: FloorReads {
                keys: 200_000,
                cpu_s: 0.8,
                system_s: 0.2,
                wall_s: 9.0,
                sleeps: 150_000,
                rocksdb_read_s: 8.5,
                rocksdb_file_read_s: 7.9,
                device_reads: Some(100_000),
            },
            multiget: FloorReads {
                keys: 200_000,
                cpu_s: 0.6,
                ..FloorReads::default()
            },
        };
        let rows = FloorRows::at(&[floor], 50).unwrap();
        assert_eq!(rows.blocks, 120);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(rows.point.cpu_us, 4.0), "{rows:?}");
        assert!(close(rows.point.kernel_us, 1.0), "{rows:?}");
        assert!(close(rows.point.rocksdb_us.unwrap(), 3.0), "{rows:?}");
        assert!(close(rows.point.layers_us.unwrap(), 0.0), "{rows:?}");
        assert!(close(rows.point.sleeps_per_key, 0.75), "{rows:?}");
        assert!(
            close(rows.point.device_reads_per_key.unwrap(), 0.5),
            "{rows:?}"
        );
        assert_eq!(rows.multiget.device_reads_per_key, None);
        // Timers that counted more than the CPU outside the kernel (3 µs here): no split.
        let late = FloorReads {
            rocksdb_read_s: 8.9,
            ..floor.point
        };
        let cost = ReadCost::of_floor(&late);
        assert_eq!((cost.rocksdb_us, cost.layers_us), (None, None), "{cost:?}");
        assert!(
            close(cost.cpu_us, 4.0) && close(cost.kernel_us, 1.0),
            "{cost:?}"
        );
        assert!(close(rows.multiget.cpu_us, 3.0), "{rows:?}");
        assert_eq!(FloorRows::at(&[floor], 1), None);
    }
}
