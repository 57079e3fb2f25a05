//! `bal-replay bench`, `demo`, `bench-db` and `bench-reference`: the research's measurements.

use crate::{
    ChainArgs, DiskArgs, DiskMode, DiskTableArgs, DumpArgs, OutputArgs, ReplayArgs, at_least_one,
    count, progress_bar,
};
use bal_replay_bench::{
    BenchMatrix, BenchResult, TaskProfiles,
    point_reads::{BenchDbOptions, bench_db, render_bench_db},
    render_tables, run_bench,
};
use bal_replay_dump::DumpReader;
use bal_replay_engine::IoDesign;
use bal_replay_executor::ChainConfig;
use bal_replay_host::drop_page_cache;
use bal_replay_mdbx_state::StateSpec;
use bal_replay_probe::device::disk_bound_mgas_per_s;
use clap::Args;
use eyre::WrapErr;
use std::{num::NonZeroUsize, path::PathBuf};

/// What `bench` varies where `run` takes one value, and how often it repeats each configuration.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Matrix")]
pub struct BenchShapeArgs {
    /// Worker counts.
    #[arg(long, value_name = "LIST", value_parser = count, default_value = "1,2", value_delimiter = ',')]
    pub threads: Vec<NonZeroUsize>,
    /// Batch sizes.
    #[arg(long, value_name = "LIST", value_parser = count, default_value = "1,10,50", value_delimiter = ',')]
    pub batch: Vec<NonZeroUsize>,
    /// I/O designs.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "full,full-verify,batched,parallel,hybrid",
        value_delimiter = ','
    )]
    pub io: Vec<IoDesign>,
    /// Skip the sequential and in-memory baselines.
    #[arg(long)]
    pub no_baselines: bool,
    /// Runs per configuration, reported as their median and spread.
    #[arg(long, value_name = "N", value_parser = count, default_value = "1")]
    pub repeat: NonZeroUsize,
}

/// Run the research's matrix from the same pre-state (never written) and print its tables.
#[derive(Debug, Clone, Args)]
pub struct BenchCommand {
    #[command(flatten)]
    pub chain: ChainArgs,
    #[command(flatten)]
    pub shape: BenchShapeArgs,
    #[command(flatten)]
    pub replay: ReplayArgs,
    #[command(flatten)]
    pub disk: DiskArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// The disk's curve: each run against its bound.
    #[command(flatten)]
    pub disk_table: DiskTableArgs,
}

impl BenchCommand {
    /// The matrix these options ask for (no in-memory baseline over MDBX; `run` leaves it out
    /// over a dump of independent blocks too, which it reads), or why the disk flags cannot apply
    /// to the state.
    pub fn matrix(&self) -> eyre::Result<BenchMatrix> {
        Ok(self.matrix_over(&self.disk.resolve([&self.chain.state])?, false))
    }

    /// The matrix these options ask for, with the disk flags resolved as `disk`.
    fn matrix_over(&self, disk: &DiskMode, independent_blocks: bool) -> BenchMatrix {
        let over_mdbx = matches!(self.chain.state, StateSpec::Mdbx(_));
        let rocksdb = disk.rocksdb_reads();
        let (shape, replay) = (&self.shape, &self.replay);
        BenchMatrix {
            threads: shape.threads.clone(),
            batches: shape.batch.clone(),
            designs: shape.io.clone(),
            io_threads: replay.io_threads,
            drop_caches: disk.drop_caches,
            direct_io: rocksdb.direct_io,
            pin_metadata: rocksdb.pin_metadata,
            sequential: !shape.no_baselines,
            in_memory: !shape.no_baselines && !over_mdbx && !independent_blocks,
            block_cache_bytes: rocksdb.block_cache_bytes,
            cache: replay.cache.into(),
            repeat: shape.repeat,
            profile: if replay.task_profile {
                TaskProfiles::All
            } else {
                TaskProfiles::Off
            },
            pin_workers: replay.pin_workers.clone(),
            trust_state: replay.trust.trust_state,
        }
    }

