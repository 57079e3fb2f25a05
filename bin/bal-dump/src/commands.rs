//! The commands of `bal-dump`: each a few calls into the libraries, and what it prints.

use crate::cli::Command;
use bal_replay_dump::{ChainLinks, DumpReader, RecordSummary};
use bal_replay_engine::{BalSizeTotals, BalSizes, check_record, warm_up_kzg};
use bal_replay_executor::ChainConfig;
use bal_replay_import::{
    ChainFixture, FixtureChecks, import_chain as import_chain_fixture, import_fixtures,
    read_fixtures, write_fixture_dump,
};
use eyre::{WrapErr, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::{
    io::Write,
    path::{Path, PathBuf},
};

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Nothing it checked failed.
    Passed,
    /// It printed blocks that failed: the process exits 1.
    Failed,
}

/// Runs `command`, writing its report to `out`. `Ok(Outcome::Failed)`: it ran to its end and
/// printed which blocks failed (`import-chain`, `verify-fixtures`); main exits 1 for it.
pub(crate) fn run(command: Command, out: &mut impl Write) -> eyre::Result<Outcome> {
    check_paths(&command)?;
    match command {
        Command::ImportFixture {
            dirs,
            out: dump,
            state,
        } => import(out, &dirs, &dump, &state).map(|()| Outcome::Passed),
        Command::ImportChain {
            dir,
            out: dump,
            state,
        } => import_chain(out, &dir, &dump, &state),
        Command::VerifyFixtures { dir } => verify(out, &dir),
        Command::Inspect { dump } => {
            let reader = DumpReader::open(&dump)?;
            writeln!(out, "dump {}\n{}", dump.display(), reader.manifest())?;
            writeln!(out, "{}", RecordSummary::HEADER)?;
            for record in reader.records() {
                writeln!(out, "{}", RecordSummary(&record?))?;
            }
            Ok(Outcome::Passed)
        }
        Command::Validate { dump } => validate(&dump).map(|()| Outcome::Passed),
        Command::SeedState { dump, state } => {
            let reader = DumpReader::open(&dump)
                .wrap_err_with(|| format!("opening dump {}", dump.display()))?;
            let seeded = bal_replay_import::seed_chain_state(&reader, &state)?;
            let c = &seeded.changes;
            writeln!(
                out,
                "seeded {}: {} accounts, {} slots, {} codes, {} block hashes at height {}",
                state.display(),
                c.accounts.len(),
                c.storage.len(),
                c.codes.len(),
                c.block_hashes.len(),
                seeded.height
            )?;
            Ok(Outcome::Passed)
        }
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
            for tx in txs {
                writeln!(out, "{tx}")?;
            }
            Ok(Outcome::Passed)
        }
        Command::Size { dump, summary } => size(out, &dump, summary).map(|()| Outcome::Passed),
        Command::Generate(args) => {
            let bar = progress(args.blocks, "generating");
            let chain =
                bal_replay_synth::generate(&args.config(), &args.out, &args.state, Some(&bar))?;
            bar.finish_and_clear();
            writeln!(out, "{chain}")?;
            Ok(Outcome::Passed)
        }
    }
}

/// Refuses a dump or state to create inside a directory the command reads, or around one, before
/// any work ([`check_apart`](bal_replay_results::paths::check_apart)).
fn check_paths(command: &Command) -> eyre::Result<()> {
    use bal_replay_results::paths::{Input, Output, check_apart};
    let (outputs, inputs) = match command {
        Command::ImportFixture { dirs, out, state } => (
            vec![Output::dir("--out", out), Output::dir("--state", state)],
            dirs.iter().map(|dir| Input::dir("input", dir)).collect(),
        ),
        Command::ImportChain { dir, out, state } => (
            vec![Output::dir("--out", out), Output::dir("--state", state)],
            vec![Input::dir("input", dir)],
        ),
        Command::SeedState { dump, state } => (
            vec![Output::dir("--state", state)],
            vec![Input::dir("input", dump)],
        ),
        _ => return Ok(()),
    };
    Ok(check_apart(&outputs, &inputs)?)
}

