//! `bal-replay run`: one replay of a dump over a state, with progress, metrics and a summary.

use crate::{ChainArgs, DiskArgs, DiskMode, OutputArgs, ReplayArgs, count, progress_bar, record};
use bal_replay_bench::{CacheCounts, RunTiming, VersionedResult};
use bal_replay_cache::CacheStats;
use bal_replay_dump::DumpReader;
use bal_replay_engine::{
    BatchProfile, BatchReport, ExecMode, IoDesign, ReplayOptions, ReplayReport, replay, warm_up_kzg,
};
use bal_replay_executor::ChainConfig;
use bal_replay_host::drop_page_cache;
use bal_replay_mdbx_state::{StateSpec, with_mdbx_overlay};
use bal_replay_probe::{
    CpuUse, DiskEvidence,
    device::{IoSample, RunProbe},
};
use bal_replay_rocks::ScratchState;
use bal_replay_rocks::{
    RocksReadCounters, RocksStore,
    io_uring::{ReadPath, read_path},
};
use bal_replay_state::{StateReader, StateWriter};
use clap::Args;
use eyre::WrapErr;
use indicatif::ProgressBar;
use std::{net::SocketAddr, num::NonZeroUsize, path::Path};

/// What `run` replays with where `bench` takes lists: one mode, worker count, batch size and design.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Replay")]
pub struct RunShapeArgs {
    /// Sequential (a block, a transaction at a time) or parallel.
    #[arg(
        long,
        value_enum,
        default_value = "parallel",
        hide_possible_values = true
    )]
    pub mode: ExecMode,
    /// Execution workers.
    #[arg(long, value_name = "N", value_parser = count, default_value = "2")]
    pub threads: NonZeroUsize,
    /// Blocks per batch.
    #[arg(long, value_name = "N", value_parser = count, default_value = "50")]
    pub batch: NonZeroUsize,
    /// I/O design: full, full-verify, batched, parallel or hybrid.
    #[arg(long, value_name = "DESIGN", default_value = "parallel")]
    pub io: IoDesign,
}

/// Replay a dump once over a state, modified in place unless --rewind (a stopped run resumes).
#[derive(Debug, Clone, Args)]
pub struct RunCommand {
    #[command(flatten)]
    pub chain: ChainArgs,
    /// Replay over a checkpoint of the RocksDB state, leaving the state as it was.
    #[arg(long)]
    pub rewind: bool,
    #[command(flatten)]
    pub shape: RunShapeArgs,
    #[command(flatten)]
    pub replay: ReplayArgs,
    #[command(flatten)]
    pub disk: DiskArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Serve Prometheus metrics on this address, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR", help_heading = "Output")]
    pub metrics: Option<SocketAddr>,
    /// Keep serving metrics this many seconds after the replay.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0,
        help_heading = "Output"
    )]
    pub metrics_linger: u64,
}

impl RunCommand {
    /// The engine's options for this run.
    pub fn replay_options(&self) -> ReplayOptions {
        let (shape, replay) = (&self.shape, &self.replay);
        ReplayOptions {
            mode: shape.mode,
            threads: shape.threads,
            design: shape.io,
            batch: shape.batch,
            io_threads: replay.io_threads,
            cache: replay.cache.into(),
            profile: replay.task_profile,
            pin_workers: replay.pin_workers.as_deref().map(Into::into),
            trust_state: replay.trust.trust_state,
            block_hashes_from_dump: false,
        }
    }