    /// Runs the matrix and prints its tables.
    pub fn run(&self) -> eyre::Result<()> {
        // Contradicting disk flags are refused before the process enters a cgroup.
        let disk = self.disk.resolve([&self.chain.state])?;
        // A result that cannot be written is refused now, not after the runs it would hold.
        self.output.check()?;
        let _memory_limit = disk.enter_memory_limit()?;
        if matches!(self.chain.state, StateSpec::Mdbx(_)) && !self.shape.no_baselines {
            eprintln!(
                "note: no in-memory baseline over MDBX (it would need the whole state loaded \
                 into memory, and MDBX is read by key); bench the RocksDB state bal-migrate \
                 makes of {} for it",
                self.chain.state
            );
        }
        let independent_blocks = !bal_replay_dump::DumpReader::open(&self.chain.dump)?
            .expect_records()?
            .manifest()
            .chained;
        if independent_blocks && !self.shape.no_baselines {
            eprintln!(
                "note: no in-memory baseline over a dump of independent blocks (each has its own \
                 pre-state, and the baseline loads one state); the sequential baseline runs"
            );
        }
        // Read before the runs: a bad table fails now, not after an hour of them.
        let fio = self.disk_table.read()?;
        bench(
            &self.chain.dump,
            &self.chain.state,
            &self.matrix_over(&disk, independent_blocks),
            self.output.json.as_ref(),
            fio.as_ref(),
        )
    }
}

/// Each run that read the state against the disk's bound ([`disk_bound_mgas_per_s`]): how near
/// the best design comes to what the disk allows. Runs with fewer than 1,000 key reads
/// (full BAL reads only the system contracts' keys) have no bound worth the name.
fn render_disk_bound(result: &BenchResult, disk: &bal_replay_model::DiskModel) -> String {
    use std::fmt::Write;
    let best = disk.best_iops();
    let mut out = format!(
        "### Against the disk's bound ({}: best {:.0} IOPS)\n\nBound = gas per device read x the disk's best IOPS: no run can go faster while each of its device reads must be served. Device reads count every process's.\n\n| Run | Device reads per Mgas | Bound (MGas/s) | Measured (MGas/s) | Measured / bound |\n| --- | --- | --- | --- | --- |\n",
        disk.source, best
    );
    for r in result.runs.iter().filter(|r| r.store.is_disk()) {
        let (Some(reads), true) = (r.disk.device_reads, r.disk.key_reads >= 1_000) else {
            continue;
        };
        let Some(bound) = disk_bound_mgas_per_s(r.gas, reads, best) else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {:.2} |",
            r.label(),
            reads as f64 / (r.gas as f64 / 1e6),
            bound,
            r.throughput.mgas_per_s,
            r.throughput.mgas_per_s / bound
        );
    }
    out.push('\n');
    out.push_str(&render_prefetch_against_disk(result, disk));
    out
}

