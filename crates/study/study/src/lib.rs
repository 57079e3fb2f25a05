//! The answer to the research's question for one chain: **when state must come from disk, how much
//! of full BAL's throughput does each BAL design keep, and at what BAL size?**
//!
//! [`run_study`] takes a dump and the state before it, and runs what the answer needs: every
//! design (full-verify included) at thread counts up to the machine's and past them, at batch 1,
//! 10 and 50, with the state kept on the disk (direct reads, index and filters pinned, a small
//! block cache), each configuration repeated and the repeats interleaved so every ratio has a
//! range. It measures the disk's own limit with fio where fio is installed, and each design's BAL
//! size from the same dump. Then [`Findings`] computes the page's figures from the bench's result
//! alone (with the disk's curve, the model's projection onto the research's machine: [`projected`],
//! labelled as the model's on the page), and [`render_page`] writes them: the answer in a few
//! sentences, the research's tables with ours beside, and what the run cannot say. The regime of every figure (disk-resident or
//! cache-resident) is judged by what reached the device ([`Residency`]).
//!
//! Data flows one way: dump -> state -> engine -> bench -> study.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod chart;
pub mod findings;
pub mod fio;
pub mod names;
pub mod outputs;
mod page;
pub mod projected;
pub mod read_cost;
mod read_cost_chart;
mod runs;
mod shape;
mod sizes;
pub mod sweep;

pub use bal_replay_bench::Interval;
pub use bal_replay_probe::{Residency, ResidencyBasis};
pub use findings::{BesideFrontier, Findings, FrontierPoint, Regime};
pub use outputs::{
    DISK_TABLE, GIVEN_DISK_TABLE, MANIFEST, OutDir, OutputError, Owner, REPORT, STUDY,
    StudyManifest,
};
pub use page::{frontier_svg, render_page};
pub use projected::{LeftOut, Projected, ProjectedRow};
pub use shape::ChainShape;
pub use sizes::{DesignSizes, MeanSize};
pub use sweep::{CacheRegime, RegimeSweep, SweepRow};

use bal_replay_bench::{
    BenchError, BenchMatrix, BenchResult, DumpIdentity, RunResult, TaskProfiles, run_bench,
};
use bal_replay_dump::{DumpError, DumpReader};
use bal_replay_engine::IoDesign;
use bal_replay_executor::ChainConfig;
use bal_replay_mdbx_state::StateSpec;
use bal_replay_model::{DiskModel, DiskModelError};
use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
};

/// RocksDB's block cache for data blocks in a study: small, as on a node whose state is much
/// larger than its memory (index and filters are pinned beside it).
pub const STUDY_BLOCK_CACHE_BYTES: usize = 8 << 20;

/// What can stop a study.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// The dump could not be read.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// The bench failed.
    #[error(transparent)]
    Bench(Box<BenchError>),
    /// The chain's rules could not be had from the dump.
    #[error("the dump's chain: {0}")]
    Chain(String),
    /// The disk's fio table (`--disk-table`) could not be read.
    #[error(transparent)]
    Disk(#[from] DiskModelError),
    /// An earlier study's runs could not be read (or were written with another schema version).
    #[error(transparent)]
    Load(#[from] bal_replay_bench::ResultReadError),
    /// The output directory could not be claimed, or a study's files read or written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// `--from-bench`'s runs are of another dump than `--dump`.
    #[error(
        "--from-bench {}: its runs are of the dump {recorded}, not of --dump {given}: a page computes one chain's runs with that chain's BAL sizes",
        bench.display()
    )]
    OtherDump {
        /// The bench's file.
        bench: PathBuf,
        /// The dump its runs replayed.
        recorded: Box<DumpIdentity>,
        /// The dump given.
        given: Box<DumpIdentity>,
    },
    /// `--from-bench`'s file does not say which dump its runs replayed.
    #[error(
        "--from-bench {}: records no dump identity (written before benches recorded one), so it cannot be checked against --dump: run the study again without --from-bench",
        bench.display()
    )]
    NoDumpIdentity {
        /// The bench's file.
        bench: PathBuf,
    },
}

