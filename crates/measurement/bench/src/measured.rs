//! One measured replay over a state on disk, the one path `run` and every run of a bench take:
//! the state opened (a RocksDB state over a scratch copy beside it, or in place; reth's MDBX read
//! in place under an in-memory overlay), the page cache dropped where asked, the device probe
//! started, the dump replayed, and the run's disk evidence and CPU gathered. What `run --json`
//! writes ([`RunSummary`]) lives here too, beside a bench's [`crate::BenchResult`].

use std::path::Path;

use bal_replay_dump::{BlockHashEntry, DumpReader};
use bal_replay_engine::{BatchProfile, BatchReport, ReplayOptions, ReplayReport, replay};
use bal_replay_executor::ChainConfig;
use bal_replay_host::drop_page_cache;
use bal_replay_mdbx_state::with_mdbx_overlay;
use bal_replay_probe::{
    CpuUse, DiskEvidence,
    device::{IoSample, RunProbe},
};
use bal_replay_rocks::{RocksOptions, RocksStore, ScratchState, io_uring::ReadPath};
use bal_replay_state::{StateReader, StateWriter};

use crate::{BenchError, CacheCounts, RunTiming, VersionedResult};

/// Where a measured replay's state comes from.
#[derive(Debug, Clone, Copy)]
pub enum ReplaySource<'a> {
    /// A RocksDB flat state, opened with `options`: replayed over a scratch copy named after
    /// `scratch` (the state is never written), or in place where `scratch` is `None` (the state
    /// moves on; a stopped run resumes).
    Rocks {
        /// The state's directory.
        path: &'a Path,
        /// How it is opened.
        options: &'a RocksOptions,
        /// The scratch copy's purpose (`rewind`, `bench-run`), or `None` to replay in place.
        scratch: Option<&'a str>,
    },
    /// reth's MDBX, read in place and never written: each batch's commit stays in memory.
    Mdbx {
        /// The database's directory.
        dir: &'a Path,
        /// The dump's first block hashes, the overlay's block-hash table.
        first_block_hashes: &'a [BlockHashEntry],
    },
}

/// What a caller sees after each batch of a measured replay.
#[derive(Debug)]
pub struct BatchSeen<'a> {
    /// The batch's report.
    pub batch: &'a BatchReport,
    /// The state's directory the replay reads (its block device's counters are the run's I/O).
    pub state: &'a Path,
    /// The state's size on disk, where the store knows it.
    pub state_bytes: Option<u64>,
    /// The device's and the process's counters when the probe started (after the state was
    /// opened), the first batch's baseline.
    pub probe_start: &'a IoSample,
}

/// What a measured replay measured: its report, where its reads were served from, the CPU it had.
#[derive(Debug)]
pub struct MeasuredReplay {
    /// The engine's report.
    pub report: ReplayReport,
    /// Where the reads were served from.
    pub disk: DiskEvidence,
    /// The CPU this process and everything else used, where `/proc` tells.
    pub cpu: Option<CpuUse>,
}

impl MeasuredReplay {
    /// Each parallel batch's profile (`--task-profile`), moved out of the report.
    pub fn take_batch_profiles(&mut self) -> Vec<BatchProfile> {
        self.report
            .batches
            .iter_mut()
            .filter_map(|b| b.profile.take())
            .collect()
    }
}