/// Batched I/O's prefetch against the disk at the prefetch's queue depth (the target: prefetch
/// throughput at least 0.8 of fio's IOPS at the same queue depth). Only batched I/O: its
/// execution reads nothing from the state, so the run's device reads are its prefetch's, done in
/// `prefetch_s` (the device's counters count every process's reads, and any a commit's flush or
/// compaction makes: the rate is at most the prefetch's own). Hybrid and full-verify read beside
/// execution, which the counters cannot split. The prefetch runs 2 x
/// `io_threads` reader threads, each with one read in flight (a multi-get reads its blocks one
/// after the other without io_uring), and fio is read at that depth. Runs of an io_uring build are
/// left out: there a multi-get submits its blocks at once, and the depth is not the readers'.
fn render_prefetch_against_disk(
    result: &BenchResult,
    disk: &bal_replay_model::DiskModel,
) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "### Batched I/O's prefetch against the disk at its queue depth\n\nThe run's device reads (every process's) over its prefetch time: execution reads nothing from the state, so this is at most the prefetch's own rate. Set against fio's IOPS at the prefetch's reads in flight: one per reader thread, 2 x `--io-threads`.\n\n| Run | `--io-threads` | Reads in flight | Device reads | Prefetch (s) | Device reads/s | fio IOPS at that depth | Prefetch / fio |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    if result.rocksdb_io_uring {
        out.push_str("| (an io_uring build: a multi-get has more reads in flight than its reader, so no depth to set it against) | | | | | | | |\n");
        return out;
    }
    let mut rows = 0;
    for r in result
        .runs
        .iter()
        .filter(|r| r.store.is_disk() && r.design == IoDesign::Batched && r.timing.prefetch_s > 0.0)
    {
        let (Some(reads), Some(io_threads)) = (r.disk.device_reads, r.io_threads) else {
            continue;
        };
        let depth = 2 * io_threads;
        let rate = reads as f64 / r.timing.prefetch_s;
        let fio = disk.iops_at(depth as f64);
        rows += 1;
        let _ = writeln!(
            out,
            "| {} | {io_threads} | {depth} | {reads} | {:.2} | {rate:.0} | {fio:.0} | {:.2} |",
            r.label(),
            r.timing.prefetch_s,
            rate / fio
        );
    }
    if rows == 0 {
        out.push_str("| (no batched I/O run with device counters) | | | | | | | |\n");
    }
    out
}

