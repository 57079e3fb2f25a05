//! The `bal-replay` command line: each command's options as clap types, and what each command runs.
//!
//! The binary is `Cli::parse().run()`. A command's options fill the libraries' own option types
//! ([`ReplayOptions`](bal_replay_engine::ReplayOptions) from [`run::RunCommand::replay_options`],
//! [`BenchMatrix`](bal_replay_bench::BenchMatrix) from [`bench::BenchCommand::matrix`]); its `run`
//! calls the libraries and prints what they report. Counts that must be at least 1 are parsed as
//! `NonZeroUsize`, so a zero is refused, naming the option, before anything runs.
//!
//! This is the edge of the workspace: errors are `eyre` reports, progress bars go to stderr
//! (hidden when it is not a terminal), and the replay's reports are recorded as metrics here
//! ([`record`]), so neither the engine nor the metrics crate knows the other.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod bench;
pub mod disk;
pub use bal_replay_results::paths;
pub mod project;
pub mod record;
pub mod run;
pub mod study;

use bal_replay_cache::CacheCapacity;
use bal_replay_mdbx_state::StateSpec;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::{num::NonZeroUsize, path::PathBuf};

pub use disk::{DiskArgs, DiskMode};

/// `bal-replay`'s command line.
#[derive(Debug, Parser)]
#[command(
    name = "bal-replay",
    version,
    about = "Replay BAL dumps and benchmark the BAL I/O designs"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `bal-replay`'s commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate a small mainnet-like chain and study it: the answer for it, and where its findings
    /// page is (the README's first command).
    Demo(bench::DemoCommand),
    /// Replay a dump once over a state, modified in place unless --rewind (a stopped run resumes).
    Run(run::RunCommand),
    /// Random point reads of existing keys per reader-thread count, MDBX vs RocksDB (the research's
    /// random-read table): keys are sampled from each store first, then every run reads among them.
    BenchDb(bench::BenchDbCommand),
    /// Time the reference executor, single-threaded, on a dump of independent blocks (e.g. imported
    /// mainnet fixtures): in memory and over RocksDB.
    BenchReference(bench::BenchReferenceCommand),
    /// Run the research's matrix from the same pre-state (never written) and print its tables.
    Bench(bench::BenchCommand),
    /// Charts (PNG and SVG) and a Markdown summary next to the research's figures, from
    /// `bench --json` results.
    Report(ReportCommand),
    /// Simulate the engine's schedule from per-task profiles (`bench --task-profile`): checked
    /// against measured runs the calibration did not see, and projected onto another machine.
    Project(project::ProjectCommand),
    /// The answer for one chain: how much of full BAL's throughput each design keeps on the disk,
    /// and at what BAL size, as a findings page.
    Study(study::StudyCommand),
}

impl Cli {
    /// Runs the command.
    pub fn run(self) -> eyre::Result<()> {
        match self.command {
            Command::Demo(c) => c.run(),
            Command::Run(c) => c.run(),
            Command::BenchDb(c) => c.run(),
            Command::BenchReference(c) => c.run(),
            Command::Bench(c) => c.run(),
            Command::Report(c) => c.run(),
            Command::Project(c) => c.run(),
            Command::Study(c) => c.run().map(|_| ()),
        }
    }
}

/// Charts (PNG and SVG) and a Markdown summary next to the research's figures, from `bench --json`
/// results.
#[derive(Debug, Clone, Args)]
pub struct ReportCommand {
    /// JSON files written by `bal-replay bench --json`, `bal-replay project --json` or
    /// `bal-replay bench-db --json` (the read engines' queue-depth sweep).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The disk's curve, drawn under the `bench-db` sweeps at the same queue depths.
    #[command(flatten)]
    pub disk_table: DiskTableArgs,
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// TrueType font for chart text.
    #[arg(long, default_value = bal_replay_report::DEFAULT_FONT)]
    pub font: PathBuf,
}

