//! The `bal-replay` command line: each command's options as clap types, and what each command runs.
//!
//! The binary is `Cli::parse().run()`. A command's options fill the libraries' own option types
//! ([`ReplayOptions`](bal_replay_engine::ReplayOptions) from [`run::ReplayArgs`],
//! [`BenchMatrix`](bal_replay_bench::BenchMatrix) from [`bench::BenchCommand::matrix`]); its `run`
//! calls the libraries and prints what they report. Counts that must be at least 1 are parsed as
//! `NonZeroUsize`, so a zero is refused, naming the option, before anything runs.
//!
//! This is the edge of the workspace: errors are `eyre` reports, progress bars go to stderr
//! (hidden when it is not a terminal), and the replay's reports are recorded as metrics here
//! ([`record`]), so neither the engine nor the metrics crate knows the other.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod bench;
pub mod project;
pub mod record;
pub mod run;
pub mod study;

use bal_replay_bench::memory_limit::MemoryLimit;
use bal_replay_cache::CacheCapacity;
use bal_replay_state::RocksOptions;
use clap::{Args, Parser, Subcommand};
use eyre::WrapErr;
use indicatif::{ProgressBar, ProgressStyle};
use std::{num::NonZeroUsize, path::PathBuf};

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
    /// page is (the default job).
    Demo(bench::DemoCommand),
    /// Replay a dump once over a state (modified in place unless --rewind).
    Run(run::RunCommand),
    /// Random point reads of existing keys per reader-thread count, MDBX vs RocksDB (the research's
    /// random-read table): keys are sampled from each store first, then every run reads among them.
    BenchDb(bench::BenchDbCommand),
    /// Time the reference executor, single-threaded, on a dump of independent blocks (e.g. imported
    /// mainnet fixtures): in memory and over RocksDB.
    BenchReference(bench::BenchReferenceCommand),
    /// Run the research's matrix from the same pre-state and print its tables.
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
            Command::Study(c) => c.run(),
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
    /// The disk's random-read curve (`scripts/fio-random-reads.sh`'s table), drawn under the
    /// `bench-db` sweeps at the same queue depths.
    #[arg(long)]
    pub fio: Option<PathBuf>,
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// TrueType font for chart text.
    #[arg(long, default_value = bal_replay_report::DEFAULT_FONT)]
    pub font: PathBuf,
}

impl ReportCommand {
    /// Draws the charts, writes the summary and lists what it wrote and what it could not draw.
    pub fn run(&self) -> eyre::Result<()> {
        let options = bal_replay_report::ReportOptions {
            font: self.font.clone(),
            ..bal_replay_report::ReportOptions::new(self.out.clone())
        };
        let fio = self
            .fio
            .as_deref()
            .map(bal_replay_model::DiskModel::from_fio_file)
            .transpose()?;
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
            eprintln!("note: --fio is drawn under bench-db sweeps only; no input is one");
        }
        if !benches.is_empty() {
            let inputs = bal_replay_report::load_inputs(&benches)?;
            written.push(bal_replay_report::write_report(&inputs, &options)?);
        }
        for w in &written {
            for file in w.files(&options.out) {
                println!("wrote {}", file.display());
            }
            for reason in &w.skipped {
                println!("not drawn: {reason}");
            }
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
    #[arg(long, default_value_t = CacheCapacity::default().accounts)]
    pub cache_accounts: usize,
    /// Shared cache: storage slots held at most.
    #[arg(long, default_value_t = CacheCapacity::default().storage)]
    pub cache_slots: usize,
    /// Shared cache: contract codes held at most.
    #[arg(long, default_value_t = CacheCapacity::default().codes)]
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
    /// Replay over a state that records no chain id or block hash (otherwise refused), unchecked.
    #[arg(long)]
    pub trust_state: bool,
}

/// Where the state's reads may be served from: the page cache, RocksDB's block cache, or only the
/// disk (`--disk-resident`).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct DiskArgs {
    /// Drop the page cache first (root only).
    #[arg(long)]
    pub drop_caches: bool,
    /// RocksDB direct reads (O_DIRECT): SST blocks are never served from the page cache.
    #[arg(long)]
    pub direct_io: bool,
    /// Disk-resident mode. RocksDB: direct reads, index and filters pinned (see --pin-metadata)
    /// and a block cache of --block-cache (default 8MiB) for data blocks. MDBX (memory-mapped):
    /// the page cache dropped before each run and the process in a memory cgroup of
    /// --memory-limit (default 512MiB; cgroup v1, root). The results say whether at least 80% of
    /// the key reads reached the device.
    #[arg(long)]
    pub disk_resident: bool,
    /// RocksDB block cache, e.g. 64MiB or 1GiB [default: 512MiB; 8MiB with --disk-resident].
    #[arg(long, value_parser = parse_size)]
    pub block_cache: Option<usize>,
    /// RocksDB: load every SST file's index and filter partitions at open and pin them beyond the
    /// block cache, so the cache bounds data blocks only and a key read costs one device read,
    /// as on a node with RocksDB's default options (index and filters in memory). Memory grows
    /// by the state's metadata (about 4% of its size), reported per run. On by default with
    /// --disk-resident.
    #[arg(long, conflicts_with = "unpinned_metadata")]
    pub pin_metadata: bool,
    /// RocksDB with --disk-resident: leave index and filter partitions to the block cache, as
    /// before --disk-resident pinned them; a lookup that misses then also reads them from the disk.
    #[arg(long)]
    pub unpinned_metadata: bool,
    /// Run in a memory cgroup of this size (cgroup v1, root): memory charged from then on, heap
    /// and page cache, stays under it, which bounds how much of a memory-mapped state (MDBX) is
    /// served from memory [default: none; 512MiB with --disk-resident over MDBX].
    #[arg(long, value_parser = parse_size)]
    pub memory_limit: Option<usize>,
}