impl From<BenchError> for StudyError {
    fn from(error: BenchError) -> Self {
        Self::Bench(Box::new(error))
    }
}

/// How much a study runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyOptions {
    /// The quick form: fewer thread counts, batches up to 10, two repeats; minutes on a small
    /// chain.
    pub quick: bool,
    /// Worker counts, in place of the machine's (1, its cores, 4 and 16 times as many, at most
    /// [`MAX_DEFAULT_WORKERS`]).
    pub threads: Option<Vec<NonZeroUsize>>,
    /// Batch sizes, in place of 1, 10 and 50 (up to the dump's length).
    pub batches: Option<Vec<NonZeroUsize>>,
    /// Runs of each configuration, interleaved, in place of 3 (2 for the quick form).
    pub repeat: Option<NonZeroUsize>,
    /// Measure the disk with fio (where installed).
    pub fio: bool,
    /// The disk's fio table (`scripts/fio-random-reads.sh`), in place of measuring it.
    pub disk: Option<PathBuf>,
    /// Where the page, its chart and the bench's JSON go.
    pub out: PathBuf,
    /// The command line that made the page, printed on it.
    pub command: String,
    /// What the page calls the chain; the dump's directory by default.
    pub title: Option<String>,
    /// The runs of an earlier study of the same dump and state (its `bench.json`): the page is
    /// computed again from them, and nothing is replayed.
    pub from_bench: Option<PathBuf>,
    /// Another machine's runs of a chain of the same shape (its bench JSON): its frontier at its
    /// largest batch is drawn beside this study's, as distinct marks.
    pub beside: Option<PathBuf>,
    /// Empty the machine's page cache before each run (root only); asked for, never assumed.
    pub drop_caches: bool,
    /// Run every design again at the largest batch in each regime of [`sweep::sweep_regimes`]
    /// (block caches up to the state's size, and the research's buffered regime where
    /// `drop_caches` allows it).
    pub sweep: bool,
}

/// The machine and the inputs the page names.
#[derive(Debug, Clone)]
pub struct StudyContext {
    /// What the page is about: the dump's directory.
    pub title: String,
    /// The command that made it.
    pub command: String,
    /// When and with which build: "2026-11-26, dev build".
    pub generated: String,
    /// The state's size on disk, bytes.
    pub state_bytes: u64,
    /// Logical CPUs the runs could use.
    pub cores: usize,
    /// The disk's curve the page judged the runs against, where fio measured it or `--disk-table`
    /// gave it.
    pub disk: Option<StudyDisk>,
    /// The frontier chart's file, relative to the page.
    pub frontier_chart: String,
    /// The state's index and filter layout, as RocksDB's OPTIONS file records it.
    pub table_layout: Option<bal_replay_rocks::TableLayout>,
}

impl StudyContext {
    /// "11.0 GB state" (or "20.4 MB state") as the answer's first words name it.
    pub fn state_label(&self) -> String {
        let bytes = self.state_bytes as f64;
        match self.state_bytes {
            1_000_000_000.. => format!("{:.1} GB state", bytes / 1e9),
            1_000_000.. => format!("{:.1} MB state", bytes / 1e6),
            _ => format!("{:.0} KB state", bytes / 1e3),
        }
    }
}

/// A disk's curve, the fio-format table it was read from, and where that came from.
#[derive(Debug, Clone)]
pub struct StudyDisk {
    /// The curve.
    pub model: DiskModel,
    /// The table.
    pub table: String,
    /// Measured or given.
    pub origin: DiskOrigin,
}

/// Where a study's disk table came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskOrigin {
    /// fio measured it as this study ran.
    Measured,
    /// fio measured it when the runs of `--from-bench` ran; kept beside them.
    MeasuredWithTheRuns(PathBuf),
    /// The user gave it (`--disk-table`): not measured.
    Given(PathBuf),
}

