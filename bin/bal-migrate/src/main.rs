//! `bal-migrate`: copies a reth v2.5.1 node's state (MDBX, v1 or v2 layout) into the RocksDB flat
//! state that `bal-replay` replays over. Everything but argument parsing and progress display lives
//! in `bal-replay-migrate` (the migration) and `bal-replay-reth-db` (reth's database; `gen-source`
//! writes test data with it, into a new directory only).

use std::{path::PathBuf, sync::Mutex, time::Duration};

use bal_replay_migrate::{CopyArgs, MigrateOptions, Progress, migrate};
use bal_replay_results::paths::{Input, Output, check_apart};
use bal_replay_reth_db::{GenerateOptions, TableKind, generate_source, write_source_from_store};
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
    #[command(flatten)]
    copy: CopyArgs,
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
        #[command(flatten)]
        generate: GenerateOptions,
        /// Instead of random entries, write this RocksDB flat state's contents (all of them, its
        /// key scheme choosing the layout and its height the checkpoint), e.g. a synthetic chain's
        /// genesis, to replay it over reth's layout with `bal-replay run --state mdbx:<out>`.
        #[arg(long, conflicts_with_all = ["entries", "layout", "height"])]
        from_state: Option<PathBuf>,
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
            check_apart(
                &[Output::dir("--out", &out)],
                &[Input::dir("--from-state", &state)],
            )?;
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} writing {human_pos} entries, {per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            let written = write_source_from_store(&out, &state, &mut |done| bar.set_position(done))
                .wrap_err_with(|| format!("writing {} as {}", state.display(), out.display()))?;
            bar.finish_and_clear();
            println!("{written}");
            Ok(())
        }
        Some(Command::GenSource {
            out,
            generate,
            from_state: None,
        }) => {
            let summary = generate_source(&out, &generate)
                .wrap_err_with(|| format!("generating {}", out.display()))?;
            println!("{summary}");
            Ok(())
        }
        None => run_migrate(cli.migrate),
    }
}

fn run_migrate(args: MigrateArgs) -> eyre::Result<()> {
    let (Some(src), Some(dst)) = (args.src, args.dst) else {
        bail!("--src and --dst are required (or a subcommand; see --help)");
    };
    check_apart(&[Output::dir("--dst", &dst)], &[Input::dir("--src", &src)])?;
    let opts = MigrateOptions::from(&args.copy);
    if let Some(addr) = args.metrics {
        bal_replay_metrics::install_exporter(addr)?;
    }
    let bars = Bars {
        multi: MultiProgress::new(),
        bars: Mutex::new(Vec::new()),
    };
    let summary = migrate(&src, &dst, &opts, &bars)
        .wrap_err_with(|| format!("migrating {} into {}", src.display(), dst.display()))?;
    println!("{}", summary.describe(&dst));
    if let Some(report) = summary.verify.as_ref().filter(|r| !r.is_ok()) {
        bail!("verification found {} mismatches", report.mismatch_count);
    }
    if args.metrics.is_some() && args.metrics_linger > 0 {
        std::thread::sleep(Duration::from_secs(args.metrics_linger));
    }
    Ok(())
}
