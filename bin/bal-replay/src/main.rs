//! `bal-replay`: replay dumps over a RocksDB flat state, and benchmark the BAL designs.

use bal_replay_bench::{
    BenchMatrix,
    point_reads::{BenchDbOptions, bench_db, render_bench_db},
    render_tables, run_bench,
};
use bal_replay_cache::CacheCapacity;
use bal_replay_dump::DumpReader;
use bal_replay_engine::{
    ExecMode, IoDesign, ReplayOptions, ScratchState, TaskOrder, drop_page_cache, replay,
    warm_up_kzg,
};
use bal_replay_exec::ChainConfig;
use bal_replay_mdbx_state::{MdbxStore, RethDb, StateSpec};
use bal_replay_state::{MemOverlay, RocksOptions, RocksStore, StateReader, StateWriter};
use clap::{Args, Parser, Subcommand};
use eyre::{WrapErr, eyre};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};

/// Parses a count that must be at least 1 (workers, blocks, batch sizes, readers, repeats): a zero
/// would otherwise run as 1 and be reported as 0.
fn at_least_one<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr + From<u8> + PartialOrd,
    T::Err: std::fmt::Display,
{
    let n: T = s.parse().map_err(|e: T::Err| e.to_string())?;
    if n < T::from(1) {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// The shared cache's bounds (entries per table). Resident memory is bounded by these plus
/// RocksDB's block cache and a fixed margin, whatever the replay's length.
#[derive(Debug, Clone, Copy, Args)]
struct CacheArgs {
    /// Shared cache: accounts held at most.
    #[arg(long, default_value_t = CacheCapacity::default().accounts)]
    cache_accounts: usize,
    /// Shared cache: storage slots held at most.
    #[arg(long, default_value_t = CacheCapacity::default().storage)]
    cache_slots: usize,
    /// Shared cache: contract codes held at most.
    #[arg(long, default_value_t = CacheCapacity::default().codes)]
    cache_codes: usize,
}

impl From<CacheArgs> for CacheCapacity {
    fn from(a: CacheArgs) -> Self {
        Self {
            accounts: a.cache_accounts,
            storage: a.cache_slots,
            codes: a.cache_codes,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "bal-replay",
    version,
    about = "Replay BAL dumps and benchmark the BAL I/O designs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a small mainnet-like chain in a temporary directory and benchmark it (the default job).
    Demo {
        /// Blocks to generate.
        #[arg(long, value_parser = at_least_one::<u64>, default_value_t = 20)]
        blocks: u64,
        /// Generator seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Worker counts to compare.
        #[arg(long, value_parser = at_least_one::<usize>, default_value = "1,2", value_delimiter = ',')]
        threads: Vec<usize>,
        /// Batch sizes to compare.
        #[arg(long, value_parser = at_least_one::<usize>, default_value = "1,10", value_delimiter = ',')]
        batch: Vec<usize>,
    },
    /// Replay a dump once over a state (modified in place unless --rewind).
    Run {
        /// Dump directory (chained).
        #[arg(long)]
        dump: PathBuf,
        /// State at the block before the dump's first, or at a block of the dump (a stopped run:
        /// the blocks it holds are skipped and the replay resumes): `<dir>` or `rocksdb:<dir>` (a RocksDB flat
        /// state, modified in place unless --rewind), or `mdbx:<dir>` (reth's database, read in
        /// place and never written: each batch's commit stays in memory).
        #[arg(long)]
        state: StateSpec,
        /// sequential or parallel.
        #[arg(long, default_value = "parallel")]
        mode: String,
        /// Execution workers.
        #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 2)]
        threads: usize,
        /// Blocks per batch.
        #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 50)]
        batch: usize,
        /// I/O design: full, batched, parallel or hybrid.
        #[arg(long, default_value = "parallel")]
        io: IoDesign,
        /// Prefetch readers.
        #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 8)]
        io_threads: usize,
        #[command(flatten)]
        cache: CacheArgs,
        /// Task order: block or longest-first.
        #[arg(long, default_value = "block")]
        order: TaskOrder,
        /// Replay over a RocksDB checkpoint of the state (hard links, in a fresh directory beside
        /// it, removed afterwards), leaving the state as it was.
        #[arg(long)]
        rewind: bool,
        /// Drop the page cache first (root only).
        #[arg(long)]
        drop_caches: bool,
        /// RocksDB direct reads.
        #[arg(long)]
        direct_io: bool,
        /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:9464).
        #[arg(long)]
        metrics: Option<std::net::SocketAddr>,
        /// Keep serving metrics this many seconds after the replay, so a scraper sees the end.
        #[arg(long, default_value_t = 0)]
        metrics_linger: u64,
        /// Write a JSON summary (totals and timings) here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Random point reads of existing keys per reader-thread count, MDBX vs RocksDB (the research's
    /// random-read table): keys are sampled from each store first, then every run reads among them.
    BenchDb {
        /// Stores: `mdbx:<dir>`, `rocksdb:<dir>` or `<dir>` (RocksDB); repeat or comma-separate.
        #[arg(long, required = true, value_delimiter = ',')]
        db: Vec<StateSpec>,
        /// Reader-thread counts.
        #[arg(long, value_parser = at_least_one::<usize>, default_value = "1,2,4,8,16,32", value_delimiter = ',')]
        threads: Vec<usize>,
        /// Reads per thread count (split over its threads).
        #[arg(long, value_parser = at_least_one::<u64>, default_value_t = 1_000_000)]
        reads: u64,
        /// Keys of each kind (accounts, slots) sampled from each store.
        #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 100_000)]
        sample: usize,
        /// Seed of the sampling and of the key choice.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Close the store, drop the page cache and reopen it before each run (root only).
        #[arg(long)]
        drop_caches: bool,
        /// Write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Time the reference executor, single-threaded, on a dump of independent blocks (e.g. imported
    /// mainnet fixtures): in memory and over RocksDB.
    BenchReference {
        /// Dump directory.
        #[arg(long)]
        dump: PathBuf,
    },
    /// Run the research's matrix from the same pre-state and print its tables.
    Bench {
        /// Dump directory (chained).
        #[arg(long)]
        dump: PathBuf,
        /// Pristine state at the block before the dump's first, never written: `<dir>` or
        /// `rocksdb:<dir>` (a RocksDB flat state; every run replays over a hard-link clone), or
        /// `mdbx:<dir>` (reth's database; every run opens it read-only and keeps its commits in
        /// memory). Over MDBX the in-memory baseline is left out (it would need the whole state
        /// loaded into memory; a note says so) and --direct-io is refused.
        #[arg(long)]
        state: StateSpec,
        /// Worker counts.
        #[arg(long, value_parser = at_least_one::<usize>, default_value = "1,2", value_delimiter = ',')]
        threads: Vec<usize>,
        /// Batch sizes.
        #[arg(long, value_parser = at_least_one::<usize>, default_value = "1,10,50", value_delimiter = ',')]
        batch: Vec<usize>,
        /// I/O designs.
        #[arg(
            long,
            default_value = "full,batched,parallel,hybrid",
            value_delimiter = ','
        )]
        io: Vec<IoDesign>,
        /// Prefetch readers.
        #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 8)]
        io_threads: usize,
        #[command(flatten)]
        cache: CacheArgs,
        /// Task order: block or longest-first.
        #[arg(long, default_value = "block")]
        order: TaskOrder,
        /// Drop the page cache before each run (root only).
        #[arg(long)]
        drop_caches: bool,
        /// RocksDB direct reads (RocksDB states only).
        #[arg(long)]
        direct_io: bool,
        /// Skip the sequential and in-memory baselines.
        #[arg(long)]
        no_baselines: bool,
        /// Runs per configuration; the median by throughput is reported with the spread.
        #[arg(long, value_parser = at_least_one::<usize>, default_value_t = 1)]
        repeat: usize,
        /// Write the result as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Charts (PNG and SVG) and a Markdown summary next to the research's figures, from
    /// `bench --json` results.
    Report {
        /// JSON files written by `bal-replay bench --json`.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// TrueType font for chart text.
        #[arg(long, default_value = bal_replay_report::DEFAULT_FONT)]
        font: PathBuf,
    },
}

fn main() -> eyre::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Demo {
            blocks,
            seed,
            threads,
            batch,
        } => demo(blocks, seed, threads, batch),
        Command::BenchReference { dump } => bench_reference(dump),
        Command::BenchDb {
            db,
            threads,
            reads,
            sample,
            seed,
            drop_caches,
            json,
        } => bench_db_cmd(
            &db,
            &BenchDbOptions {
                threads,
                reads,
                sample,
                seed,
                drop_caches,
            },
            json,
        ),
        Command::Report { inputs, out, font } => report(&inputs, out, font),
        Command::Run {
            dump,
            state,
            mode,
            threads,
            batch,
            io,
            io_threads,
            cache,
            order,
            rewind,
            drop_caches,
            direct_io,
            metrics,
            metrics_linger,
            json,
        } => {
            let mode = match mode.as_str() {
                "sequential" | "seq" => ExecMode::Sequential,
                "parallel" | "par" => ExecMode::Parallel,
                other => {
                    return Err(eyre!(
                        "unknown mode {other:?} (expected sequential or parallel)"
                    ));
                }
            };
            let options = ReplayOptions {
                mode,
                threads,
                order,
                design: io,
                batch,
                io_threads,
                cache: cache.into(),
            };
            run(RunArgs {
                dump,
                state,
                options,
                rewind,
                drop_caches,
                direct_io,
                metrics,
                metrics_linger,
                json,
            })
        }
        Command::Bench {
            dump,
            state,
            threads,
            batch,
            io,
            io_threads,
            cache,
            order,
            drop_caches,
            direct_io,
            no_baselines,
            repeat,
            json,
        } => {
            let over_mdbx = matches!(state, StateSpec::Mdbx(_));
            if over_mdbx && direct_io {
                return Err(eyre!("--direct-io applies to RocksDB states only"));
            }
            if over_mdbx && !no_baselines {
                eprintln!(
                    "note: no in-memory baseline over MDBX (it would need the whole state loaded \
                     into memory, and MDBX is read by key); bench the RocksDB state bal-migrate \
                     makes of {state} for it"
                );
            }
            let matrix = BenchMatrix {
                threads,
                batches: batch,
                designs: io,
                io_threads,
                order,
                drop_caches,
                direct_io,
                sequential: !no_baselines,
                in_memory: !no_baselines && !over_mdbx,
                block_cache_bytes: RocksOptions::default().block_cache_bytes,
                cache: cache.into(),
                repeat,
            };
            bench(dump, state, matrix, json)
        }
    }
}

struct RunArgs {
    dump: PathBuf,
    state: StateSpec,
    options: ReplayOptions,
    rewind: bool,
    drop_caches: bool,
    direct_io: bool,
    metrics: Option<std::net::SocketAddr>,
    metrics_linger: u64,
    json: Option<PathBuf>,
}

/// What `run --json` writes: the totals a scraper or a script can check a run against.
#[derive(serde::Serialize)]
struct RunSummary {
    blocks: u64,
    /// Blocks at the start of the dump the state already held (a resumed run).
    skipped: u64,
    transactions: u64,
    gas: u64,
    batches: usize,
    mgas_per_s: f64,
    exec_with_io_s: f64,
    /// Of `exec_with_io_s`, the prefetch that runs before execution (batched I/O).
    prefetch_s: f64,
    longest_txs_s: f64,
    commit_s: f64,
    wall_s: f64,
    cache_hits: u64,
    cache_misses: u64,
}

fn run(args: RunArgs) -> eyre::Result<()> {
    if let Some(addr) = args.metrics {
        bal_replay_metrics::install_exporter(addr)?;
        // Present from the first scrape, so "no failures" reads as 0, not as no data.
        metrics::counter!(bal_replay_metrics::REPLAY_VERIFICATION_FAILURES).increment(0);
        metrics::counter!(bal_replay_metrics::REPLAY_STORE_ERRORS).increment(0);
    }
    let dump = DumpReader::open(&args.dump)?;
    let config = ChainConfig::for_dump(&dump)?;
    match &args.state {
        StateSpec::RocksDb(state) => run_rocksdb(&args, &dump, &config, state)?,
        StateSpec::Mdbx(dir) => run_mdbx(&args, &dump, &config, dir)?,
    }
    if args.metrics.is_some() && args.metrics_linger > 0 {
        std::thread::sleep(std::time::Duration::from_secs(args.metrics_linger));
    }
    Ok(())
}

fn run_rocksdb(
    args: &RunArgs,
    dump: &DumpReader,
    config: &ChainConfig,
    state: &Path,
) -> eyre::Result<()> {
    // With --rewind the replay writes to a checkpoint in a fresh directory of its own beside the
    // state (removed when `scratch` drops, after the store); the state itself is never written to.
    let scratch = if args.rewind {
        Some(
            ScratchState::checkpoint_of(state, "rewind")
                .wrap_err_with(|| format!("making a scratch copy of {}", state.display()))?,
        )
    } else {
        None
    };
    let path = scratch
        .as_ref()
        .map_or_else(|| state.to_path_buf(), |s| s.path().to_path_buf());
    if args.drop_caches {
        drop_page_cache()?;
    }
    let store = RocksStore::open(
        &path,
        &RocksOptions {
            direct_io: args.direct_io,
            ..RocksOptions::default()
        },
    )
    .wrap_err_with(|| format!("opening state {}", path.display()))?;
    let result = replay_and_report(args, dump, config, &store, || {
        store.approximate_size_bytes().ok()
    });
    drop(store);
    drop(scratch);
    result
}

/// reth's MDBX read in place, never written: each batch's commit stays in memory (`MemOverlay`),
/// so every run starts from the database's state (`--rewind` is implied). Block hashes come from
/// the dump's first record first, since reth keeps headers in static files, not in MDBX.
fn run_mdbx(
    args: &RunArgs,
    dump: &DumpReader,
    config: &ChainConfig,
    dir: &Path,
) -> eyre::Result<()> {
    if args.direct_io {
        return Err(eyre!("--direct-io applies to RocksDB states only"));
    }
    if args.drop_caches {
        drop_page_cache()?;
    }
    let db = RethDb::open(dir).wrap_err_with(|| format!("opening {}", args.state))?;
    let mdbx = MdbxStore::new(&db).wrap_err_with(|| format!("reading {}", args.state))?;
    let store = MemOverlay::new(&mdbx);
    if let Some(first) = dump.records().next() {
        let first = first?;
        store.insert_block_hashes(first.block_hashes.iter().map(|h| (h.number, h.hash)))?;
    }
    replay_and_report(args, dump, config, &store, || None)
}

/// Replays `dump` over `store`, with the progress bar, metrics and summary of `run`.
fn replay_and_report<S: StateReader + StateWriter>(
    args: &RunArgs,
    dump: &DumpReader,
    config: &ChainConfig,
    store: &S,
    state_size: impl Fn() -> Option<u64>,
) -> eyre::Result<()> {
    warm_up_kzg();
    let bar = progress_bar(
        dump.manifest().record_count,
        "{spinner} replay [{bar:30}] {pos}/{len} blocks, {per_sec}, eta {eta} {msg}",
    );
    let mut cache_seen = bal_replay_cache::CacheStats::default();
    let result = replay(config, dump, store, &args.options, |b| {
        bal_replay_metrics::record_batch(b);
        bal_replay_metrics::record_cache(&cache_seen, &b.cache);
        cache_seen = b.cache.clone();
        if let Some(size) = state_size() {
            metrics::gauge!(bal_replay_metrics::REPLAY_STATE_SIZE).set(size as f64);
        }
        bar.inc(b.last_block - b.first_block + 1);
        let secs = b.exec_with_io().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "{:.1} Mgas/s (batch {}..={})",
            b.gas as f64 / secs / 1e6,
            b.first_block,
            b.last_block
        ));
    });
    bar.finish_and_clear();
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            bal_replay_metrics::record_replay_error(&e);
            return Err(e.into());
        }
    };
    let last = dump.manifest().last_block;
    if report.skipped > 0 {
        println!(
            "skipped {} blocks the state already held (resuming after block {})",
            report.skipped,
            dump.manifest()
                .first_block
                .map_or(0, |first| first + report.skipped - 1)
        );
    }
    match last {
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
    if let Some(json) = &args.json {
        let summary = RunSummary {
            blocks: report.blocks,
            skipped: report.skipped,
            transactions: report.txs,
            gas: report.gas,
            batches: report.batches.len(),
            mgas_per_s: report.mgas_per_s(),
            exec_with_io_s: report.exec_with_io.as_secs_f64(),
            prefetch_s: report.prefetch().as_secs_f64(),
            longest_txs_s: report.longest_txs.as_secs_f64(),
            commit_s: report.commit.as_secs_f64(),
            wall_s: report.wall.as_secs_f64(),
            cache_hits: report.cache.hits,
            cache_misses: report.cache.misses,
        };
        std::fs::write(json, serde_json::to_vec_pretty(&summary)?)
            .wrap_err_with(|| format!("writing {}", json.display()))?;
    }
    Ok(())
}

