//! `bal-migrate`: copies a reth v2.5.1 node's state (MDBX, v1 or v2 layout) into the RocksDB flat
//! state that `bal-replay` replays over. Everything but argument parsing and progress display lives
//! in `bal-replay-migrate`.

use std::{
    path::PathBuf,
    sync::Mutex,
    time::{Duration, Instant},
};

use bal_replay_migrate::{
    GenerateOptions, Layout, MigrateOptions, Progress, TableKind, churn_source, generate_source,
    migrate,
};
use clap::{Parser, Subcommand};
use eyre::{WrapErr, bail};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

#[derive(Parser, Debug)]
#[command(
    name = "bal-migrate",
    about = "Migrate reth's MDBX state into the RocksDB flat state"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    migrate: MigrateArgs,
}

#[derive(clap::Args, Debug)]
struct MigrateArgs {
    /// reth's datadir, or its `db` directory.
    #[arg(long)]
    src: Option<PathBuf>,
    /// Destination directory (must be empty unless --resume).
    #[arg(long)]
    dst: Option<PathBuf>,
    /// Worker threads (all reading one MDBX snapshot).
    #[arg(
        long,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        default_value_t = std::thread::available_parallelism().map_or(2, |n| n.get())
    )]
    threads: usize,
    /// Finish a migration that an earlier run left incomplete in --dst.
    #[arg(long)]
    resume: bool,
    /// Afterwards, compare source and destination (counts and entries) in the snapshot the
    /// migration read, and print the digest.
    #[arg(long)]
    verify: bool,
    /// Entries a worker copies between durable progress checkpoints (each one a flush): what a
    /// crash can lose and --resume re-copies.
    #[arg(
        long,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        default_value_t = MigrateOptions::default().checkpoint_entries
    )]
    checkpoint_entries: usize,
    /// With --verify, the fraction of entries compared value by value (counts are always full).
    #[arg(long, default_value_t = 1.0)]
    sample: f64,
    /// Serve Prometheus metrics (bal_migrate_*) on this address, e.g. 127.0.0.1:9465.
    #[arg(long)]
    metrics: Option<std::net::SocketAddr>,
    /// Keep serving metrics this many seconds after the migration, so a scraper sees the end.
    #[arg(long, default_value_t = 0)]
    metrics_linger: u64,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write a synthetic reth-layout MDBX database (same tables, flags and encodings) of N entries.
    GenSource {
        /// Datadir to create (the database goes into its `db/`).
        #[arg(long)]
        out: PathBuf,
        /// State entries (accounts + slots + codes).
        #[arg(long, default_value_t = 1_000_000)]
        entries: u64,
        /// Layout: v1 (plain) or v2 (hashed).
        #[arg(long, default_value = "v2")]
        layout: String,
        /// Execution stage checkpoint to record.
        #[arg(long, default_value_t = 1)]
        height: u64,
        /// Instead of random entries, write this RocksDB flat state's contents (all of them, its
        /// key scheme choosing the layout and its height the checkpoint), e.g. a synthetic chain's
        /// genesis, to replay it over reth's layout with `bal-replay run --state mdbx:<out>`.
        #[arg(long, conflicts_with_all = ["entries", "layout", "height"])]
        from_state: Option<PathBuf>,
    },
    /// Play a node writing to a source: commit a round of state changes (one height each) in a
    /// loop, for tests of migrating from a live node.
    #[command(hide = true)]
    ChurnSource {
        /// The datadir (or `db`) to write to.
        #[arg(long)]
        src: PathBuf,
        /// Stop after this many rounds (default: run until killed).
        #[arg(long)]
        rounds: Option<u64>,
        /// Pause after each round, in milliseconds.
        #[arg(long, default_value_t = 1)]
        pause_ms: u64,
    },
}

/// One progress bar per table, with rate and ETA.
struct Bars {
    multi: MultiProgress,
    bars: Mutex<Vec<(TableKind, ProgressBar)>>,
}

impl Bars {
    fn bar(&self, table: TableKind) -> Option<ProgressBar> {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        bars.iter()
            .find(|(t, _)| *t == table)
            .map(|(_, b)| b.clone())
    }
}

impl Progress for Bars {
    fn table_started(&self, table: TableKind, source_entries: u64) {
        let bar = self.multi.add(ProgressBar::new(source_entries));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>9} [{bar:40}] {human_pos}/{human_len} {per_sec} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(table.name());
        bar.enable_steady_tick(Duration::from_millis(250));
        self.bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((table, bar));
    }
    fn entries(&self, table: TableKind, entries: u64, bytes: u64) {
        metrics::counter!(bal_replay_metrics::MIGRATE_ENTRIES, "table" => table.name())
            .increment(entries);
        metrics::counter!(bal_replay_metrics::MIGRATE_BYTES).increment(bytes);
        if let Some(bar) = self.bar(table) {
            bar.inc(entries);
            metrics::gauge!(bal_replay_metrics::MIGRATE_RATE).set(bar.per_sec());
        }
    }
    fn table_finished(&self, table: TableKind) {
        if let Some(bar) = self.bar(table) {
            bar.finish();
        }
    }
}