    /// Replays, prints the summary and writes it as JSON if asked.
    pub fn run(&self) -> eyre::Result<()> {
        // Contradicting disk flags are refused before anything is served, opened or entered.
        let disk = self.disk.resolve([&self.chain.state])?;
        // Before the replay, which without --rewind moves the state on: a summary that cannot be
        // written must not cost the run.
        self.output.check()?;
        if let Some(addr) = self.metrics {
            bal_replay_metrics::install_exporter(addr)?;
            record::record_start();
        }
        let dump = DumpReader::open(&self.chain.dump)?.expect_records()?;
        let config = ChainConfig::for_dump(&dump)?;
        let memory_limit = disk.enter_memory_limit()?;
        let run = match &self.chain.state {
            StateSpec::RocksDb(state) => self.over_rocksdb(&dump, &config, state, &disk)?,
            StateSpec::Mdbx(dir) => self.over_mdbx(&dump, &config, dir, &disk)?,
        };
        drop(memory_limit);
        record::record_disk_evidence(&run.disk);
        print_summary(&dump, &run.report);
        print_disk_evidence(&run.disk, run.report.exec_with_io.as_secs_f64());
        if let Some(json) = &self.output.json {
            let summary = RunSummary::of(run);
            // Task profiles are tens of thousands of numbers: on one line.
            let bytes = if summary.batch_profiles.is_empty() {
                serde_json::to_vec_pretty(&summary)?
            } else {
                serde_json::to_vec(&summary)?
            };
            bal_replay_bench::write_result_file(json, &bytes)
                .wrap_err_with(|| format!("writing {}", json.display()))?;
        }
        if self.metrics.is_some() && self.metrics_linger > 0 {
            std::thread::sleep(std::time::Duration::from_secs(self.metrics_linger));
        }
        Ok(())
    }

    fn over_rocksdb(
        &self,
        dump: &DumpReader,
        config: &ChainConfig,
        state: &Path,
        disk: &DiskMode,
    ) -> eyre::Result<RunOutput> {
        // With --rewind the replay writes to a checkpoint in a fresh directory of its own beside
        // the state (removed when `scratch` drops, after the store); the state is never written.
        let scratch = if self.rewind {
            Some(
                ScratchState::checkpoint_of(state, "rewind")
                    .wrap_err_with(|| format!("making a scratch copy of {}", state.display()))?,
            )
        } else {
            None
        };
        let path = scratch.as_ref().map_or(state, |s| s.path());
        if disk.drop_caches {
            drop_page_cache()?;
        }
        let options = disk.rocksdb_reads().rocks_options();
        let store = RocksStore::open(path, &options)
            .wrap_err_with(|| format!("opening state {}", path.display()))?;
        let output = self
            .replay(
                dump,
                config,
                &store,
                StateOnDisk {
                    path,
                    direct_io: options.direct_io,
                    block_hashes_from_dump: false,
                },
                || store.approximate_size_bytes().ok(),
                || store.read_counters(),
            )
            .map(|mut output| {
                output.disk.block_cache_pinned_bytes = store.block_cache_pinned_bytes();
                output
            });
        drop(store);
        drop(scratch);
        output
    }

    /// reth's MDBX read in place, never written: each batch's commit stays in memory, so every run
    /// starts from the database's state (`--rewind` is implied).
    fn over_mdbx(
        &self,
        dump: &DumpReader,
        config: &ChainConfig,
        dir: &Path,
        disk: &DiskMode,
    ) -> eyre::Result<RunOutput> {
        if disk.drop_caches {
            drop_page_cache()?;
        }
        let hashes = dump.first_block_hashes()?;
        with_mdbx_overlay(dir, hashes.iter().map(|h| (h.number, h.hash)), |store| {
            let state = StateOnDisk {
                path: dir,
                direct_io: false,
                // The overlay's block hashes are the dump's: the dump is not checked against them.
                block_hashes_from_dump: true,
            };
            self.replay(dump, config, store, state, || None, || None)
        })
        .wrap_err_with(|| format!("reading {}", self.chain.state))?
    }