impl StudyDisk {
    /// How the page names the table's origin.
    pub fn origin_label(&self) -> String {
        match &self.origin {
            DiskOrigin::Measured => {
                format!("measured by fio as the runs ran, kept as {DISK_TABLE}")
            }
            DiskOrigin::MeasuredWithTheRuns(path) => {
                format!("measured by fio when the runs ran, {}", path.display())
            }
            DiskOrigin::Given(path) => format!(
                "given by the user with --disk-table ({}, kept as {GIVEN_DISK_TABLE}), not measured",
                path.display()
            ),
        }
    }
}

/// What a study wrote and found.
#[derive(Debug, Clone)]
pub struct StudyOutput {
    /// The findings page.
    pub page: PathBuf,
    /// The bench's result, from which the page's figures are computed.
    pub bench_json: PathBuf,
    /// The figures.
    pub findings: Findings,
    /// The answer's sentences.
    pub answer: String,
}

/// The build a bench's runs were made with, as the page names it: "dev", "release", or
/// "measure (release, fat LTO, one codegen unit)".
pub fn build_label(profile: &str) -> String {
    match profile {
        "measure" => "measure (release, fat LTO, one codegen unit)".into(),
        profile => profile.into(),
    }
}

/// How a page names the engine that ran its runs: its commit, or that none was recorded (runs
/// written before results carried it, or a build outside a git checkout).
pub fn engine_label(commit: Option<&str>) -> String {
    match commit {
        Some(commit) => format!("engine commit {commit}"),
        None => "an engine whose commit its runs did not record".into(),
    }
}

/// The most workers a study runs by default (unless the machine has more cores).
pub const MAX_DEFAULT_WORKERS: usize = 64;

/// The bench matrix a study runs over `blocks` blocks on `cores` cores.
pub fn study_matrix(options: &StudyOptions, cores: usize, blocks: u64) -> BenchMatrix {
    let n = |v: usize| NonZeroUsize::new(v.max(1)).expect("at least 1");
    let threads = options.threads.clone().unwrap_or_else(|| {
        // Far past the cores: a design that reads on demand keeps about one read in flight per
        // worker waiting, so its best worker count is many times the cores (on 2 cores over a
        // disk-resident state parallel I/O gained 2.2-2.7x from 2 to 16-32 workers:
        // docs/notes/2026-11-26-parallel-io-read-disciplines.md). Capped where a machine's cores
        // are many already.
        let mut t: Vec<usize> = if options.quick {
            vec![1, cores]
        } else {
            vec![1, cores, 4 * cores, 16 * cores]
                .into_iter()
                .map(|t| t.min(MAX_DEFAULT_WORKERS.max(cores)))
                .collect()
        };
        t.sort_unstable();
        t.dedup();
        t.into_iter().map(n).collect()
    });
    let batches = options.batches.clone().unwrap_or_else(|| {
        let wanted: &[usize] = if options.quick {
            &[1, 10]
        } else {
            &[1, 10, 50]
        };
        let mut b: Vec<usize> = wanted
            .iter()
            .map(|b| (*b as u64).min(blocks.max(1)) as usize)
            .collect();
        b.dedup();
        b.into_iter().map(n).collect()
    });
    let repeat = options
        .repeat
        .unwrap_or_else(|| n(if options.quick { 2 } else { 3 }));
    BenchMatrix {
        threads,
        batches,
        designs: IoDesign::ALL.to_vec(),
        io_threads: n(8),
        // Only where asked: emptying it slows every other process on the machine, and the state's
        // reads are direct (they bypass the page cache) anyway.
        drop_caches: options.drop_caches,
        direct_io: true,
        pin_metadata: true,
        sequential: false,
        in_memory: false,
        block_cache_bytes: STUDY_BLOCK_CACHE_BYTES,
        cache: Default::default(),
        repeat,
        // The model's projection calibrates on the one-worker runs' task profiles; every run is
        // profiled alike so none pays an overhead the others do not, and only the one-worker
        // runs keep their profiles, as each run ends.
        profile: TaskProfiles::OneWorkerKept,
        pin_workers: None,
        trust_state: false,
    }
}