/// `import-fixture`: every fixture executed before anything is written.
fn import(out: &mut impl Write, dirs: &[PathBuf], dump: &Path, state: &Path) -> eyre::Result<()> {
    let config = ChainConfig::mainnet();
    let fixtures = read_fixtures(dirs)?;
    let bar = progress(fixtures.len() as u64, "executing");
    let mut wiping = Vec::new();
    let records = import_fixtures(&config, &fixtures, |record, wipes| {
        if wipes {
            wiping.push(record.number());
        }
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    if !wiping.is_empty() {
        // Imported all the same: sequential replays and `validate` are exact on them.
        tracing::warn!(
            blocks = ?wiping,
            "these blocks wipe an existing contract's storage (SELFDESTRUCT before Cancun), which a \
             BAL cannot express: replay them only sequentially, and leave them out of parallel \
             benches"
        );
    }
    let bar = progress(records.len() as u64, "writing");
    let m = write_fixture_dump(&config, &records, dump, state, || bar.inc(1))
        .wrap_err_with(|| format!("writing dump {}", dump.display()))?;
    bar.finish_and_clear();
    writeln!(
        out,
        "{}; states under {}",
        records_written(&m, dump),
        state.display()
    )?;
    Ok(())
}

/// "wrote N records (blocks A..=B) to DUMP": what an import wrote.
fn records_written(m: &bal_replay_dump::Manifest, dump: &Path) -> String {
    format!(
        "wrote {} records (blocks {}..={}) to {}",
        m.record_count,
        m.first_block.unwrap_or_default(),
        m.last_block.unwrap_or_default(),
        dump.display()
    )
}

/// `import-chain`: one line per block, then the counts; [`Outcome::Failed`] if a block failed.
fn import_chain(
    out: &mut impl Write,
    dir: &Path,
    dump: &Path,
    state: &Path,
) -> eyre::Result<Outcome> {
    let fixture = ChainFixture::read(dir)
        .wrap_err_with(|| format!("reading chain fixture {}", dir.display()))?;
    for path in [dump, state] {
        if path.exists() {
            bail!(
                "{} already exists; import-chain writes a new one",
                path.display()
            );
        }
    }
    warm_up_kzg();
    let mut lines = Vec::new();
    let imported = import_chain_fixture(&fixture, dump, state, |number, outcome| {
        lines.push(match outcome {
            Ok(check) => format!("{check}  ok"),
            Err(e) => format!("block {number:>9}  FAILED: {e}"),
        });
    })
    .wrap_err_with(|| format!("importing {} into {}", dir.display(), dump.display()))?;
    for line in lines {
        writeln!(out, "{line}")?;
    }
    let m = &imported.manifest;
    writeln!(
        out,
        "{}; genesis state at {}",
        records_written(m, dump),
        state.display()
    )?;
    let (passed, failed) = (imported.passed(), imported.failed());
    // Blocks never reached (after one that did not execute) count as failed.
    let failed = failed + fixture.blocks.len() - imported.blocks.len();
    writeln!(out, "{passed} passed, {failed} failed")?;
    if failed > 0 {
        out.flush()?;
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Passed)
}

/// `size`: per block (unless `summary`), then the totals.
fn size(out: &mut impl Write, dump: &Path, summary: bool) -> eyre::Result<()> {
    let reader = DumpReader::open(dump)?;
    if !summary {
        writeln!(
            out,
            "     block       full B    batched B   parallel B    network B"
        )?;
    }
    let mut totals = BalSizeTotals::default();
    for record in reader.records() {
        let record = record?;
        let s = BalSizes::of(&record);
        if !summary {
            let (n, full, batched, parallel) = (record.number(), s.full, s.batched, s.parallel);
            // `-`: the header commits to no BAL (before Amsterdam), or not to this record's.
            let network = s.network.map_or("-".into(), |b| b.to_string());
            writeln!(
                out,
                "{n:>10} {full:>12} {batched:>12} {parallel:>12} {network:>12}"
            )?;
        }
        totals.add(s);
    }
    if totals.blocks == 0 {
        bail!("dump {} holds no records", dump.display());
    }
    writeln!(out, "{totals}")?;
    Ok(())
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

/// `verify-fixtures`: one line per fixture, then the counts; [`Outcome::Failed`] if one failed.
fn verify(out: &mut impl Write, dir: &Path) -> eyre::Result<Outcome> {
    let (mut passed, mut failed) = (0usize, 0usize);
    for (name, outcome) in FixtureChecks::new(ChainConfig::mainnet(), dir)? {
        match outcome {
            Ok(check) => {
                passed += 1;
                writeln!(out, "{check}  ok")?;
            }
            Err(e) => {
                failed += 1;
                writeln!(out, "block {name:>9}  FAILED: {:#}", eyre::Report::from(e))?;
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    if failed > 0 {
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Passed)
}

/// `validate`: every record checked alone ([`check_record`]) and, in a chained dump, against the
/// one before ([`ChainLinks`]); each invalid block printed, an error if there is one.
fn validate(dump: &Path) -> eyre::Result<()> {
    let reader = DumpReader::open(dump)?;
    let config = ChainConfig::for_dump(&reader)?;
    warm_up_kzg();
    let mut links = ChainLinks::new(reader.manifest().chained);
    let bar = progress(reader.manifest().record_count, "validating");
    let (mut valid, mut invalid) = (0u64, 0u64);
    // A frame that does not decode ends the walk: the reader has already named the file and
    // offset, and nothing after it can be located reliably.
    // Links are checked here, block by block, so a break is reported and the walk goes on.
    for record in reader.records_unlinked() {
        let record = record?;
        let link = links.check(&record).err().map(|e| e.to_string());
        let check = check_record(&config, &record)
            .err()
            .map(|e| format!("{e:#}"));
        let problems: Vec<String> = link.into_iter().chain(check).collect();
        if problems.is_empty() {
            valid += 1;
        } else {
            invalid += 1;
            // Through `suspend`, not `bar.println`: a hidden bar (output not a terminal) drops
            // what it is asked to print.
            bar.suspend(|| {
                for problem in problems {
                    println!("block {}: INVALID: {problem}", record.number());
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