fn main() -> eyre::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::GenSource {
            out,
            from_state: Some(state),
            ..
        }) => {
            use bal_replay_state::{RocksOptions, RocksStore};
            let store = RocksStore::open(&state, &RocksOptions::default())
                .wrap_err_with(|| format!("opening state {}", state.display()))?;
            let contents = store.dump_all()?;
            drop(store);
            let db = bal_replay_migrate::write_source_from_flat(&out, &contents)
                .wrap_err_with(|| format!("writing {}", out.display()))?;
            println!(
                "wrote {}: {} accounts, {} slots, {} codes, {} block hashes at height {:?}",
                db.display(),
                contents.accounts.len(),
                contents.storage.len(),
                contents.codes.len(),
                contents.block_hashes.len(),
                contents.applied_block
            );
            Ok(())
        }
        Some(Command::GenSource {
            out,
            entries,
            layout,
            height,
            from_state: None,
        }) => {
            let layout = match layout.as_str() {
                "v1" => Layout::V1,
                "v2" => Layout::V2,
                other => bail!("--layout must be v1 or v2, not {other}"),
            };
            let started = Instant::now();
            let s = generate_source(
                &out,
                &GenerateOptions {
                    layout,
                    entries,
                    height,
                },
            )
            .wrap_err_with(|| format!("generating {}", out.display()))?;
            println!(
                "generated {} ({}): {} accounts, {} slots, {} codes in {:.1} s",
                s.db.display(),
                layout.name(),
                s.accounts,
                s.slots,
                s.codes,
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Some(Command::ChurnSource {
            src,
            rounds,
            pause_ms,
        }) => {
            let height = churn_source(&src, rounds, Duration::from_millis(pause_ms), &|| false)
                .wrap_err_with(|| format!("writing to {}", src.display()))?;
            println!("wrote {} up to block {height}", src.display());
            Ok(())
        }
        None => run_migrate(cli.migrate),
    }
}

fn run_migrate(args: MigrateArgs) -> eyre::Result<()> {
    let (Some(src), Some(dst)) = (args.src, args.dst) else {
        bail!("--src and --dst are required (or a subcommand; see --help)");
    };
    if !(args.sample > 0.0 && args.sample <= 1.0) {
        bail!("--sample must be in (0, 1], not {}", args.sample);
    }
    let opts = MigrateOptions {
        threads: args.threads,
        resume: args.resume,
        checkpoint_entries: args.checkpoint_entries.max(1),
        // Verified within the migration's own snapshot: a source being written would otherwise
        // show its new writes as mismatches.
        verify: args.verify.then_some(args.sample),
        ..MigrateOptions::default()
    };
    if let Some(addr) = args.metrics {
        bal_replay_metrics::install_exporter(addr)?;
    }
    let bars = Bars {
        multi: MultiProgress::new(),
        bars: Mutex::new(Vec::new()),
    };
    let summary = migrate(&src, &dst, &opts, &bars)
        .wrap_err_with(|| format!("migrating {} into {}", src.display(), dst.display()))?;
    if summary.already_complete {
        println!(
            "{} is already a complete migration (block {}, source snapshot {})",
            dst.display(),
            summary.height,
            summary.snapshot_id
        );
    } else {
        let secs = summary.elapsed.as_secs_f64().max(1e-9);
        println!(
            "migrated {} entries ({:.1} MiB) from a {} source at block {} (MDBX snapshot {}) in \
             {:.2} s: {:.0} entries/s",
            summary.entries(),
            summary.bytes() as f64 / (1 << 20) as f64,
            summary.layout.name(),
            summary.height,
            summary.snapshot_id,
            secs,
            summary.entries() as f64 / secs
        );
    }
    if let Some(report) = &summary.verify {
        for c in &report.counts {
            println!(
                "{:>9}: source {} destination {}",
                c.table.name(),
                c.source,
                c.destination
            );
        }
        for m in &report.mismatches {
            println!("mismatch: {m}");
        }
        if let Some((found, expected)) = report.height_mismatch {
            println!("mismatch: applied block {found:?}, source height {expected}");
        }
        println!(
            "verified {} entries ({} sampled) at block {}: {} mismatches; content digest {}",
            report.counts.iter().map(|c| c.source).sum::<u64>(),
            report.compared,
            summary.height,
            report.mismatch_count,
            report.digest
        );
        if !report.is_ok() {
            bail!("verification found {} mismatches", report.mismatch_count);
        }
    }
    if args.metrics.is_some() && args.metrics_linger > 0 {
        std::thread::sleep(Duration::from_secs(args.metrics_linger));
    }
    Ok(())
}