/// The size of the state's data, bytes: its SST files and its write-ahead logs (`NNNNNN.log`: a
/// small state, such as an imported fixture block's, may hold all its data there, never flushed);
/// not RocksDB's info `LOG`s or options files. A dump of independent blocks has one state per
/// block, each in a directory of its own: those count too.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() && !e.file_name().to_string_lossy().starts_with('.') => {
                data_bytes(&e.path())
            }
            _ => data_size(&e),
        })
        .sum()
}

fn data_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| data_size(&e)).sum())
        .unwrap_or(0)
}

fn data_size(entry: &std::fs::DirEntry) -> u64 {
    let name = entry.file_name();
    let name = name.to_string_lossy();
    let is_data = name.ends_with(".sst")
        || name
            .strip_suffix(".log")
            .is_some_and(|stem| !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()));
    if is_data {
        entry.metadata().map_or(0, |m| m.len())
    } else {
        0
    }
}

/// Runs the study of the dump in `dump_dir` over the RocksDB state in `state_dir` (never written:
/// each run works on a checkpoint), writes `findings.md`, `frontier.svg`, `bench.json`, the disk's
/// table and the study's manifest into `options.out`, and returns what it found. `options.out` is
/// claimed and locked before the first run ([`OutDir::claim`]: new, empty, or holding only an
/// earlier study's files as its manifest lists them), and the study's files land there together
/// ([`outputs`]). `on_run` sees each run as it ends (a progress bar).
pub fn run_study(
    dump_dir: &Path,
    state_dir: &Path,
    options: &StudyOptions,
    on_run: impl FnMut(&RunResult),
) -> Result<StudyOutput, StudyError> {
    let dump = DumpReader::open(dump_dir)?;
    let inputs = StudyInputs {
        config: ChainConfig::for_dump(&dump).map_err(|e| StudyError::Chain(e.to_string()))?,
        sizes: DesignSizes::of_dump(&dump)?,
        shape: ChainShape::of_dump(&dump)?,
        earlier: match &options.from_bench {
            Some(path) => Some(EarlierRuns::read(
                path,
                &DumpIdentity::of(dump_dir, &dump)?,
            )?),
            None => None,
        },
        given_disk: options.disk.as_deref().map(read_given_disk).transpose()?,
        beside: options.beside.as_deref().map(read_bench).transpose()?,
    };
    if options.from_bench.is_none() {
        // Before the disk is measured and the output claimed: every run would skip the blocks
        // the state holds.
        bal_replay_bench::check_state_at_dump_start(
            &StateSpec::RocksDb(state_dir.to_path_buf()),
            &dump,
        )?;
    }
    let out = OutDir::claim(&options.out)?;
    let studied = study_into(&out, dump_dir, state_dir, options, inputs, on_run);
    if studied.is_err() {
        out.release_if_unused();
    }
    studied
}

/// What a study reads before it claims its output directory: a bad input is refused before
/// anything is written.
struct StudyInputs {
    config: ChainConfig,
    sizes: DesignSizes,
    shape: ChainShape,
    earlier: Option<EarlierRuns>,
    given_disk: Option<StudyDisk>,
    beside: Option<BenchResult>,
}