impl DiskArgs {
    /// The block cache under `--disk-resident` unless `--block-cache` says otherwise: data blocks
    /// only, the index and filters being pinned beside it (or, with `--unpinned-metadata`, room
    /// for their pinned top levels and little else). With 64 MiB, a
    /// generated chain's hot contracts and senders stay cached and fewer than 80% of the key reads
    /// reach the disk (docs/notes/2026-11-23-disk-resident-mode.md).
    pub const DISK_RESIDENT_BLOCK_CACHE: usize = 8 << 20;

    /// The memory cgroup's limit under `--disk-resident` over MDBX unless `--memory-limit` says
    /// otherwise: the run's own heap growth (shared cache, overlay of commits, decoded dumps:
    /// about 200-300 MiB on a 200-block chain) must fit beside the page cache, or the kernel
    /// kills the process instead of reclaiming.
    pub const DISK_RESIDENT_MEMORY_LIMIT: usize = 512 << 20;

    /// Whether RocksDB reads directly.
    pub fn direct_io(&self) -> bool {
        self.direct_io || self.disk_resident
    }

    /// RocksDB's block cache, bytes.
    pub fn block_cache_bytes(&self) -> usize {
        match (self.block_cache, self.disk_resident) {
            (Some(bytes), _) => bytes,
            (None, true) => Self::DISK_RESIDENT_BLOCK_CACHE,
            (None, false) => RocksOptions::default().block_cache_bytes,
        }
    }

    /// Whether every SST file's index and filter partitions are pinned: asked for, or
    /// `--disk-resident` without `--unpinned-metadata`.
    pub fn pin_metadata(&self) -> bool {
        self.pin_metadata || (self.disk_resident && !self.unpinned_metadata)
    }

    /// RocksDB's options for these flags (statistics on: they are the runs' evidence).
    pub fn rocks_options(&self) -> RocksOptions {
        RocksOptions {
            direct_io: self.direct_io(),
            block_cache_bytes: self.block_cache_bytes(),
            statistics: true,
            pin_metadata: self.pin_metadata(),
            ..RocksOptions::default()
        }
    }

    /// The first flag given that only RocksDB reads (MDBX ignores it).
    pub fn rocksdb_flag(&self) -> Option<&'static str> {
        if self.direct_io {
            Some("--direct-io")
        } else if self.block_cache.is_some() {
            Some("--block-cache")
        } else if self.pin_metadata {
            Some("--pin-metadata")
        } else if self.unpinned_metadata {
            Some("--unpinned-metadata")
        } else {
            None
        }
    }

    /// The error for RocksDB's own flags over reth's MDBX, which is memory-mapped: its pages are
    /// bounded by `--memory-limit` (or `--disk-resident`) instead.
    pub fn refuse_over_mdbx(&self) -> eyre::Result<()> {
        let Some(flag) = self.rocksdb_flag() else {
            return Ok(());
        };
        Err(eyre::eyre!(
            "{flag} applies to RocksDB states only: MDBX is memory-mapped, so its pages are served \
             from the page cache; bound it with --memory-limit SIZE or --disk-resident (a memory \
             cgroup around the process, see docs/notes/2026-11-23-disk-resident-mode.md)"
        ))
    }

    /// Whether the page cache is dropped before each run: `--drop-caches`, and `--disk-resident`
    /// over MDBX (a page cached before the process entered its cgroup would be served uncharged).
    pub fn drop_caches(&self, over_mdbx: bool) -> bool {
        self.drop_caches || (over_mdbx && self.disk_resident)
    }

    /// The memory cgroup's limit for a run over MDBX (`over_mdbx`) or RocksDB, if any.
    pub fn memory_limit(&self, over_mdbx: bool) -> Option<usize> {
        self.memory_limit
            .or((over_mdbx && self.disk_resident).then_some(Self::DISK_RESIDENT_MEMORY_LIMIT))
    }

    /// Puts the process in its memory cgroup if these flags ask for one; it leaves the cgroup
    /// when the returned guard drops.
    pub fn enter_memory_limit(&self, over_mdbx: bool) -> eyre::Result<Option<MemoryLimit>> {
        self.memory_limit(over_mdbx)
            .map(|bytes| {
                MemoryLimit::enter(bytes as u64)
                    .wrap_err("--memory-limit / --disk-resident over MDBX needs a memory cgroup")
            })
            .transpose()
    }
}

