//! `bal-replay bench`, `demo`, `bench-db` and `bench-reference`: the research's measurements.

use crate::{
    ChainArgs, DiskArgs, DiskMode, DiskTableArgs, DumpArgs, OutputArgs, ReplayArgs, ThreadsArgs,
    at_least_one, count, progress_bar,
};
use bal_replay_bench::{
    BenchMatrix, TaskProfiles,
    point_reads::{BenchDbOptions, MAX_MULTIGET_KEYS, bench_db, render_bench_db},
    render_tables, run_bench,
};
use bal_replay_dump::DumpReader;
use bal_replay_engine::IoDesign;
use bal_replay_executor::ChainConfig;
use bal_replay_host::drop_page_cache;
use bal_replay_mdbx_state::StateSpec;
use clap::Args;
use eyre::WrapErr;
use std::{num::NonZeroUsize, path::PathBuf};

/// What `bench` varies where `run` takes one value, and how often it repeats each configuration.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Matrix")]
pub struct BenchShapeArgs {
    #[command(flatten)]
    pub threads: ThreadsArgs,
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
            threads: shape.threads.or_one_and_cores(),
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
        let inputs: Vec<_> = self
            .chain
            .inputs()
            .into_iter()
            .chain(self.disk_table.inputs())
            .collect();
        crate::paths::check_apart(&self.output.outputs(), &inputs)?;
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
        println!("{}", bal_replay_report::render_disk_bound(&result, disk));
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
    #[command(flatten)]
    pub threads: ThreadsArgs,
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
        // The study library's quick form, called as `study --quick` calls it.
        let options = bal_replay_study::StudyOptions {
            quick: true,
            threads: Some(self.threads.or_one_and_cores()),
            batches: Some(self.batch.clone()),
            repeat: None,
            fio: true,
            disk: None,
            out: page_dir.path().to_path_buf(),
            title: Some(format!(
                "the demo chain ({} generated blocks, seed {})",
                self.blocks, self.seed
            )),
            from_bench: None,
            beside: None,
            drop_caches: self.drop_caches,
            sweep: false,
            command: crate::study::command_line(),
        };
        let output = crate::study::study_with_progress(&dump, &state, &options)?;
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
    /// Reader-thread counts (readers, not execution workers).
    #[arg(long, value_name = "LIST", value_parser = count, default_value = "1,2,4,8,16,32", value_delimiter = ',')]
    pub threads: Vec<NonZeroUsize>,
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
    #[arg(long, value_name = "N", value_parser = multiget_keys)]
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

/// Parses `--multiget`: 1 to [`MAX_MULTIGET_KEYS`] keys per call.
fn multiget_keys(s: &str) -> Result<usize, String> {
    let keys = at_least_one::<usize>(s)?;
    if keys > MAX_MULTIGET_KEYS {
        return Err(format!(
            "at most {MAX_MULTIGET_KEYS} keys per call: a call's keys are gathered and sorted in \
             memory and read as one batch, so a larger call costs memory and measures nothing more"
        ));
    }
    Ok(keys)
}

impl BenchDbCommand {
    /// Reads every store and prints the table.
    pub fn run(&self) -> eyre::Result<()> {
        let stores: Vec<_> = self
            .db
            .iter()
            .map(|s| crate::paths::Input::dir("--db", s.path()))
            .collect();
        crate::paths::check_apart(&self.output.outputs(), &stores)?;
        let any_mdbx = self.db.iter().any(|s| matches!(s, StateSpec::Mdbx(_)));
        let disk = self.disk.resolve(&self.db)?;
        self.output.check()?;
        let _memory_limit = disk.enter_memory_limit()?;
        let rocksdb = disk.rocksdb_reads();
        let options = BenchDbOptions {
            threads: self.threads.iter().map(|n| n.get()).collect(),
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
        let dump = crate::paths::Input::dir("--dump", &self.dump);
        crate::paths::check_apart(&self.output.outputs(), &[dump])?;
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
        if let Some((fastest, median)) = r.warm_less_receipts_root_mgas_s() {
            println!(
                "in memory, warm, less the receipts-root check: fastest {fastest:.1} Mgas/s, median {median:.1} Mgas/s"
            );
        }
        if let Some(path) = &self.output.json {
            r.write_json(path)?;
        }
        Ok(())
    }
}