fn study_into(
    out: &OutDir,
    dump_dir: &Path,
    state_dir: &Path,
    options: &StudyOptions,
    inputs: StudyInputs,
    mut on_run: impl FnMut(&RunResult),
) -> Result<StudyOutput, StudyError> {
    // A page computed again from earlier runs speaks of the machine they ran on.
    let cores = match &inputs.earlier {
        Some(earlier) => earlier.bench.cpus.max(1),
        None => std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
    };
    let matrix = study_matrix(options, cores, inputs.shape.blocks);
    let measured_disk = match &inputs.earlier {
        Some(earlier) => earlier.measured_disk.clone(),
        None => None,
    }
    .or_else(|| {
        (inputs.given_disk.is_none() && options.fio)
            .then(|| measure_disk(state_dir, options.quick))
            .flatten()
    });
    let state_bytes = dir_bytes(state_dir);
    let bench = match &inputs.earlier {
        Some(earlier) => earlier.bench.clone(),
        // Its runs keep one-worker profiles only already (`TaskProfiles::OneWorkerKept`).
        None => run_bench(
            &inputs.config,
            dump_dir,
            &StateSpec::RocksDb(state_dir.to_path_buf()),
            &matrix,
            &mut on_run,
        )?,
    };
    let sweep = match &inputs.earlier {
        Some(earlier) => earlier.sweep.clone(),
        None if options.sweep => Some(run_sweep(
            &inputs.config,
            dump_dir,
            state_dir,
            &matrix,
            cores,
            state_bytes,
            on_run,
        )?),
        None => None,
    };
    let context = StudyContext {
        // The title is the page's first heading, one line: a newline in it (a dump directory's
        // name can hold one) would end the heading and spill the rest into the page as text.
        title: options
            .title
            .clone()
            .unwrap_or_else(|| dump_dir.display().to_string())
            .replace(char::is_control, " "),
        command: options.command.clone(),
        generated: format!(
            "{} build of {}, {} blocks, {} repeats each",
            build_label(&bench.build_profile),
            engine_label(bench.engine_commit.as_deref()),
            inputs.shape.blocks,
            bench
                .runs
                .iter()
                .map(|r| r.throughput.repeats)
                .max()
                .unwrap_or(1)
        ),
        state_bytes,
        cores,
        disk: inputs.given_disk.clone().or(measured_disk.clone()),
        frontier_chart: outputs::FRONTIER_CHART.into(),
        table_layout: bal_replay_rocks::TableLayout::of_state(state_dir),
    };
    let written = StudyFiles {
        bench: &bench,
        sweep: sweep.as_ref(),
        earlier: inputs.earlier.as_ref(),
        measured_disk: measured_disk.as_ref(),
        given_disk: inputs.given_disk.as_ref(),
        beside: inputs.beside.as_ref(),
    };
    write_outputs(written, &inputs.sizes, &inputs.shape, context, out)
}

/// The points of the regime sweep at the study's largest batch ([`sweep`]), each a bench of its
/// own over the same dump and state.
fn run_sweep(
    config: &ChainConfig,
    dump_dir: &Path,
    state_dir: &Path,
    matrix: &BenchMatrix,
    cores: usize,
    state_bytes: u64,
    mut on_run: impl FnMut(&RunResult),
) -> Result<RegimeSweep, StudyError> {
    let mut points = Vec::new();
    for (regime, point) in sweep_benches(matrix, cores, state_bytes) {
        tracing::info!(regime = %regime.label(), "regime sweep: next point");
        let bench = run_bench(
            config,
            dump_dir,
            &StateSpec::RocksDb(state_dir.to_path_buf()),
            &point,
            &mut on_run,
        )?;
        points.push(sweep::SweepPoint { regime, bench });
    }
    Ok(RegimeSweep {
        schema_version: sweep::SWEEP_SCHEMA_VERSION,
        batch: matrix
            .batches
            .iter()
            .max()
            .expect("a study runs a batch")
            .get(),
        points,
    })
}

/// Each regime of the sweep over a state of `state_bytes`, with the bench it runs: the study's
/// `matrix` at its largest batch, at the cores and the most workers.
fn sweep_benches(
    matrix: &BenchMatrix,
    cores: usize,
    state_bytes: u64,
) -> Vec<(CacheRegime, BenchMatrix)> {
    let batch = *matrix.batches.iter().max().expect("a study runs a batch");
    let threads = sweep::sweep_threads(&matrix.threads, cores);
    sweep::sweep_regimes(state_bytes, machine_memory_bytes(), matrix.drop_caches)
        .into_iter()
        .map(|regime| {
            let bench = sweep::sweep_matrix(matrix, regime, batch, threads.clone());
            (regime, bench)
        })
        .collect()
}