impl ReportCommand {
    /// Draws the charts, writes the summary and lists what it wrote and what it could not draw.
    /// `--out` is claimed first, as a study claims its own ([`bal_replay_study::OutDir`]): new,
    /// empty, or holding only an earlier report's files, as its manifest lists them; the files
    /// are drawn into a staging directory there and land together, beside the earlier report's.
    pub fn run(&self) -> eyre::Result<()> {
        let mut inputs: Vec<_> = self
            .inputs
            .iter()
            .map(|path| paths::Input::file("input", path))
            .collect();
        inputs.extend(self.disk_table.inputs());
        inputs.push(paths::Input::file("--font", &self.font));
        paths::check_apart(&[paths::Output::dir("--out", &self.out)], &inputs)?;
        // Before the inputs are read and any chart drawn.
        bal_replay_bench::check_output_dir(&self.out)?;
        let out = bal_replay_study::OutDir::claim_for(&bal_replay_study::REPORT, &self.out)?;
        let reported = self.report_into(&out);
        if reported.is_err() {
            out.release_if_unused();
        }
        reported
    }

    fn report_into(&self, out: &bal_replay_study::OutDir) -> eyre::Result<()> {
        let mut staged = out.stage()?;
        let options = bal_replay_report::ReportOptions {
            font: self.font.clone(),
            ..bal_replay_report::ReportOptions::new(staged.dir())
        };
        let fio = self.disk_table.read()?;
        // `project --json` output is drawn on its own charts, `bench-db --json` sweeps together
        // on theirs; the rest are bench results.
        let mut benches = Vec::new();
        let mut sweeps = Vec::new();
        let mut written = Vec::new();
        for path in &self.inputs {
            if let Some(projection) = read_projection(path)? {
                written.push(bal_replay_report::write_projection_report(
                    &projection,
                    &options,
                )?);
            } else if let Some(reports) = bal_replay_report::load_bench_db(path)? {
                sweeps.extend(reports);
            } else {
                benches.push(path.clone());
            }
        }
        if !sweeps.is_empty() {
            written.push(bal_replay_report::write_read_engines_report(
                &sweeps,
                fio.as_ref(),
                &options,
            )?);
        } else if fio.is_some() {
            eprintln!("note: --disk-table is drawn under bench-db sweeps only; no input is one");
        }
        if !benches.is_empty() {
            let inputs = bal_replay_report::load_inputs(&benches)?;
            written.push(bal_replay_report::write_report(&inputs, &options)?);
        }
        let mut lines = Vec::new();
        for w in &written {
            for file in w.files(&options.out) {
                let name = file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .ok_or_else(|| eyre::eyre!("{}: not a file name", file.display()))?;
                staged.written(name)?;
                lines.push(format!("wrote {}", out.path().join(name).display()));
            }
            for reason in &w.skipped {
                lines.push(format!("not drawn: {reason}"));
            }
        }
        staged.keep_earlier();
        staged.land(None)?;
        for line in lines {
            println!("{line}");
        }
        Ok(())
    }
}

/// `path` read as `bal-replay project --json` output, or `None` when it is not one (an object
/// without `calibrations`: a bench result, read as such later).
fn read_projection(
    path: &std::path::Path,
) -> eyre::Result<Option<bal_replay_model::ProjectionReport>> {
    Ok(bal_replay_projection::read_projection(path)?)
}

/// The shared cache's bounds (entries per table). Resident memory is bounded by these plus
/// RocksDB's block cache and a fixed margin, whatever the replay's length.
#[derive(Debug, Clone, Copy, Args)]
pub struct CacheArgs {
    /// Shared cache: accounts held at most.
    #[arg(long, value_name = "N", default_value_t = CacheCapacity::default().accounts)]
    pub cache_accounts: usize,
    /// Shared cache: storage slots held at most.
    #[arg(long, value_name = "N", default_value_t = CacheCapacity::default().storage)]
    pub cache_slots: usize,
    /// Shared cache: contract codes held at most.
    #[arg(long, value_name = "N", default_value_t = CacheCapacity::default().codes)]
    pub cache_codes: usize,
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

/// Whether a replay (`run`, `bench`) may go over a state that does not say which chain and block
/// it holds ([`ReplayOptions::trust_state`](bal_replay_engine::ReplayOptions::trust_state)).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct TrustArgs {
    /// Replay over a state that records no chain id or block hash, unchecked.
    #[arg(long)]
    pub trust_state: bool,
}