/// Parses a size in bytes: a number with an optional binary unit (`64MiB`, `64M`, `1GiB`, `4k`).
fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 64MiB, 1GiB, 4096)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?} (use KiB, MiB, GiB)"
            ));
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
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
    use bal_replay_engine::{ExecMode, IoDesign, ReplayOptions};
    use bal_replay_mdbx_state::StateSpec;
    use clap::CommandFactory;

    fn n(count: usize) -> NonZeroUsize {
        NonZeroUsize::new(count).unwrap()
    }

    #[test]
    fn sizes_and_the_disk_resident_defaults() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(
            parse_size("64 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(parse_size("MiB").unwrap_err().contains("is not a size"));
        let parse = |args: &[&str]| {
            let mut all = vec!["bal-replay", "run", "--dump", "d", "--state", "s"];
            all.extend_from_slice(args);
            match Cli::try_parse_from(all).unwrap().command {
                Command::Run(run) => run.disk,
                other => panic!("{other:?}"),
            }
        };
        let plain = parse(&[]);
        assert!(!plain.direct_io());
        assert_eq!(plain.block_cache_bytes(), 512 << 20);
        let resident = parse(&["--disk-resident"]);
        assert!(resident.direct_io());
        assert_eq!(resident.block_cache_bytes(), 8 << 20);
        assert!(resident.rocks_options().statistics);
        let sized = parse(&["--disk-resident", "--block-cache", "64MiB"]);
        assert_eq!(sized.block_cache_bytes(), 64 << 20);
        let err = sized.refuse_over_mdbx().unwrap_err().to_string();
        assert!(
            err.starts_with("--block-cache applies to RocksDB states only"),
            "{err}"
        );
        assert!(plain.refuse_over_mdbx().is_ok());
        // --disk-resident pins the index and filters unless told not to; alone, nothing is pinned.
        assert!(resident.rocks_options().pin_metadata);
        assert!(!plain.rocks_options().pin_metadata);
        let unpinned = parse(&["--disk-resident", "--unpinned-metadata"]);
        assert!(!unpinned.rocks_options().pin_metadata && unpinned.direct_io());
        let err = unpinned.refuse_over_mdbx().unwrap_err().to_string();
        assert!(
            err.starts_with("--unpinned-metadata applies to RocksDB states only"),
            "{err}"
        );
        let pinned = parse(&["--pin-metadata"]);
        assert!(pinned.rocks_options().pin_metadata && !pinned.direct_io());
        let err = pinned.refuse_over_mdbx().unwrap_err().to_string();
        assert!(
            err.starts_with("--pin-metadata applies to RocksDB states only"),
            "{err}"
        );
        let both = "bal-replay run --dump d --state s --pin-metadata --unpinned-metadata";
        assert!(Cli::try_parse_from(both.split(' ')).is_err());
        // Over MDBX, --disk-resident is a memory cgroup (512 MiB unless --memory-limit) and the
        // page cache dropped before each run; over RocksDB it sets neither.
        assert!(resident.refuse_over_mdbx().is_ok());
        assert_eq!(resident.memory_limit(true), Some(512 << 20));
        assert_eq!(resident.memory_limit(false), None);
        assert!(resident.drop_caches(true) && !resident.drop_caches(false));
        let limited = parse(&["--memory-limit", "1GiB"]);
        assert_eq!(limited.memory_limit(false), Some(1 << 30));
        assert_eq!(limited.memory_limit(true), Some(1 << 30));
        assert!(!limited.drop_caches(true));
        assert_eq!(plain.memory_limit(true), None);
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
                let matrix = bench.matrix();
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
            let options = ReplayOptions::from(&run.replay);
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
                assert_eq!(c.threads, vec![1, 2]);
            }
            _ => panic!("parsed another command"),
        }
        let cli = Cli::try_parse_from(["bal-replay", "run", "--dump", "d", "--state", "mdbx:/r"])
            .unwrap();
        match cli.command {
            Command::Run(c) => assert_eq!(c.state, StateSpec::Mdbx("/r".into())),
            _ => panic!("parsed another command"),
        }
        let cli = Cli::try_parse_from(["bal-replay", "bench", "--dump", "d", "--state", "mdbx:/r"])
            .unwrap();
        match cli.command {
            Command::Bench(c) => {
                assert_eq!(c.state, StateSpec::Mdbx("/r".into()));
                assert!(!c.matrix().in_memory);
            }
            _ => panic!("parsed another command"),
        }
    }
}