/// How many runs a study makes: its matrix's, and the sweep's where it runs one.
pub fn study_run_count(options: &StudyOptions, matrix: &BenchMatrix, state_dir: &Path) -> u64 {
    let mut runs = matrix.run_count();
    if options.sweep && options.from_bench.is_none() {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        runs += sweep_benches(matrix, cores, dir_bytes(state_dir))
            .iter()
            .map(|(_, bench)| bench.run_count())
            .sum::<u64>();
    }
    runs
}

/// The machine's memory (`/proc/meminfo`'s `MemTotal`), bytes; 8 GiB where it cannot be read.
fn machine_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(8 << 30, |kib| kib * 1024)
}

/// The disk's curve measured by fio over the state, where fio is installed; the page says what
/// it leaves out without one.
fn measure_disk(state_dir: &Path, quick: bool) -> Option<StudyDisk> {
    let seconds = if quick { 1 } else { 5 };
    match fio::measure(state_dir, &[1, 4, 16, 64], seconds) {
        Ok((model, table)) => Some(StudyDisk {
            model,
            table,
            origin: DiskOrigin::Measured,
        }),
        Err(error) => {
            tracing::warn!(%error, "the disk's bound and the projection are left out");
            None
        }
    }
}

/// `--disk-table`'s table: the user's, not a measurement.
/// A bench's JSON, read whole (within the size of any result).
fn read_bench(path: &Path) -> Result<BenchResult, StudyError> {
    Ok(bal_replay_bench::read_result(path)?)
}

fn read_given_disk(path: &Path) -> Result<StudyDisk, StudyError> {
    let table = std::fs::read_to_string(path).map_err(|source| {
        StudyError::Disk(DiskModelError::Read {
            path: path.display().to_string(),
            source,
        })
    })?;
    Ok(StudyDisk {
        model: DiskModel::parse_fio_table(&table, &path.display().to_string())?,
        table,
        origin: DiskOrigin::Given(path.to_path_buf()),
    })
}

/// The runs of an earlier study or bench (`--from-bench`), checked against the dump given, and
/// the disk table measured when they ran, where their study's manifest lists one.
#[derive(Debug, Clone)]
struct EarlierRuns {
    path: PathBuf,
    /// The file's bytes, as read.
    bytes: Vec<u8>,
    /// Its runs, with the task profiles a study keeps ([`keep_calibration_profiles`]).
    bench: BenchResult,
    /// The regime sweep its study's manifest lists with the runs, as read.
    sweep: Option<RegimeSweep>,
    sweep_bytes: Option<Vec<u8>>,
    measured_disk: Option<StudyDisk>,
}