fn bench(
    dump: PathBuf,
    state: StateSpec,
    matrix: BenchMatrix,
    json: Option<PathBuf>,
) -> eyre::Result<()> {
    let reader = DumpReader::open(&dump)?;
    let config = ChainConfig::for_dump(&reader)?;
    let designs = matrix.designs.len();
    let per_batch = designs * matrix.threads.len()
        + if matrix.sequential { 1 } else { 0 }
        + if matrix.in_memory {
            1 + matrix.threads.len()
        } else {
            0
        };
    let bar = progress_bar(
        (per_batch * matrix.batches.len() * matrix.repeat.max(1)) as u64,
        "{spinner} bench [{bar:30}] {pos}/{len} runs, eta {eta} {msg}",
    );
    let result = run_bench(&config, &dump, &state, &matrix, |r| {
        bar.inc(1);
        bar.println(format!("{:<40} {:>9.1} Mgas/s", r.label(), r.mgas_per_s));
    })?;
    bar.finish_and_clear();
    println!("{}", render_tables(&result));
    if let Some(path) = json {
        result.write_json(&path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn demo(blocks: u64, seed: u64, threads: Vec<usize>, batch: Vec<usize>) -> eyre::Result<()> {
    let dir = tempfile::tempdir()?;
    let dump = dir.path().join("dump");
    let state = dir.path().join("state");
    let config = bal_replay_synth::GeneratorConfig {
        blocks,
        seed,
        ..bal_replay_synth::GeneratorConfig::default()
    };
    let bar = progress_bar(
        blocks,
        "{spinner} generating [{bar:30}] {pos}/{len} blocks, {per_sec} {msg}",
    );
    let chain = bal_replay_synth::generate(&config, &dump, &state, Some(&bar))?;
    bar.finish_and_clear();
    println!("generated a mainnet-like chain: {chain:?}");
    let matrix = BenchMatrix {
        threads,
        batches: batch,
        designs: IoDesign::ALL.to_vec(),
        io_threads: 4,
        order: TaskOrder::BlockOrder,
        drop_caches: false,
        direct_io: false,
        sequential: true,
        in_memory: true,
        block_cache_bytes: RocksOptions::default().block_cache_bytes,
        cache: CacheCapacity::default(),
        repeat: 1,
    };
    bench(dump, StateSpec::RocksDb(state), matrix, None)
}

fn report(inputs: &[PathBuf], out: PathBuf, font: PathBuf) -> eyre::Result<()> {
    let inputs = bal_replay_report::load_inputs(inputs)?;
    let options = bal_replay_report::ReportOptions {
        font,
        ..bal_replay_report::ReportOptions::new(out)
    };
    let written = bal_replay_report::write_report(&inputs, &options)?;
    for file in written.files(&options.out) {
        println!("wrote {}", file.display());
    }
    for reason in &written.skipped {
        println!("not drawn: {reason}");
    }
    Ok(())
}

fn bench_db_cmd(
    dbs: &[StateSpec],
    opts: &BenchDbOptions,
    json: Option<PathBuf>,
) -> eyre::Result<()> {
    let drop_caches = || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        drop_page_cache().map_err(Into::into)
    };
    let mut reports = Vec::new();
    for spec in dbs {
        eprintln!("bench-db: sampling and reading {spec}");
        reports.push(bench_db(spec, opts, &drop_caches)?);
    }
    println!("{}", render_bench_db(&reports));
    if let Some(path) = json {
        bal_replay_bench::point_reads::write_json(&reports, &path)
            .wrap_err_with(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn bench_reference(dump: PathBuf) -> eyre::Result<()> {
    let reader = DumpReader::open(&dump)?;
    let config = ChainConfig::for_dump(&reader)?;
    let scratch = tempfile::tempdir()?;
    let r = bal_replay_bench::reference_throughput(&config, &reader, scratch.path())?;
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
    Ok(())
}

/// A progress bar with `template` (falls back to the plain style if the template does not parse).
fn progress_bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed_and_parses_lists() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "bal-replay",
            "bench",
            "--dump",
            "d",
            "--state",
            "s",
            "--threads",
            "1,2,4",
            "--batch",
            "1,50",
            "--io",
            "full,hybrid",
            "--cache-slots",
            "200000",
        ])
        .unwrap();
        match cli.command {
            Command::Bench {
                threads,
                batch,
                io,
                cache,
                ..
            } => {
                assert_eq!(threads, vec![1, 2, 4]);
                assert_eq!(batch, vec![1, 50]);
                assert_eq!(io, vec![IoDesign::Full, IoDesign::Hybrid]);
                assert_eq!(
                    CacheCapacity::from(cache),
                    CacheCapacity {
                        storage: 200_000,
                        ..CacheCapacity::default()
                    }
                );
            }
            _ => panic!("parsed another command"),
        }
        assert!(
            Cli::try_parse_from([
                "bal-replay",
                "bench",
                "--dump",
                "d",
                "--state",
                "s",
                "--io",
                "fast"
            ])
            .is_err()
        );
    }

    #[test]
    fn state_and_db_specs_parse() {
        let cli = Cli::try_parse_from([
            "bal-replay",
            "bench-db",
            "--db",
            "mdbx:/a,rocksdb:/b",
            "--db",
            "/c",
            "--threads",
            "1,2",
        ])
        .unwrap();
        match cli.command {
            Command::BenchDb { db, threads, .. } => {
                assert_eq!(
                    db,
                    vec![
                        StateSpec::Mdbx("/a".into()),
                        StateSpec::RocksDb("/b".into()),
                        StateSpec::RocksDb("/c".into())
                    ]
                );
                assert_eq!(threads, vec![1, 2]);
            }
            _ => panic!("parsed another command"),
        }
        let cli = Cli::try_parse_from(["bal-replay", "run", "--dump", "d", "--state", "mdbx:/r"])
            .unwrap();
        match cli.command {
            Command::Run { state, .. } => assert_eq!(state, StateSpec::Mdbx("/r".into())),
            _ => panic!("parsed another command"),
        }
        let cli = Cli::try_parse_from(["bal-replay", "bench", "--dump", "d", "--state", "mdbx:/r"])
            .unwrap();
        match cli.command {
            Command::Bench { state, .. } => assert_eq!(state, StateSpec::Mdbx("/r".into())),
            _ => panic!("parsed another command"),
        }
    }
}