/// Replays `dump` over `source` with `options`, the page cache dropped first where `drop_caches`
/// (root only), under the device probe; `on_batch` sees each batch as it ends. The engine's error
/// comes back as [`BenchError::Engine`].
pub fn measured_replay(
    config: &ChainConfig,
    dump: &DumpReader,
    source: ReplaySource<'_>,
    options: &ReplayOptions,
    drop_caches: bool,
    on_batch: &mut dyn FnMut(BatchSeen<'_>),
) -> Result<MeasuredReplay, BenchError> {
    match source {
        ReplaySource::Rocks {
            path,
            options: rocks,
            scratch,
        } => {
            // The copy is made before the cache is dropped: its checkpoint reads the state.
            let copy = scratch
                .map(|purpose| ScratchState::checkpoint_of(path, purpose))
                .transpose()?;
            let path = copy.as_ref().map_or(path, |c| c.path());
            if drop_caches {
                drop_page_cache()?;
            }
            let store = RocksStore::open(path, rocks)?;
            let probe = RunProbe::start(path, store.read_counters(), rocks.direct_io);
            let seen = SeenFrom {
                state: path,
                probe_start: &probe.io,
                state_bytes: &|| store.approximate_size_bytes().ok(),
            };
            let report = replay_seen(config, dump, &store, options, seen, on_batch)?;
            let (mut disk, cpu) = probe.finish(report.cache_key_reads(), store.read_counters());
            let cpu = with_workers(cpu, &report);
            disk.block_cache_pinned_bytes = store.block_cache_pinned_bytes();
            // The store closes before its copy is removed.
            drop(store);
            drop(copy);
            Ok(MeasuredReplay { report, disk, cpu })
        }
        ReplaySource::Mdbx {
            dir,
            first_block_hashes,
        } => {
            if drop_caches {
                drop_page_cache()?;
            }
            let probe = RunProbe::start(dir, None, false);
            // The overlay's block hashes are the dump's: the dump is not checked against them.
            let options = ReplayOptions {
                block_hashes_from_dump: true,
                ..options.clone()
            };
            let hashes = first_block_hashes.iter().map(|h| (h.number, h.hash));
            let seen = SeenFrom {
                state: dir,
                probe_start: &probe.io,
                state_bytes: &|| None,
            };
            let report = with_mdbx_overlay(dir, hashes, |store| {
                replay_seen(config, dump, store, &options, seen, on_batch)
            })??;
            let (disk, cpu) = probe.finish(report.cache_key_reads(), None);
            let cpu = with_workers(cpu, &report);
            Ok(MeasuredReplay { report, disk, cpu })
        }
    }
}

/// The probe's CPU with the workers' own from the replay's report ([`CpuUse::worker_s`]).
fn with_workers(cpu: Option<CpuUse>, report: &ReplayReport) -> Option<CpuUse> {
    cpu.map(|cpu| CpuUse {
        worker_s: report.worker_cpu().map(|d| d.as_secs_f64()),
        ..cpu
    })
}

/// What [`replay_seen`] shows beside each batch.
#[derive(Clone, Copy)]
struct SeenFrom<'a> {
    state: &'a Path,
    probe_start: &'a IoSample,
    state_bytes: &'a dyn Fn() -> Option<u64>,
}

/// [`replay`] with each batch shown to `on_batch` beside the state's path, size and the probe's
/// starting counters.
fn replay_seen<S: StateReader + StateWriter>(
    config: &ChainConfig,
    dump: &DumpReader,
    store: &S,
    options: &ReplayOptions,
    seen: SeenFrom<'_>,
    on_batch: &mut dyn FnMut(BatchSeen<'_>),
) -> Result<ReplayReport, BenchError> {
    Ok(replay(config, dump, store, options, |batch| {
        on_batch(BatchSeen {
            batch,
            state: seen.state,
            state_bytes: (seen.state_bytes)(),
            probe_start: seen.probe_start,
        })
    })?)
}

/// The schema version of [`RunSummary`] this build writes and reads. Files written before
/// results carried one (every figure at the top level) are version 1; version 3 adds the read
/// cost account (the CPU split by mode, sleeps and preemptions, RocksDB's time in reads);
/// version 4 the workers' own CPU ([`CpuUse::worker_s`]); version 5 the time reading the dump
/// ([`RunTiming::read_dump_s`]). Version 3 and 4 files are read too, without what came after them.
pub const RUN_SCHEMA_VERSION: u32 = 5;

/// What `run --json` writes: the replay's totals, its timings, the shared cache's counts, where
/// its reads were served from and the CPU it had, grouped as a bench's runs are
/// ([`crate::RunResult`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSummary {
    /// [`RUN_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Blocks replayed.
    pub blocks: u64,
    /// Blocks at the start of the dump the state already held (a resumed run).
    pub skipped: u64,
    /// The state's block that the dump's first block was not checked against, where it could
    /// not be (`--trust-state` over a state that records no hash of its block: reth's MDBX);
    /// absent where it was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_block_unchecked: Option<u64>,
    /// Transactions replayed.
    pub transactions: u64,
    /// Gas replayed.
    pub gas: u64,
    /// Batches replayed.
    pub batches: usize,
    /// Throughput over execution with I/O, Mgas/s.
    pub mgas_per_s: f64,
    /// Where the replay's time went.
    pub timing: RunTiming,
    /// The shared cache's counts.
    pub cache: CacheCounts,
    /// Where the reads were served from, and whether the run was disk-resident.
    pub disk: DiskEvidence,
    /// How RocksDB's multi-gets read their blocks: through io_uring, or by pread where the
    /// kernel refused io_uring.
    pub read_path: ReadPath,
    /// The CPU this process and everything else used (where `/proc` tells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuUse>,
    /// Each parallel batch's profile (`--task-profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch_profiles: Vec<BatchProfile>,
}

impl VersionedResult for RunSummary {
    const KIND: &'static str = "run result";
    const SCHEMA_VERSION: u32 = RUN_SCHEMA_VERSION;
    /// Versions 4 and 5 only added optional fields.
    const ALSO_READS: &'static [u32] = &[3, 4];
}