impl EarlierRuns {
    /// Reads `path`, refusing runs of a dump other than `dump`, and a study's file that is not
    /// the one its manifest lists. A disk table beside it counts only where that manifest lists
    /// it with these runs: one an earlier study left there is not this one's.
    fn read(path: &Path, dump: &DumpIdentity) -> Result<Self, StudyError> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let manifest = StudyManifest::read(dir)?.filter(|m| m.files.iter().any(|f| f.name == name));
        let bytes = match &manifest {
            Some(manifest) => manifest.read_listed(dir, &name)?.unwrap_or_default(),
            None => bal_replay_bench::read_result_bytes(path)?,
        };
        let mut bench: BenchResult = bal_replay_bench::parse_result(path, &bytes)?;
        let recorded = bench
            .dump_identity
            .clone()
            .ok_or_else(|| StudyError::NoDumpIdentity {
                bench: path.to_path_buf(),
            })?;
        if !recorded.same_blocks(dump) {
            return Err(StudyError::OtherDump {
                bench: path.to_path_buf(),
                recorded: Box::new(recorded),
                given: Box::new(dump.clone()),
            });
        }
        keep_calibration_profiles(&mut bench);
        let measured_disk = match &manifest {
            Some(manifest) => match manifest.read_listed(dir, DISK_TABLE)? {
                Some(table) => {
                    let table_path = dir.join(DISK_TABLE);
                    let table = String::from_utf8_lossy(&table).into_owned();
                    Some(StudyDisk {
                        model: DiskModel::parse_fio_table(
                            &table,
                            &table_path.display().to_string(),
                        )?,
                        table,
                        origin: DiskOrigin::MeasuredWithTheRuns(table_path),
                    })
                }
                None => None,
            },
            None => None,
        };
        let sweep_bytes = match &manifest {
            Some(manifest) => manifest.read_listed(dir, outputs::SWEEP_JSON)?,
            None => None,
        };
        let sweep = sweep_bytes
            .as_deref()
            .map(|bytes| bal_replay_bench::parse_result(&dir.join(outputs::SWEEP_JSON), bytes))
            .transpose()?;
        Ok(Self {
            path: path.to_path_buf(),
            bytes,
            bench,
            sweep,
            sweep_bytes,
            measured_disk,
        })
    }
}

/// Drops the task profiles a study's own runs would not have kept ([`TaskProfiles::OneWorkerKept`])
/// from a `bench --task-profile` JSON read with `--from-bench`, which keeps them all: the
/// projection calibrates on the one-worker runs' alone, and each profile adds megabytes to
/// `bench.json`. The file read is never written back.
fn keep_calibration_profiles(bench: &mut BenchResult) {
    let kept = |threads| TaskProfiles::OneWorkerKept.kept(threads);
    for run in bench.runs.iter_mut().filter(|r| !kept(r.threads)) {
        run.batch_profiles = Vec::new();
    }
}

/// What a study writes besides its page: its runs and its disk tables.
#[derive(Debug, Clone, Copy)]
struct StudyFiles<'a> {
    bench: &'a BenchResult,
    sweep: Option<&'a RegimeSweep>,
    earlier: Option<&'a EarlierRuns>,
    measured_disk: Option<&'a StudyDisk>,
    given_disk: Option<&'a StudyDisk>,
    beside: Option<&'a BenchResult>,
}

