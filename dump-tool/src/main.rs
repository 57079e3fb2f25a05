//! `bal-dump`: import mainnet fixtures into dumps, verify them, and inspect dumps.

use bal_replay_dump::{DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_exec::ChainConfig;
use bal_replay_fixtures::{Fixture, fixture_dirs};
use bal_replay_import::{import_fixture, seed_rocks_state, verify_fixture};
use bal_replay_state::RocksOptions;
use clap::{Parser, Subcommand};
use eyre::{WrapErr, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "bal-dump",
    version,
    about = "Import, verify and inspect BAL dumps"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Turn fixture directories into a dump plus, per block, a RocksDB state seeded with its pre-state
    /// (`<state>/<number>`: fixture blocks are independent, not a chain).
    ImportFixture {
        /// Fixture directories (`<number>/` with block.json and pre_state.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Dump directory to create.
        #[arg(long)]
        out: PathBuf,
        /// Directory for the seeded RocksDB states (one per block).
        #[arg(long)]
        state: PathBuf,
    },
    /// Import and check every fixture under a directory: header gas/bloom/receipts root, RocksDB vs
    /// in-memory, per-transaction BAL replay. Prints one line per block and `N passed, M failed`.
    VerifyFixtures {
        /// Directory of fixture directories.
        dir: PathBuf,
    },
    /// Print a dump's manifest and a summary line per block.
    Inspect {
        /// Dump directory.
        dump: PathBuf,
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
        Command::ImportFixture { dirs, out, state } => import(dirs, out, state),
        Command::VerifyFixtures { dir } => verify(dir),
        Command::Inspect { dump } => inspect(dump),
    }
}

fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}} blocks, {{per_sec}}, eta {{eta}} {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn import(dirs: Vec<PathBuf>, out: PathBuf, state: PathBuf) -> eyre::Result<()> {
    let config = ChainConfig::mainnet();
    let mut fixtures = dirs
        .iter()
        .map(|d| Fixture::read(d).wrap_err_with(|| format!("reading fixture {}", d.display())))
        .collect::<eyre::Result<Vec<_>>>()?;
    fixtures.sort_by_key(|f| f.number());
    if let Some(pair) = fixtures.windows(2).find(|w| w[0].number() == w[1].number()) {
        bail!(
            "block {} given twice ({} and {})",
            pair[0].number(),
            pair[0].dir.display(),
            pair[1].dir.display()
        );
    }
    // Execute everything before writing anything, so a bad fixture leaves no half-written dump.
    let bar = progress(fixtures.len() as u64, "executing");
    let mut records = Vec::with_capacity(fixtures.len());
    for fixture in &fixtures {
        let (record, _) = import_fixture(&config, fixture)
            .wrap_err_with(|| format!("importing {}", fixture.dir.display()))?;
        records.push(record);
        bar.inc(1);
    }
    bar.finish_and_clear();

    let meta = DumpMeta {
        chain_id: config.chain_id,
        chained: false,
        source: "fixture".into(),
    };
    let mut writer = DumpWriter::create(&out, meta, WriterOptions::default())
        .wrap_err_with(|| format!("creating dump {}", out.display()))?;
    let bar = progress(records.len() as u64, "writing");
    for record in &records {
        writer.append(record)?;
        let db = state.join(record.number().to_string());
        seed_rocks_state(&db, record, &RocksOptions::default())
            .wrap_err_with(|| format!("seeding state {}", db.display()))?;
        bar.inc(1);
    }
    let manifest = writer.finish()?;
    bar.finish_and_clear();
    println!(
        "wrote {} records (blocks {}..={}) to {}; states under {}",
        manifest.record_count,
        manifest.first_block.unwrap_or_default(),
        manifest.last_block.unwrap_or_default(),
        out.display(),
        state.display()
    );
    Ok(())
}

fn verify(dir: PathBuf) -> eyre::Result<()> {
    let config = ChainConfig::mainnet();
    let dirs = fixture_dirs(&dir)?;
    if dirs.is_empty() {
        bail!(
            "no fixture directories (named by block number, with block.json) under {}",
            dir.display()
        );
    }
    let scratch = tempfile::tempdir()?;
    let (mut passed, mut failed) = (0usize, 0usize);
    for fixture_dir in &dirs {
        let outcome = Fixture::read(fixture_dir)
            .map_err(eyre::Report::from)
            .and_then(|fixture| {
                let db = scratch.path().join(fixture.number().to_string());
                verify_fixture(&config, &fixture, &db).map_err(eyre::Report::from)
            });
        let name = fixture_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match outcome {
            Ok((_, r)) => {
                passed += 1;
                println!(
                    "block {:>9}  txs {:>5}  gas {:>10}  bal accounts {:>5}  bal {:>7} B  receipts root {}  ok",
                    r.number,
                    r.txs,
                    r.gas_used,
                    r.bal_accounts,
                    r.bal_rlp_bytes,
                    if r.receipts_root_checked {
                        "checked"
                    } else {
                        "n/a (pre-Byzantium)"
                    },
                );
            }
            Err(e) => {
                failed += 1;
                println!("block {name:>9}  FAILED: {e:#}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}

fn inspect(dump: PathBuf) -> eyre::Result<()> {
    let reader = DumpReader::open(&dump)?;
    let m = reader.manifest();
    println!("dump {}", dump.display());
    println!(
        "  format version {}, chain id {}, {}, source {:?}",
        m.format_version,
        m.chain_id,
        if m.chained {
            "chained"
        } else {
            "independent blocks"
        },
        m.source
    );
    println!(
        "  {} records, blocks {}..={}, {} segment(s)",
        m.record_count,
        m.first_block.map(|b| b.to_string()).unwrap_or("-".into()),
        m.last_block.map(|b| b.to_string()).unwrap_or("-".into()),
        m.segments.len()
    );
    for s in &m.segments {
        println!(
            "    {}: blocks {}..={}, {} records, {} bytes, crc32 {:#010x}",
            s.file, s.first_block, s.last_block, s.records, s.bytes, s.crc32
        );
    }
    println!(
        "{:>10} {:>6} {:>11} {:>9} {:>10} {:>9}",
        "block", "txs", "gas", "bal accts", "bal bytes", "pre keys"
    );
    for record in reader.records() {
        let r = record?;
        println!(
            "{:>10} {:>6} {:>11} {:>9} {:>10} {:>9}",
            r.number(),
            r.tx_count(),
            r.gas_used(),
            r.bal.len(),
            r.bal_rlp_len(),
            r.pre_state.key_count()
        );
    }
    Ok(())
}
