//! `bal-dump`: import mainnet fixtures into dumps, verify them, and inspect dumps.

use alloy_primitives::B256;
use bal_replay_dump::{DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_engine::{BalSizes, check_record, warm_up_kzg};
use bal_replay_exec::ChainConfig;
use bal_replay_fixtures::{Fixture, fixture_dirs};
use bal_replay_import::{import_fixture, seed_rocks_state, verify_fixture};
use bal_replay_state::RocksOptions;
use bal_replay_synth::{GeneratorConfig, Profile};
use clap::{Parser, Subcommand};
use eyre::{WrapErr, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::{io::Write, path::PathBuf};

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
    /// Print the RLP-encoded BAL size of every block in each design (full, batched, parallel), with
    /// mean and total.
    Size {
        /// Dump directory.
        dump: PathBuf,
        /// Only the summary, not one line per block.
        #[arg(long)]
        summary: bool,
    },
    /// Generate a synthetic chain: a chained dump and a RocksDB state seeded with its genesis.
    Generate {
        /// Dump directory to create.
        #[arg(long)]
        out: PathBuf,
        /// RocksDB state directory to create.
        #[arg(long)]
        state: PathBuf,
        /// mainnet-like or worst-case-io.
        #[arg(long, default_value = "mainnet-like")]
        profile: String,
        /// Blocks.
        #[arg(long, default_value_t = 50)]
        blocks: u64,
        /// Externally owned accounts in the genesis state.
        #[arg(long)]
        accounts: Option<usize>,
        /// ERC-20 contracts.
        #[arg(long)]
        tokens: Option<usize>,
        /// AMM pools.
        #[arg(long)]
        pools: Option<usize>,
        /// Storage slots (token holders) seeded per token.
        #[arg(long)]
        holders_per_token: Option<usize>,
        /// Target gas per block.
        #[arg(long)]
        gas_per_block: Option<u64>,
        /// Seed (the chain is a pure function of the parameters).
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Print signed transactions for a dev node (reth-bal's end-to-end check), one EIP-2718 hex
    /// string per line, ready for `eth_sendRawTransaction`: a counter contract deployment, then
    /// counter calls (storage reads and writes) and transfers, in turn.
    DevTxs {
        /// Chain id of the node (reth `--dev`: 1337).
        #[arg(long, default_value_t = 1337)]
        chain_id: u64,
        /// Private key (hex) of a funded account; default: the dev genesis's first test key.
        #[arg(long)]
        key: Option<alloy_primitives::B256>,
        /// Nonce of the first transaction (the account's current nonce).
        #[arg(long, default_value_t = 0)]
        nonce: u64,
        /// Number of transactions.
        #[arg(long, default_value_t = 12)]
        count: usize,
        /// Max fee per gas, in wei.
        #[arg(long, default_value_t = 20_000_000_000)]
        max_fee: u128,
    },
    /// Create a RocksDB state holding the state before a chained dump's first block, rebuilt from
    /// the records' pre-values (e.g. to replay a reth-bal dump without the node's database).
    SeedState {
        /// Dump directory.
        dump: PathBuf,
        /// RocksDB state directory to create.
        #[arg(long)]
        state: PathBuf,
    },
    /// Print a dump's manifest and a summary line per block.
    Inspect {
        /// Dump directory.
        dump: PathBuf,
    },
    /// Check every block of a dump on its own, with no state: frames and checksums, parent hashes
    /// in a chained dump, and each block executed over its record's pre-block values alone, with
    /// gas used, receipts root and logs bloom against the header and the built BAL against the
    /// record's. Prints each invalid block and exits non-zero if there is one.
    Validate {
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
    let result = match Cli::parse().command {
        Command::ImportFixture { dirs, out, state } => import(dirs, out, state),
        Command::VerifyFixtures { dir } => verify(dir),
        Command::Inspect { dump } => inspect(dump),
        Command::Validate { dump } => validate(dump),
        Command::SeedState { dump, state } => seed_state(dump, state),
        Command::DevTxs {
            chain_id,
            key,
            nonce,
            count,
            max_fee,
        } => {
            let key = key.unwrap_or(bal_replay_synth::node::DEV_KEY);
            let (txs, counter) =
                bal_replay_synth::node::dev_transactions(chain_id, key, nonce, count, max_fee)
                    .wrap_err("signing the dev transactions")?;
            eprintln!("counter contract: {counter}");
            let mut out = std::io::stdout().lock();
            for tx in txs {
                writeln!(out, "{tx}")?;
            }
            Ok(())
        }
        Command::Size { dump, summary } => size(dump, summary),
        Command::Generate {
            out,
            state,
            profile,
            blocks,
            accounts,
            tokens,
            pools,
            holders_per_token,
            gas_per_block,
            seed,
        } => {
            let mut config = GeneratorConfig {
                blocks,
                seed,
                ..GeneratorConfig::default()
            };
            config.profile = match profile.as_str() {
                "mainnet-like" => Profile::MainnetLike,
                "worst-case-io" => Profile::WorstCaseIo,
                other => {
                    bail!("unknown profile {other:?} (expected mainnet-like or worst-case-io)")
                }
            };
            if let Some(v) = accounts {
                config.accounts = v;
            }
            if let Some(v) = tokens {
                config.tokens = v;
            }
            if let Some(v) = pools {
                config.pools = v;
            }
            if let Some(v) = holders_per_token {
                config.holders_per_token = v;
            }
            if let Some(v) = gas_per_block {
                config.gas_per_block = v;
            }
            let bar = progress(blocks, "generating");
            let chain = bal_replay_synth::generate(&config, &out, &state, Some(&bar))?;
            bar.finish_and_clear();
            println!(
                "generated blocks {}..={}: {} txs, {} gas; genesis {} accounts, {} slots; dump {}, state {}",
                chain.first_block,
                chain.first_block + chain.blocks.saturating_sub(1),
                chain.txs,
                chain.gas_used,
                chain.genesis_accounts,
                chain.genesis_slots,
                out.display(),
                state.display()
            );
            println!(
                "{}",
                chain
                    .stats
                    .comparison_table(&bal_replay_synth::ProfileStats::RECENT_MAINNET)
            );
            Ok(())
        }
    };
    match result {
        // A reader that stops early (`| head`) is not a failure of ours.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            Ok(())
        }
        other => other,
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
    let mut out = std::io::stdout().lock();
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
                writeln!(
                    out,
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
                )?;
            }
            Err(e) => {
                failed += 1;
                writeln!(out, "block {name:>9}  FAILED: {e:#}")?;
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}

fn validate(dump: PathBuf) -> eyre::Result<()> {
    let reader = DumpReader::open(&dump)?;
    let config = ChainConfig::for_dump(&reader)?;
    warm_up_kzg();
    let chained = reader.manifest().chained;
    let bar = progress(reader.manifest().record_count, "validating");
    let (mut valid, mut invalid) = (0u64, 0u64);
    let mut parent: Option<(u64, B256)> = None;
    // A frame that does not decode ends the walk: the reader has already named the file and
    // offset, and nothing after it can be located reliably.
    for record in reader.records() {
        let record = record?;
        let number = record.number();
        let mut problems = Vec::new();
        if let Some((parent_number, parent_hash)) = parent
            && chained
            && record.block.header.parent_hash != parent_hash
        {
            problems.push(format!(
                "parent hash {} is not the hash of block {parent_number}, {parent_hash}",
                record.block.header.parent_hash
            ));
        }
        parent = Some((number, record.block.header.hash_slow()));
        if let Err(e) = check_record(&config, &record) {
            problems.push(format!("{e:#}"));
        }
        if problems.is_empty() {
            valid += 1;
        } else {
            invalid += 1;
            // Through `suspend`, not `bar.println`: a hidden bar (output not a terminal) drops
            // what it is asked to print.
            bar.suspend(|| {
                for problem in problems {
                    println!("block {number}: INVALID: {problem}");
                }
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{}: {valid} blocks valid, {invalid} invalid",
        dump.display()
    );
    if invalid > 0 {
        bail!(
            "{invalid} of {} blocks of {} are invalid",
            valid + invalid,
            dump.display()
        );
    }
    Ok(())
}

fn inspect(dump: PathBuf) -> eyre::Result<()> {
    let mut out = std::io::stdout().lock();
    let reader = DumpReader::open(&dump)?;
    let m = reader.manifest();
    writeln!(out, "dump {}", dump.display())?;
    writeln!(
        out,
        "  format version {}, chain id {}, {}, source {:?}",
        m.format_version,
        m.chain_id,
        if m.chained {
            "chained"
        } else {
            "independent blocks"
        },
        m.source
    )?;
    writeln!(
        out,
        "  {} records, blocks {}..={}, {} segment(s)",
        m.record_count,
        m.first_block.map(|b| b.to_string()).unwrap_or("-".into()),
        m.last_block.map(|b| b.to_string()).unwrap_or("-".into()),
        m.segments.len()
    )?;
    for s in &m.segments {
        writeln!(
            out,
            "    {}: blocks {}..={}, {} records, {} bytes, crc32 {:#010x}",
            s.file, s.first_block, s.last_block, s.records, s.bytes, s.crc32
        )?;
    }
    writeln!(
        out,
        "{:>10} {:>6} {:>11} {:>9} {:>10} {:>9}",
        "block", "txs", "gas", "bal accts", "bal bytes", "pre keys"
    )?;
    for record in reader.records() {
        let r = record?;
        writeln!(
            out,
            "{:>10} {:>6} {:>11} {:>9} {:>10} {:>9}",
            r.number(),
            r.tx_count(),
            r.gas_used(),
            r.bal.len(),
            r.bal_rlp_len(),
            r.pre_state.key_count()
        )?;
    }
    Ok(())
}

fn size(dump: PathBuf, summary: bool) -> eyre::Result<()> {
    let mut out = std::io::stdout().lock();
    let reader = DumpReader::open(&dump)?;
    if !summary {
        writeln!(
            out,
            "{:>10} {:>12} {:>12} {:>12}",
            "block", "full B", "batched B", "parallel B"
        )?;
    }
    let (mut n, mut total) = (0u64, BalSizes::default());
    for record in reader.records() {
        let record = record?;
        let s = BalSizes::of(&record);
        if !summary {
            writeln!(
                out,
                "{:>10} {:>12} {:>12} {:>12}",
                record.number(),
                s.full,
                s.batched,
                s.parallel
            )?;
        }
        n += 1;
        total.full += s.full;
        total.batched += s.batched;
        total.parallel += s.parallel;
    }
    if n == 0 {
        bail!("dump {} holds no records", dump.display());
    }
    let mean = |v: usize| v as f64 / n as f64 / 1000.0;
    writeln!(
        out,
        "{n} blocks; RLP-encoded BAL size per design (KB = 1000 bytes):"
    )?;
    writeln!(
        out,
        "  full BAL     (diffs + read keys + read values): mean {:>9.1} KB, total {:>12} B, 100%",
        mean(total.full),
        total.full
    )?;
    writeln!(
        out,
        "  batched I/O  (diffs + read keys):               mean {:>9.1} KB, total {:>12} B, {:.0}% of full",
        mean(total.batched),
        total.batched,
        100.0 * total.batched as f64 / total.full.max(1) as f64
    )?;
    writeln!(
        out,
        "  parallel I/O (diffs only):                      mean {:>9.1} KB, total {:>12} B, {:.0}% of full, {:.0}% of batched",
        mean(total.parallel),
        total.parallel,
        100.0 * total.parallel as f64 / total.full.max(1) as f64,
        100.0 * total.parallel as f64 / total.batched.max(1) as f64
    )?;
    Ok(())
}

fn seed_state(dump: PathBuf, state: PathBuf) -> eyre::Result<()> {
    use bal_replay_state::{RocksOptions, RocksStore, StateWriter};
    let reader = bal_replay_dump::DumpReader::open(&dump)
        .wrap_err_with(|| format!("opening dump {}", dump.display()))?;
    if !reader.manifest().chained {
        bail!(
            "dump {} is not chained: its blocks are independent, each with its own pre-state \
             (seed one state per block with import-fixture instead)",
            dump.display()
        );
    }
    let (changes, first) = bal_replay_import::pre_chain_state(reader.records())
        .wrap_err_with(|| format!("reading dump {}", dump.display()))?;
    let Some(first) = first else {
        bail!("dump {} is empty", dump.display());
    };
    let store = RocksStore::create(&state, Default::default(), &RocksOptions::default())
        .wrap_err_with(|| format!("creating state {}", state.display()))?;
    store.commit(&changes, first.saturating_sub(1))?;
    println!(
        "seeded {}: {} accounts, {} slots, {} codes, {} block hashes at height {}",
        state.display(),
        changes.accounts.len(),
        changes.storage.len(),
        changes.codes.len(),
        changes.block_hashes.len(),
        first.saturating_sub(1)
    );
    Ok(())
}