/// Computes the findings of the runs and writes the page, its chart, the runs' JSON (never over
/// the file they were read from: that one, when it is the directory's own, is kept as it is) and
/// the disk tables, measured and given apart, into `out`, landing together.
fn write_outputs(
    files: StudyFiles<'_>,
    sizes: &DesignSizes,
    shape: &ChainShape,
    context: StudyContext,
    out: &OutDir,
) -> Result<StudyOutput, StudyError> {
    let bench = files.bench;
    let findings = Findings::compute(bench, sizes, context.disk.as_ref().map(|d| &d.model))
        .with_sweep(files.sweep)
        .with_beside(files.beside);
    let mut staged = out.stage()?;
    match files.earlier {
        Some(earlier) if out.holds(outputs::BENCH_JSON, &earlier.path) => {
            staged.keep(outputs::BENCH_JSON, &earlier.bytes);
        }
        _ => {
            let path = staged.path_of(outputs::BENCH_JSON);
            bench.write_json(&path)?;
            staged.written(outputs::BENCH_JSON)?;
        }
    }
    if let Some(sweep) = files.sweep {
        match files.earlier {
            // The sweep read with the runs: its bytes as read, kept where they are the
            // directory's own, copied verbatim elsewhere.
            Some(EarlierRuns {
                path,
                sweep_bytes: Some(bytes),
                ..
            }) => {
                if out.holds(outputs::BENCH_JSON, path) {
                    staged.keep(outputs::SWEEP_JSON, bytes);
                } else {
                    staged.write(outputs::SWEEP_JSON, bytes)?;
                }
            }
            _ => {
                let json = bal_replay_bench::encode_result(sweep, bal_replay_bench::Layout::Pretty)
                    .map_err(|source| OutputError::Io {
                        path: out.path().join(outputs::SWEEP_JSON),
                        source,
                    })?;
                staged.write(outputs::SWEEP_JSON, &json)?;
            }
        }
        staged.write(
            outputs::SWEEP_CHART,
            sweep::sweep_svg(&findings.sweep).as_bytes(),
        )?;
    }
    if let Some(disk) = files.measured_disk {
        match &disk.origin {
            DiskOrigin::MeasuredWithTheRuns(path) if out.holds(DISK_TABLE, path) => {
                staged.keep(DISK_TABLE, disk.table.as_bytes());
            }
            _ => staged.write(DISK_TABLE, disk.table.as_bytes())?,
        }
    }
    let mut given_from = None;
    if let Some(disk) = files.given_disk {
        staged.write(GIVEN_DISK_TABLE, disk.table.as_bytes())?;
        if let DiskOrigin::Given(path) = &disk.origin {
            given_from = Some(path.display().to_string());
        }
    }
    staged.write(
        &context.frontier_chart,
        frontier_svg(&findings, shape).as_bytes(),
    )?;
    if let Some(svg) = read_cost_chart::read_cost_svg(&findings) {
        staged.write(outputs::READ_COST_CHART, svg.as_bytes())?;
    }
    let text = render_page(&context, &findings, sizes, shape);
    staged.write(outputs::PAGE, text.as_bytes())?;
    staged.land(given_from)?;
    let answer = findings.answer(&context.state_label(), shape);
    Ok(StudyOutput {
        page: out.path().join(outputs::PAGE),
        bench_json: out.path().join(outputs::BENCH_JSON),
        findings,
        answer,
    })
}

#[cfg(test)]
mod tests {
    use super::{StudyOptions, dir_bytes, study_matrix};

    #[test]
    fn the_default_worker_counts_go_far_past_the_cores() {
        let mut options = StudyOptions {
            quick: false,
            threads: None,
            batches: None,
            repeat: None,
            fio: false,
            disk: None,
            out: "out".into(),
            command: String::new(),
            title: None,
            from_bench: None,
            beside: None,
            drop_caches: false,
            sweep: false,
        };
        let threads = |options: &StudyOptions, cores| -> Vec<usize> {
            study_matrix(options, cores, 200)
                .threads
                .iter()
                .map(|t| t.get())
                .collect()
        };
        assert_eq!(threads(&options, 2), [1, 2, 8, 32]);
        assert_eq!(threads(&options, 16), [1, 16, 64]);
        assert_eq!(threads(&options, 1), [1, 4, 16]);
        assert_eq!(threads(&options, 96), [1, 96]);
        options.quick = true;
        assert_eq!(threads(&options, 2), [1, 2]);
        // The machine's page cache is emptied only where asked, root or not.
        assert!(!study_matrix(&options, 2, 200).drop_caches);
        options.drop_caches = true;
        assert!(study_matrix(&options, 2, 200).drop_caches);
    }

    #[test]
    fn a_states_data_is_its_sst_files_and_write_ahead_logs() {
        let dir = tempfile::tempdir().unwrap();
        let block = dir.path().join("1150000");
        std::fs::create_dir(&block).unwrap();
        for (name, len) in [
            ("000008.sst", 1000),
            ("000004.log", 300),
            ("LOG", 50_000),
            ("OPTIONS-000007", 20_000),
            ("MANIFEST-000005", 400),
        ] {
            std::fs::write(dir.path().join(name), vec![0u8; len]).unwrap();
            std::fs::write(block.join(name), vec![0u8; len / 10]).unwrap();
        }
        assert_eq!(dir_bytes(dir.path()), 1000 + 300 + 100 + 30);
    }
}