/// Runs `matrix` with a progress bar (one step per run) and prints its tables.
fn bench(
    dump: &PathBuf,
    state: &StateSpec,
    matrix: &BenchMatrix,
    json: Option<&PathBuf>,
    fio: Option<&bal_replay_model::DiskModel>,
) -> eyre::Result<()> {
    let reader = DumpReader::open(dump)?;
    let config = ChainConfig::for_dump(&reader)?;
    let bar = progress_bar(
        matrix.run_count(),
        "{spinner} bench [{bar:30}] {pos}/{len} runs, eta {eta} {msg}",
    );
    let result = run_bench(&config, dump, state, matrix, |r| {
        bar.inc(1);
        bar.println(format!(
            "{:<40} {:>9.1} Mgas/s",
            r.label(),
            r.throughput.mgas_per_s
        ));
    })?;
    bar.finish_and_clear();
    println!("{}", render_tables(&result));
    if let Some(disk) = fio {
        println!("{}", render_disk_bound(&result, disk));
    }
    if let Some(path) = json {
        result.write_json(path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Generate a small mainnet-like chain and study it (the README's first command): the answer for
/// it, and its findings page in a fresh directory.
#[derive(Debug, Clone, Args)]
pub struct DemoCommand {
    /// Blocks to generate.
    #[arg(long, value_parser = at_least_one::<u64>, default_value_t = 20)]
    pub blocks: u64,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker counts to compare.
    #[arg(long, value_parser = count, default_value = "1,2", value_delimiter = ',')]
    pub threads: Vec<NonZeroUsize>,
    /// Batch sizes to compare.
    #[arg(long, value_parser = count, default_value = "1,10", value_delimiter = ',')]
    pub batch: Vec<NonZeroUsize>,
    /// Drop the machine's page cache before each run (root only; slows other processes).
    #[arg(long)]
    pub drop_caches: bool,
}

impl DemoCommand {
    /// Generates the chain, studies it (the quick form), and ends with the answer. The chain and
    /// its state are removed at the end; the findings page stays, in a fresh directory it names.
    pub fn run(&self) -> eyre::Result<()> {
        // Kept only once the study has written its page: a demo that fails leaves no directory.
        let page_dir = tempfile::Builder::new()
            .prefix("bal-replay-demo.")
            .tempdir()?;
        let scratch = tempfile::tempdir()?;
        let dump = scratch.path().join("dump");
        let state = scratch.path().join("state");
        let config = bal_replay_synth::GeneratorConfig {
            blocks: self.blocks,
            seed: self.seed,
            ..bal_replay_synth::GeneratorConfig::default()
        };
        let bar = progress_bar(
            self.blocks,
            "{spinner} generating [{bar:30}] {pos}/{len} blocks, {per_sec} {msg}",
        );
        let chain = bal_replay_synth::generate(&config, &dump, &state, Some(&bar))?;
        bar.finish_and_clear();
        println!(
            "generated {} mainnet-like blocks ({} transactions, {:.1} Mgas) over {} accounts",
            chain.blocks,
            chain.txs,
            chain.gas_used as f64 / 1e6,
            chain.genesis_accounts,
        );
        let study = crate::study::StudyCommand {
            dump: DumpArgs { dump },
            state,
            out: page_dir.path().to_path_buf(),
            quick: true,
            threads: Some(self.threads.clone()),
            batch: Some(self.batch.clone()),
            repeat: None,
            no_fio: false,
            disk_table: DiskTableArgs::default(),
            from_bench: None,
            beside: None,
            drop_caches: self.drop_caches,
            no_sweep: true,
            title: Some(format!(
                "the demo chain ({} generated blocks, seed {})",
                self.blocks, self.seed
            )),
        };
        let output = study.run()?;
        let _ = page_dir.keep();
        // The regime is the one the study measured: with direct reads and a small block cache,
        // even this small state's cold reads reach the device, so "cache-resident" is not a given.
        let regime = match output.findings.regime {
            bal_replay_study::Regime::CacheResident => {
                "This chain's state is small enough to stay in memory: the figures above are cache-resident."
            }
            bal_replay_study::Regime::NotMeasured => {
                "No device counter told where this chain's reads were served from: the figures above \
                 are of a regime not measured, over a state that fits in memory."
            }
            _ => {
                "This chain's state is tiny: with direct reads some of its reads reached the disk (the page's \
                 regime column), but it fits in memory and says little about a state that cannot."
            }
        };
        println!(
            "\n{regime}\n\
             To answer the question on disk, generate a state larger than the memory and study it:\n  \
             bal-dump generate --out D --state S --blocks 200 --state-entries 200000000\n  \
             bal-replay study --dump D --state S --out DIR"
        );
        Ok(())
    }
}

/// Random point reads of existing keys per reader-thread count, MDBX vs RocksDB (the research's
/// random-read table): keys are sampled from each store first, then every run reads among them.
#[derive(Debug, Clone, Args)]
pub struct BenchDbCommand {
    /// Stores: `mdbx:<dir>`, `rocksdb:<dir>` or `<dir>` (RocksDB); repeat or comma-separate.
    #[arg(long, required = true, value_delimiter = ',')]
    pub db: Vec<StateSpec>,
    /// Reader-thread counts.
    #[arg(long, value_parser = at_least_one::<usize>, default_value = "1,2,4,8,16,32", value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// Reads per thread count (split over its threads).
    #[arg(long, value_parser = at_least_one::<u64>, default_value_t = 1_000_000)]
    pub reads: u64,
    /// Keys of each kind (accounts, slots) sampled from each store.
    #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 100_000)]
    pub sample: usize,
    /// Seed of the sampling and of the key choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read engine: sorted multi-gets of this many keys per call, not point reads (latency per key).
    // RocksDB's `MultiGet` with sorted input; MDBX reads the keys one by one in key order.
    #[arg(long, value_name = "N", value_parser = at_least_one::<usize>)]
    pub multiget: Option<usize>,
    /// Where the results go.
    #[command(flatten)]
    pub output: OutputArgs,
    /// `--drop-caches` closes the store, drops the page cache and reopens it before each run;
    /// `--disk-resident` (or `--direct-io`, `--block-cache`) makes each reader's read reach the
    /// disk, a pread pool whose queue depth is the thread count (compare `scripts/fio-random-reads.sh`).
    /// Last: its help heading would otherwise be the heading of the options declared after it.
    #[command(flatten)]
    pub disk: DiskArgs,
}

impl BenchDbCommand {
    /// Reads every store and prints the table.
    pub fn run(&self) -> eyre::Result<()> {
        let any_mdbx = self.db.iter().any(|s| matches!(s, StateSpec::Mdbx(_)));
        let disk = self.disk.resolve(&self.db)?;
        self.output.check()?;
        let _memory_limit = disk.enter_memory_limit()?;
        let rocksdb = disk.rocksdb_reads();
        let options = BenchDbOptions {
            threads: self.threads.clone(),
            reads: self.reads,
            sample: self.sample,
            seed: self.seed,
            drop_caches: disk.drop_caches,
            rocks_direct_io: rocksdb.direct_io,
            rocks_block_cache_bytes: rocksdb.block_cache_bytes,
            rocks_pin_metadata: rocksdb.pin_metadata,
            multiget_keys: self.multiget,
        };
        let drop_caches = || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            drop_page_cache().map_err(Into::into)
        };
        if self.disk.rocksdb_flag().is_some() && any_mdbx {
            eprintln!(
                "note: --direct-io and --block-cache apply to the RocksDB stores only; MDBX is \
                 memory-mapped and read through the page cache (bound it with --memory-limit)"
            );
        }
        let mut reports = Vec::new();
        for spec in &self.db {
            eprintln!("bench-db: sampling and reading {spec}");
            reports.push(bench_db(spec, &options, &drop_caches)?);
        }
        println!("{}", render_bench_db(&reports));
        if let Some(path) = &self.output.json {
            bal_replay_bench::point_reads::write_json(&reports, path)
                .wrap_err_with(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
        }
        Ok(())
    }
}

/// Time the reference executor, single-threaded, on a dump of independent blocks (e.g. imported
/// mainnet fixtures): in memory and over RocksDB.
#[derive(Debug, Clone, Args)]
pub struct BenchReferenceCommand {
    #[command(flatten)]
    pub dump: DumpArgs,
    /// Executions of each block in memory after its first, timed in the same process (warm).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub repeat: usize,
    /// Where the result goes.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl BenchReferenceCommand {
    /// Times the reference executor and prints the two throughputs.
    pub fn run(&self) -> eyre::Result<()> {
        self.output.check()?;
        let reader = DumpReader::open(&self.dump)?;
        let config = ChainConfig::for_dump(&reader)?;
        let scratch = tempfile::tempdir()?;
        let r =
            bal_replay_bench::reference_throughput(&config, &reader, scratch.path(), self.repeat)?;
        println!(
            "reference executor, 1 thread, {} blocks, {} gas: in memory {:.1} Mgas/s ({:.3}s), RocksDB {:.1} Mgas/s ({:.3}s), RocksDB / memory = {:.2}",
            r.blocks,
            r.gas,
            r.memory_mgas_s(),
            r.memory_s,
            r.rocksdb_mgas_s(),
            r.rocksdb_s,
            r.rocksdb_mgas_s() / r.memory_mgas_s().max(1e-12)
        );
        if let Some((fastest, median)) = r.warm_mgas_s() {
            println!(
                "in memory, warm ({} more executions of each block in this process): fastest {fastest:.1} Mgas/s, median {median:.1} Mgas/s; the figure above is each block's first",
                r.warm_repeats
            );
        }
        if let Some(path) = &self.output.json {
            r.write_json(path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_bench::{
        CacheCounts, Latency, MeanBalSizes, RunResult, RunTiming, StoreKind, Throughput,
    };
    use bal_replay_engine::ExecMode;
    use bal_replay_probe::DiskEvidence;

    fn run(design: IoDesign, mgas: f64, key_reads: u64, device_reads: u64) -> RunResult {
        let gas = 3_000_000_000u64;
        RunResult {
            mode: ExecMode::Parallel,
            design,
            threads: 8,
            batch: 10,
            store: StoreKind::Rocksdb,
            cold: true,
            io_threads: None,
            blocks: 100,
            txs: 10_000,
            gas,
            throughput: Throughput {
                mgas_per_s: mgas,
                end_to_end_mgas_per_s: mgas * 0.8,
                repeats: 1,
                mgas_per_s_min: mgas,
                mgas_per_s_max: mgas,
            },
            repeat_mgas_per_s: Vec::new(),
            timing: RunTiming {
                exec_with_io_s: gas as f64 / (mgas * 1e6),
                prefetch_s: 0.0,
                longest_txs_s: 0.1,
                commit_s: 0.1,
                wall_s: 5.0,
            },
            cache: CacheCounts {
                hits: 0,
                misses: key_reads,
                keys_prefetched: 0,
            },
            latency: Latency {
                read_p50_us: 16,
                read_p99_us: 256,
                tx_p50_us: 100,
                tx_p99_us: 1000,
            },
            disk: DiskEvidence {
                device_reads: Some(device_reads),
                key_reads,
                ..Default::default()
            },
            cpu: None,
            batches: Vec::new(),
            batch_profiles: Vec::new(),
        }
    }

    /// A bench result of `runs` over a 100-block dump.
    fn result(runs: Vec<RunResult>) -> BenchResult {
        BenchResult {
            schema_version: bal_replay_bench::SCHEMA_VERSION,
            build_profile: "dev".into(),
            dump: "dump".into(),
            blocks: 100,
            cpus: 2,
            bal_sizes: MeanBalSizes {
                full: 1.0,
                batched: 1.0,
                parallel: 1.0,
            },
            rocksdb_io_uring: false,
            independent_blocks: false,
            worker_start: None,
            pinned_workers: None,
            dump_identity: None,
            ratios_to_full: Vec::new(),
            runs,
        }
    }

    #[test]
    fn runs_that_read_the_state_are_set_against_the_disk_bound() {
        let result = result(vec![
            // 3 Ggas over 100 K device reads at 60 K IOPS: a bound of 1,800 MGas/s.
            run(IoDesign::Parallel, 900.0, 212_000, 100_000),
            // Full BAL reads the system contracts' keys only: no bound worth the name.
            run(IoDesign::Full, 5000.0, 3, 2),
        ]);
        let disk = bal_replay_model::DiskModel::from_spec(60_000.0, 50.0).unwrap();
        let text = render_disk_bound(&result, &disk);
        let parallel = format!(
            "| {} | 33.3 | 1800.0 | 900.0 | 0.50 |",
            result.runs[0].label()
        );
        assert!(text.contains(&parallel), "{text}");
        assert!(!text.contains(&result.runs[1].label()), "{text}");
        assert!(text.contains("best 60000 IOPS"), "{text}");
        // No batched run: the prefetch table says so rather than showing nothing.
        assert!(
            text.contains("(no batched I/O run with device counters)"),
            "{text}"
        );
    }

    #[test]
    fn batched_io_prefetch_is_set_against_fio_at_its_queue_depth() {
        let prefetching = |design| {
            let mut r = run(design, 1000.0, 212_000, 60_000);
            r.io_threads = Some(8);
            r.timing.prefetch_s = 2.0;
            r
        };
        let result = result(vec![
            prefetching(IoDesign::Batched),
            // Hybrid's tasks read on demand beside its prefetch: their device reads are not the
            // prefetch's alone.
            prefetching(IoDesign::Hybrid),
        ]);
        let fio =
            "depth iops mean_latency_us\n1 15000 66\n4 30000 133\n16 40000 400\n64 50000 1280\n";
        let disk = bal_replay_model::DiskModel::parse_fio_table(fio, "fio.txt").unwrap();
        let text = render_prefetch_against_disk(&result, &disk);
        // 60 K device reads in 2 s is 30 K/s; 8 readers each for accounts and slots put at most
        // 16 reads in flight, where fio made 40 K IOPS: 0.75.
        let batched = format!(
            "| {} | 8 | 16 | 60000 | 2.00 | 30000 | 40000 | 0.75 |",
            result.runs[0].label()
        );
        assert!(text.contains(&batched), "{text}");
        assert_eq!(text.matches("| parallel/").count(), 1, "{text}");
        // An io_uring build's multi-gets have more reads in flight than readers: no row.
        let uring = BenchResult {
            rocksdb_io_uring: true,
            ..result
        };
        let text = render_prefetch_against_disk(&uring, &disk);
        assert_eq!(text.matches("| parallel/").count(), 0, "{text}");
        assert!(text.contains("an io_uring build"), "{text}");
    }
}