impl RunSummary {
    /// The summary of a measured replay; its batch profiles are moved, not copied.
    pub fn of(mut run: MeasuredReplay) -> Self {
        let batch_profiles = run.take_batch_profiles();
        let r = &run.report;
        Self {
            schema_version: RUN_SCHEMA_VERSION,
            blocks: r.blocks,
            skipped: r.skipped,
            state_block_unchecked: r.state_block_unchecked,
            transactions: r.txs,
            gas: r.gas,
            batches: r.batches.len(),
            mgas_per_s: r.mgas_per_s(),
            timing: RunTiming::of(r),
            cache: CacheCounts::of(r),
            disk: run.disk,
            read_path: bal_replay_rocks::io_uring::read_path().clone(),
            cpu: run.cpu,
            batch_profiles,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_result;
    use bal_replay_probe::ResidencyBasis;
    use bal_replay_rocks::RocksReadCounters;

    fn summary() -> RunSummary {
        RunSummary {
            schema_version: RUN_SCHEMA_VERSION,
            blocks: 6,
            skipped: 0,
            state_block_unchecked: None,
            transactions: 40,
            gas: 8_000_000,
            batches: 3,
            mgas_per_s: 16.0,
            timing: RunTiming {
                exec_with_io_s: 0.5,
                prefetch_s: 0.125,
                longest_txs_s: 0.25,
                commit_s: 0.0625,
                wall_s: 0.75,
                read_dump_s: Some(0.25),
            },
            cache: CacheCounts {
                hits: 30,
                misses: 10,
                keys_prefetched: 0,
            },
            disk: DiskEvidence::new(
                bal_replay_probe::device::IoDelta {
                    device_reads: Some(0),
                    device_read_bytes: Some(0),
                    ..Default::default()
                },
                0,
                Some(RocksReadCounters {
                    keys_read: 120,
                    keys_found_in_files: 100,
                    block_cache_hits: 20,
                    block_cache_misses: 80,
                    block_cache_data_misses: 60,
                    read_micros: 900,
                    file_read_micros: 600,
                }),
                false,
            ),
            read_path: ReadPath::Pread {
                reason: "io_uring_setup: Operation not permitted (os error 1)".into(),
            },
            // Every field present, so the golden file pins them all.
            cpu: Some(CpuUse {
                wall_s: 2.0,
                process_s: 1.5,
                other_s: 0.25,
                steal_s: 0.0,
                user_s: Some(1.25),
                system_s: Some(0.25),
                sleeps: Some(40),
                preemptions: Some(3),
                worker_s: Some(1.0),
            }),
            batch_profiles: Vec::new(),
        }
    }

    #[test]
    fn a_run_summary_reads_back_grouped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&summary()).unwrap()).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(json["schema_version"], RUN_SCHEMA_VERSION);
        assert_eq!(json["cpu"]["worker_s"], 1.0);
        assert_eq!(json["timing"]["commit_s"], 0.0625);
        assert_eq!(json["cache"]["hits"], 30);
        // Read through the page cache with no device byte read: cache-resident, and said how.
        assert_eq!(json["disk"]["residency"]["basis"], "device-bytes");
        assert_eq!(json["disk"]["residency"]["disk_resident"], false);
        // Which path RocksDB's multi-gets took, and why where the kernel refused io_uring.
        assert_eq!(json["read_path"]["path"], "pread");
        assert_eq!(
            json["read_path"]["reason"],
            "io_uring_setup: Operation not permitted (os error 1)"
        );
        let back: RunSummary = read_result(&path).unwrap();
        assert_eq!(back.disk.residency.basis, ResidencyBasis::DeviceBytes);
        assert_eq!(back, summary());
    }

    #[test]
    fn a_run_summary_of_another_schema_version_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        // Version 1: every figure at the top level, no version.
        let v1 = dir.path().join("v1.json");
        std::fs::write(
            &v1,
            br#"{"blocks": 6, "transactions": 40, "key_reads": 120, "disk_resident": false}"#,
        )
        .unwrap();
        assert_eq!(
            read_result::<RunSummary>(&v1).unwrap_err().to_string(),
            format!(
                "{}: written with run result schema version 1, this build reads versions 3, 4 and 5",
                v1.display()
            )
        );
        let mut json = serde_json::to_value(summary()).unwrap();
        json["schema_version"] = 99.into();
        let v99 = dir.path().join("v99.json");
        std::fs::write(&v99, serde_json::to_vec(&json).unwrap()).unwrap();
        assert_eq!(
            read_result::<RunSummary>(&v99).unwrap_err().to_string(),
            format!(
                "{}: written with run result schema version 99, this build reads versions 3, 4 and 5",
                v99.display()
            )
        );
    }

    #[test]
    fn the_run_result_format_is_its_golden_file() {
        let golden =
            bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        bal_replay_results::assert_golden(&golden, &summary());
    }
}