    /// Replays `dump` over `store` (read from `state`) with the progress bar, recording metrics
    /// per batch, and gathers the run's disk evidence.
    fn replay<S: StateReader + StateWriter>(
        &self,
        dump: &DumpReader,
        config: &ChainConfig,
        store: &S,
        StateOnDisk {
            path,
            direct_io,
            block_hashes_from_dump,
        }: StateOnDisk<'_>,
        state_size: impl Fn() -> Option<u64>,
        rocks_counters: impl Fn() -> Option<RocksReadCounters>,
    ) -> eyre::Result<RunOutput> {
        warm_up_kzg();
        let options = ReplayOptions {
            block_hashes_from_dump,
            ..self.replay_options()
        };
        let progress = ReplayProgress::new(dump, options.batch);
        let mut cache_seen = CacheStats::default();
        let probe = RunProbe::start(path, rocks_counters(), direct_io);
        let mut io_seen = probe.io;
        let result = replay(config, dump, store, &options, |b| {
            let io = IoSample::take(path);
            record::record_io(&io.since(&io_seen));
            io_seen = io;
            record::record_batch(b);
            record::record_cache(&cache_seen, &b.cache);
            cache_seen = b.cache.clone();
            if let Some(size) = state_size() {
                record::record_state_size(size);
            }
            progress.batch_done(b);
        });
        progress.bar.finish_and_clear();
        let mut report = result.map_err(|e| {
            record::record_replay_error(&e);
            eyre::Report::from(e)
        })?;
        let (disk, cpu) = probe.finish(report.cache_key_reads(), rocks_counters());
        // Moved out, not copied: the report's summary and metrics do not use them.
        let batch_profiles = report
            .batches
            .iter_mut()
            .filter_map(|b| b.profile.take())
            .collect();
        Ok(RunOutput {
            report,
            disk,
            cpu,
            batch_profiles,
        })
    }
}

/// The replay's progress on stderr (hidden when stderr is not a terminal): blocks, batches, gas
/// per second of the last batch and the ETA.
struct ReplayProgress {
    bar: ProgressBar,
    batches: u64,
    done: std::cell::Cell<u64>,
}

impl ReplayProgress {
    fn new(dump: &DumpReader, batch: NonZeroUsize) -> Self {
        let blocks = dump.manifest().record_count;
        Self {
            bar: progress_bar(
                blocks,
                "{spinner} replay [{bar:30}] {pos}/{len} blocks, {per_sec}, eta {eta} {msg}",
            ),
            batches: blocks.div_ceil(batch.get() as u64),
            done: std::cell::Cell::new(0),
        }
    }

    fn batch_done(&self, b: &BatchReport) {
        self.done.set(self.done.get() + 1);
        self.bar.inc(b.last_block - b.first_block + 1);
        let secs = b.exec_with_io().as_secs_f64().max(1e-9);
        self.bar.set_message(format!(
            "{:.1} Mgas/s (batch {}/{}: {}..={})",
            b.gas as f64 / secs / 1e6,
            self.done.get(),
            self.batches,
            b.first_block,
            b.last_block
        ));
    }
}

/// What a replay measured: its report, where its reads were served from, the CPU it had.
#[derive(Debug)]
struct RunOutput {
    report: ReplayReport,
    disk: DiskEvidence,
    cpu: Option<CpuUse>,
    /// Each parallel batch's profile (`--task-profile`).
    batch_profiles: Vec<BatchProfile>,
}

/// The schema version of [`RunSummary`] this build writes and reads. Files written before
/// results carried one (every figure at the top level) are version 1.
pub const SCHEMA_VERSION: u32 = 2;

/// Where a replay's state is read from: the path whose block device its evidence counts, and
/// whether its reads bypass the page cache (which decides how residency is judged).
#[derive(Debug, Clone, Copy)]
struct StateOnDisk<'a> {
    path: &'a Path,
    direct_io: bool,
    /// Its block-hash table holds the dump's own hashes ([`ReplayOptions::block_hashes_from_dump`]).
    block_hashes_from_dump: bool,
}

/// What `run --json` writes: the replay's totals, its timings, the shared cache's counts, where
/// its reads were served from and the CPU it had, grouped as a bench's runs are
/// ([`bal_replay_bench::RunResult`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSummary {
    /// [`SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Blocks replayed.
    pub blocks: u64,
    /// Blocks at the start of the dump the state already held (a resumed run).
    pub skipped: u64,
    /// The state's block that the dump's first block was not checked against, where it could
    /// not be (`--trust-state` over a state that records no hash of its block: reth's MDBX);
    /// absent where it was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    const SCHEMA_VERSION: u32 = SCHEMA_VERSION;
}

impl RunSummary {
    /// The summary of a replay; its batch profiles are moved, not copied.
    fn of(run: RunOutput) -> Self {
        let r = &run.report;
        Self {
            schema_version: SCHEMA_VERSION,
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
            read_path: read_path().clone(),
            cpu: run.cpu,
            batch_profiles: run.batch_profiles,
        }
    }
}

