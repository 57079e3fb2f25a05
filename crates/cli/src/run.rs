//! `bal-replay run`: one replay of a dump over a state, with progress, metrics and a summary.

use crate::{ChainArgs, DiskArgs, DiskMode, OutputArgs, ReplayArgs, count, progress_bar, record};
use bal_replay_bench::{
    DiskEvidence,
    device::{IoSample, RunProbe},
    first_block_hashes, with_mdbx_overlay,
};
use bal_replay_cache::CacheStats;
use bal_replay_dump::DumpReader;
use bal_replay_engine::{
    BatchProfile, BatchReport, ExecMode, IoDesign, ReplayOptions, ReplayReport, ScratchState,
    replay, warm_up_kzg,
};
use bal_replay_executor::ChainConfig;
use bal_replay_host::drop_page_cache;
use bal_replay_mdbx_state::StateSpec;
use bal_replay_state::{RocksReadCounters, RocksStore, StateReader, StateWriter};
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
            order: replay.order,
            design: shape.io,
            batch: shape.batch,
            io_threads: replay.io_threads,
            prefetch_order: replay.prefetch_order,
            cache: replay.cache.into(),
            pipeline: replay.pipeline,
            profile: replay.task_profile,
            pin_workers: replay.pin_workers.as_deref().map(Into::into),
            trust_state: replay.trust.trust_state,
        }
    }

    /// Replays, prints the summary and writes it as JSON if asked.
    pub fn run(&self) -> eyre::Result<()> {
        // Contradicting disk flags are refused before anything is served, opened or entered.
        let disk = self.disk.resolve([&self.chain.state])?;
        if let Some(addr) = self.metrics {
            bal_replay_metrics::install_exporter(addr)?;
            record::record_start();
        }
        let dump = DumpReader::open(&self.chain.dump)?;
        let config = ChainConfig::for_dump(&dump)?;
        let memory_limit = disk.enter_memory_limit()?;
        let run = match &self.chain.state {
            StateSpec::RocksDb(state) => self.over_rocksdb(&dump, &config, state, &disk)?,
            StateSpec::Mdbx(dir) => self.over_mdbx(&dump, &config, dir, &disk)?,
        };
        drop(memory_limit);
        record::record_disk_evidence(&run.disk);
        print_summary(&dump, &run.report);
        print_disk_evidence(&run.disk);
        if let Some(json) = &self.output.json {
            // Task profiles are tens of thousands of numbers: on one line.
            let bytes = if run.batch_profiles.is_empty() {
                serde_json::to_vec_pretty(&run)?
            } else {
                serde_json::to_vec(&run)?
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
                path,
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
        let hashes = first_block_hashes(dump)?;
        with_mdbx_overlay(dir, &hashes, |store| {
            self.replay(dump, config, store, dir, || None, || None)
        })
        .wrap_err_with(|| format!("reading {}", self.chain.state))?
    }

    /// Replays `dump` over `store` (on the device holding `path`) with the progress bar, recording
    /// metrics per batch, and gathers the run's disk evidence.
    fn replay<S: StateReader + StateWriter>(
        &self,
        dump: &DumpReader,
        config: &ChainConfig,
        store: &S,
        path: &Path,
        state_size: impl Fn() -> Option<u64>,
        rocks_counters: impl Fn() -> Option<RocksReadCounters>,
    ) -> eyre::Result<RunOutput> {
        warm_up_kzg();
        let options = self.replay_options();
        let progress = ReplayProgress::new(dump, options.batch);
        let mut cache_seen = CacheStats::default();
        let probe = RunProbe::start(path, rocks_counters());
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
        let disk = probe.finish(&report, rocks_counters());
        // Moved out, not copied: the report's summary and metrics do not use them.
        let batch_profiles = report
            .batches
            .iter_mut()
            .filter_map(|b| b.profile.take())
            .collect();
        Ok(RunOutput {
            report,
            disk,
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

/// What `run --json` writes: the replay's report and where its reads were served from.
#[derive(Debug, serde::Serialize)]
struct RunOutput {
    #[serde(flatten)]
    report: ReplayReport,
    #[serde(flatten)]
    disk: DiskEvidence,
    /// Each parallel batch's profile (`--task-profile`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    batch_profiles: Vec<BatchProfile>,
}

/// One line on where the run's reads were served from.
fn print_disk_evidence(disk: &DiskEvidence) {
    let mib = |v: Option<u64>| {
        v.map_or("-".to_string(), |v| {
            format!("{:.1} MiB", v as f64 / 1048576.0)
        })
    };
    let count = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let per_key = disk
        .device_reads_per_key
        .map_or(String::new(), |v| format!(" ({v:.2} per key)"));
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
    println!(
        "reads: {} keys from the store{stored}; device: {} reads{per_key}, {}; this process: {}; major faults {}{misses}; disk-resident (>= 80% of stored key reads reached the device): {}",
        disk.key_reads,
        count(disk.device_reads),
        mib(disk.device_read_bytes),
        mib(disk.process_read_bytes),
        count(disk.major_faults),
        if disk.disk_resident { "yes" } else { "no" },
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
}