/// The dump a command reads (`run`, `bench`, `bench-reference`, `study`).
#[derive(Debug, Clone, Args)]
pub struct DumpArgs {
    /// Dump directory: a chain, or imported independent blocks (not `run`, not `study`).
    #[arg(long, value_name = "DIR")]
    pub dump: PathBuf,
}

impl std::ops::Deref for DumpArgs {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.dump
    }
}

impl AsRef<std::path::Path> for DumpArgs {
    fn as_ref(&self) -> &std::path::Path {
        &self.dump
    }
}

/// The worker counts a command compares (`bench`, `study`, `demo`); `run` takes one (`--threads N`).
#[derive(Debug, Clone, Default, Args)]
pub struct ThreadsArgs {
    /// Worker counts [default: 1 and the cores; study adds 4x and 16x the cores].
    #[arg(long, value_name = "LIST", value_parser = count, value_delimiter = ',')]
    pub threads: Option<Vec<NonZeroUsize>>,
}

impl ThreadsArgs {
    /// The counts given, else 1 and the machine's cores (one count where they are the same).
    pub fn or_one_and_cores(&self) -> Vec<NonZeroUsize> {
        self.threads.clone().unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
            let mut counts = vec![NonZeroUsize::MIN, cores];
            counts.dedup();
            counts
        })
    }
}

/// The dump a replay (`run`, `bench`) reads and the state it starts from.
#[derive(Debug, Clone, Args)]
pub struct ChainArgs {
    #[command(flatten)]
    pub dump: DumpArgs,
    /// The state before the dump: <dir> or rocksdb:<dir>, or mdbx:<dir> (reth's).
    #[arg(long)]
    pub state: StateSpec,
}

impl ChainArgs {
    /// The dump and the state, as inputs no output may lie inside ([`paths::check_apart`]).
    pub fn inputs(&self) -> [paths::Input<'_>; 2] {
        [
            paths::Input::dir("--dump", &self.dump),
            paths::Input::dir("--state", self.state.path()),
        ]
    }
}

/// How a replay runs, the same in `run` and `bench`: the command line's part of
/// [`ReplayOptions`](bal_replay_engine::ReplayOptions) and
/// [`BenchMatrix`](bal_replay_bench::BenchMatrix) that neither varies. Worker counts, batch sizes
/// and designs are each command's own: one of each in `run`, lists in `bench`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Replay")]
pub struct ReplayArgs {
    /// Prefetch readers.
    #[arg(long, value_name = "N", value_parser = count, default_value = "8")]
    pub io_threads: NonZeroUsize,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Record parallel batches' task profiles in the JSON (for `bal-replay project`).
    #[arg(long)]
    pub task_profile: bool,
    /// Pin worker w of each batch to the (w mod n)-th CPU of this list.
    #[arg(long, value_name = "CPUS", value_delimiter = ',', num_args = 1..)]
    pub pin_workers: Option<Vec<usize>>,
    #[command(flatten)]
    pub trust: TrustArgs,
}

/// The disk's random-read curve: reads per second by queue depth, the table
/// `scripts/fio-random-reads.sh` writes (`bench`, `report`, `study` and `project` read it).
#[derive(Debug, Clone, Default, Args)]
pub struct DiskTableArgs {
    /// The disk's random-read table (scripts/fio-random-reads.sh), measured on the state's filesystem.
    #[arg(id = "disk_table", long = "disk-table", value_name = "FILE")]
    pub path: Option<PathBuf>,
}

impl DiskTableArgs {
    /// The table, as an input no output may be ([`paths::check_apart`]).
    pub fn inputs(&self) -> Option<paths::Input<'_>> {
        self.path
            .as_deref()
            .map(|path| paths::Input::file("--disk-table", path))
    }

    /// The table read and parsed, where one was given.
    pub fn read(&self) -> eyre::Result<Option<bal_replay_model::DiskModel>> {
        Ok(self
            .path
            .as_deref()
            .map(bal_replay_model::DiskModel::from_fio_file)
            .transpose()?)
    }
}

