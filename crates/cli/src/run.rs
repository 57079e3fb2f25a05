//! `bal-replay run`: one replay of a dump over a state, with progress, metrics and a summary.

use crate::{ChainArgs, DiskArgs, DiskMode, OutputArgs, ReplayArgs, count, progress_bar, record};
use bal_replay_bench::{BenchError, MeasuredReplay, ReplaySource, RunSummary, measured_replay};
use bal_replay_cache::CacheStats;
use bal_replay_dump::DumpReader;
use bal_replay_engine::{
    BatchReport, ExecMode, IoDesign, ReplayOptions, ReplayReport, warm_up_kzg,
};
use bal_replay_executor::ChainConfig;
use bal_replay_mdbx_state::StateSpec;
use bal_replay_probe::{
    DiskEvidence, Residency, ResidencyBasis, device::IoSample, residency::DISK_RESIDENT_SHARE,
};
use clap::Args;
use eyre::WrapErr;
use indicatif::ProgressBar;
use std::{net::SocketAddr, num::NonZeroUsize};

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
// The shared `--dump` help names the commands that refuse independent blocks, this one among them.
#[command(mut_arg("dump", |a| a.help("Dump directory: a chain (independent blocks are for `bench`)")))]
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
        crate::paths::check_apart(&self.output.outputs(), &self.chain.inputs())?;
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
        let rocks = disk.rocksdb_reads().rocks_options();
        let first_block_hashes;
        let source = match &self.chain.state {
            // With --rewind the replay writes to a scratch copy beside the state, which is never
            // written; without, the state moves on and a stopped run resumes.
            StateSpec::RocksDb(path) => ReplaySource::Rocks {
                path,
                options: &rocks,
                scratch: self.rewind.then_some("rewind"),
            },
            // reth's MDBX is read in place and never written (`--rewind` is implied).
            StateSpec::Mdbx(dir) => {
                first_block_hashes = dump.first_block_hashes()?;
                ReplaySource::Mdbx {
                    dir,
                    first_block_hashes: &first_block_hashes,
                }
            }
        };
        let run = self
            .replay(&dump, &config, source, &disk)
            .wrap_err_with(|| format!("replaying over {}", self.chain.state))?;
        drop(memory_limit);
        record::record_disk_evidence(&run.disk);
        print_summary(&dump, &run.report);
        print_disk_evidence(&run.disk, run.report.exec_with_io.as_secs_f64());
        if let Some(json) = &self.output.json {
            let summary = RunSummary::of(run);
            // Task profiles are tens of thousands of numbers: on one line.
            let layout = if summary.batch_profiles.is_empty() {
                bal_replay_bench::Layout::Pretty
            } else {
                bal_replay_bench::Layout::OneLine
            };
            bal_replay_bench::write_result(json, &summary, layout)
                .wrap_err_with(|| format!("writing {}", json.display()))?;
        }
        if self.metrics.is_some() && self.metrics_linger > 0 {
            std::thread::sleep(std::time::Duration::from_secs(self.metrics_linger));
        }
        Ok(())
    }

    /// The measured replay of `dump` over `source` ([`measured_replay`], as every bench run),
    /// with the progress bar and metrics per batch.
    fn replay(
        &self,
        dump: &DumpReader,
        config: &ChainConfig,
        source: ReplaySource<'_>,
        disk: &DiskMode,
    ) -> eyre::Result<MeasuredReplay> {
        warm_up_kzg();
        let options = self.replay_options();
        let progress = ReplayProgress::new(dump, options.batch);
        let mut cache_seen = CacheStats::default();
        // The device's counters since the previous batch; the first batch's since the probe
        // started.
        let mut io_seen: Option<IoSample> = None;
        let result = measured_replay(
            config,
            dump,
            source,
            &options,
            disk.drop_caches,
            &mut |seen| {
                let io = IoSample::take(seen.state);
                record::record_io(&io.since(io_seen.as_ref().unwrap_or(seen.probe_start)));
                io_seen = Some(io);
                record::record_batch(seen.batch);
                record::record_cache(&cache_seen, &seen.batch.cache);
                cache_seen = seen.batch.cache.clone();
                if let Some(size) = seen.state_bytes {
                    record::record_state_size(size);
                }
                progress.batch_done(seen.batch);
            },
        );
        progress.bar.finish_and_clear();
        result.map_err(|e| {
            if let BenchError::Engine(engine) = &e {
                record::record_replay_error(engine);
            }
            eyre::Report::from(e)
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

/// The run's regime with the share that decided it, stated against the side of the rule it fell
/// on, so the word and the figure beside it never disagree: "cache-resident (3% of block lookups
/// reached the device, under 80%; ...)".
fn regime_phrase(residency: &Residency) -> String {
    let rule = 100.0 * DISK_RESIDENT_SHARE;
    let basis = residency.basis_label();
    match residency.reached_device {
        Some(share) if residency.disk_resident => format!(
            "{} ({:.0}% of block lookups reached the device, at least {rule:.0}%; counted as {basis})",
            residency.label(),
            100.0 * share,
        ),
        // Rounded down, so a share just under the rule never prints as the rule itself.
        Some(share) => format!(
            "{} ({:.0}% of block lookups reached the device, under {rule:.0}%; counted as {basis})",
            residency.label(),
            (100.0 * share).floor(),
        ),
        None => match residency.basis {
            ResidencyBasis::NoReads => residency.label().to_owned(),
            _ => format!("{} ({basis})", residency.label()),
        },
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
    println!(
        "reads: {} keys from the store{stored}; device: {} reads{per_key}{in_flight}, {}; this process: {}; major faults {}{misses}; {}",
        disk.key_reads,
        count(disk.device_reads),
        mib(disk.device_read_bytes),
        mib(disk.process_read_bytes),
        count(disk.major_faults),
        regime_phrase(&disk.residency),
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
    use bal_replay_probe::ResidencyCounts;

    fn phrase(data_misses: u64, lookups: u64) -> String {
        let counts = ResidencyCounts {
            key_reads: 1_000,
            block_cache_hits: Some(lookups - data_misses),
            block_cache_misses: Some(data_misses),
            block_cache_data_misses: Some(data_misses),
            device_read_bytes: None,
        };
        regime_phrase(&Residency::judge(&counts, true))
    }

    /// The word and the share agree, on either side of the rule and just under it.
    #[test]
    fn the_regime_is_said_with_the_side_of_the_rule_its_share_fell() {
        assert_eq!(
            phrase(0, 1_000),
            "cache-resident (0% of block lookups reached the device, under 80%; counted as block lookups that missed (direct reads))"
        );
        assert_eq!(
            phrase(799, 1_000),
            "cache-resident (79% of block lookups reached the device, under 80%; counted as block lookups that missed (direct reads))"
        );
        assert_eq!(
            phrase(950, 1_000),
            "disk-resident (95% of block lookups reached the device, at least 80%; counted as block lookups that missed (direct reads))"
        );
        let none = Residency::judge(&ResidencyCounts::default(), true);
        assert_eq!(regime_phrase(&none), "reads no state");
    }
}