/// One line on where the run's reads were served from; `exec_s`: its execution with I/O, the
/// time its reads in flight are averaged over.
fn print_disk_evidence(disk: &DiskEvidence, exec_s: f64) {
    let mib = |v: Option<u64>| {
        v.map_or("-".to_string(), |v| {
            format!("{:.1} MiB", v as f64 / 1048576.0)
        })
    };
    let count = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let per_key = disk
        .device_reads_per_key
        .map_or(String::new(), |v| format!(" ({v:.2} per key)"));
    let in_flight = match (disk.reads_in_flight(exec_s), disk.device_read_latency_us()) {
        (Some(depth), Some(us)) => format!(", {depth:.1} in flight at {us:.0} µs each"),
        _ => String::new(),
    };
    let misses = match (
        disk.block_cache_misses,
        disk.block_cache_hits,
        disk.block_cache_data_misses,
    ) {
        (Some(m), Some(h), Some(data)) => {
            format!("; block-cache misses {m} of {} ({data} data blocks)", m + h)
        }
        _ => String::new(),
    };
    let stored = disk
        .stored_key_reads
        .map_or(String::new(), |s| format!(" ({s} stored in SST files)"));
    let residency = &disk.residency;
    let reached = residency.reached_device.map_or(String::new(), |share| {
        format!(", {:.0}% reached the device", 100.0 * share)
    });
    println!(
        "reads: {} keys from the store{stored}; device: {} reads{per_key}{in_flight}, {}; this process: {}; major faults {}{misses}; {} (>= 80% of block lookups reached the device; counted as {}{reached})",
        disk.key_reads,
        count(disk.device_reads),
        mib(disk.device_read_bytes),
        mib(disk.process_read_bytes),
        count(disk.major_faults),
        residency.label(),
        residency.basis_label(),
    );
    if let Some(pinned) = disk.block_cache_pinned_bytes {
        println!(
            "block cache pinned (index and filter partitions, served from memory): {}",
            mib(Some(pinned))
        );
    }
    if let Some(m) = disk.memory {
        println!(
            "memory cgroup: limit {}, peak charge {}, page cache at end {}, limit hit {} times",
            mib(Some(m.limit_bytes)),
            mib(Some(m.max_usage_bytes)),
            mib(Some(m.page_cache_bytes)),
            m.limit_hits
        );
    }
}

/// What `run` prints: what it skipped (a resumed run) and what it replayed.
fn print_summary(dump: &DumpReader, report: &ReplayReport) {
    let manifest = dump.manifest();
    if report.skipped > 0 {
        println!(
            "skipped {} blocks the state already held (resuming after block {})",
            report.skipped,
            manifest
                .first_block
                .map_or(0, |first| first + report.skipped - 1)
        );
    }
    match manifest.last_block {
        _ if report.blocks > 0 => println!(
            "replayed {} blocks, {} txs, {} gas: {:.1} Mgas/s over {:.3}s execution with I/O (longest txs {:.3}s, commits {:.3}s, wall {:.3}s); cache hit ratio {:.1}%; every block verified",
            report.blocks,
            report.txs,
            report.gas,
            report.mgas_per_s(),
            report.exec_with_io.as_secs_f64(),
            report.longest_txs.as_secs_f64(),
            report.commit.as_secs_f64(),
            report.wall.as_secs_f64(),
            report.cache.hit_ratio() * 100.0
        ),
        Some(last) => println!(
            "nothing to replay: the state is already at block {last}, the dump's last block"
        ),
        None => println!("nothing to replay: the dump holds no blocks"),
    }
    if let Some(block) = report.state_block_unchecked {
        println!(
            "not checked: the state records no hash of its block {block}, so the dump's first \
             block was not checked against it (trusted, --trust-state)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_bench::read_result;
    use bal_replay_probe::ResidencyBasis;

    fn summary() -> RunSummary {
        RunSummary {
            schema_version: SCHEMA_VERSION,
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
                }),
                false,
            ),
            read_path: ReadPath::Pread {
                reason: "io_uring_setup: Operation not permitted (os error 1)".into(),
            },
            cpu: None,
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
        assert_eq!(json["schema_version"], 2);
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
                "{}: written with run result schema version 1, this build reads version 2",
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
                "{}: written with run result schema version 99, this build reads version 2",
                v99.display()
            )
        );
    }
}