/// Where a command's JSON result goes beside what it prints (`run`, `bench`, `bench-db`,
/// `bench-reference`, `project`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl OutputArgs {
    /// Refuses outputs that could not be written at the end ([`bal_replay_bench::check_output_file`]),
    /// so that the command fails before its work rather than losing it.
    pub fn check(&self) -> Result<(), bal_replay_bench::OutputPathError> {
        self.json
            .as_deref()
            .map_or(Ok(()), bal_replay_bench::check_output_file)
    }

    /// The outputs these name, for [`paths::check_apart`].
    pub fn outputs(&self) -> Vec<paths::Output<'_>> {
        self.json
            .iter()
            .map(|json| paths::Output::file("--json", json))
            .collect()
    }
}

/// Parses a number that must be at least 1 (blocks, readers, reads): a zero would otherwise run as
/// 1 and be reported as 0.
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

/// Parses a count of the libraries' options (workers, batch sizes, readers, repeats), with the
/// same message as [`at_least_one`] for a zero.
fn count(s: &str) -> Result<NonZeroUsize, String> {
    NonZeroUsize::new(at_least_one(s)?).ok_or_else(|| "must be at least 1".into())
}

/// A progress bar on stderr with `template` (the plain style if the template does not parse).
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
    use bal_replay_engine::{ExecMode, IoDesign};
    use clap::CommandFactory;

    fn n(count: usize) -> NonZeroUsize {
        NonZeroUsize::new(count).unwrap()
    }

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
            Command::Bench(bench) => {
                let matrix = bench.matrix().unwrap();
                assert_eq!(matrix.threads, vec![n(1), n(2), n(4)]);
                assert_eq!(matrix.batches, vec![n(1), n(50)]);
                assert_eq!(matrix.designs, vec![IoDesign::Full, IoDesign::Hybrid]);
                assert_eq!(
                    matrix.cache,
                    CacheCapacity {
                        storage: 200_000,
                        ..CacheCapacity::default()
                    }
                );
                assert!(matrix.sequential && matrix.in_memory);
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
    fn run_options_fill_the_replay_options() {
        for (mode, expected) in [
            ("sequential", ExecMode::Sequential),
            ("seq", ExecMode::Sequential),
            ("parallel", ExecMode::Parallel),
            ("par", ExecMode::Parallel),
        ] {
            let cli = Cli::try_parse_from([
                "bal-replay",
                "run",
                "--dump",
                "d",
                "--state",
                "s",
                "--mode",
                mode,
                "--threads",
                "3",
                "--io",
                "hybrid",
            ])
            .unwrap();
            let Command::Run(run) = cli.command else {
                panic!("parsed another command")
            };
            let options = run.replay_options();
            assert_eq!(options.mode, expected);
            assert_eq!(
                (options.threads, options.batch, options.io_threads),
                (n(3), n(50), n(8))
            );
            assert_eq!(options.design, IoDesign::Hybrid);
        }
        assert!(
            Cli::try_parse_from([
                "bal-replay",
                "run",
                "--dump",
                "d",
                "--state",
                "s",
                "--mode",
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
            Command::BenchDb(c) => {
                assert_eq!(
                    c.db,
                    vec![
                        StateSpec::Mdbx("/a".into()),
                        StateSpec::RocksDb("/b".into()),
                        StateSpec::RocksDb("/c".into())
                    ]
                );
                assert_eq!(c.threads, vec![n(1), n(2)]);
            }
            _ => panic!("parsed another command"),
        }
        let cli = Cli::try_parse_from(["bal-replay", "run", "--dump", "d", "--state", "mdbx:/r"])
            .unwrap();
        match cli.command {
            Command::Run(c) => assert_eq!(c.chain.state, StateSpec::Mdbx("/r".into())),
            _ => panic!("parsed another command"),
        }
        let cli = Cli::try_parse_from(["bal-replay", "bench", "--dump", "d", "--state", "mdbx:/r"])
            .unwrap();
        match cli.command {
            Command::Bench(c) => {
                assert_eq!(c.chain.state, StateSpec::Mdbx("/r".into()));
                assert!(!c.matrix().unwrap().in_memory);
            }
            _ => panic!("parsed another command"),
        }
    }
}
