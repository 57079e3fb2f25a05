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

pub mod findings;
pub mod fio;
mod page;
pub mod projected;
mod shape;
mod sizes;

pub use bal_replay_bench::Interval;
pub use bal_replay_probe::{Residency, ResidencyBasis};
pub use findings::Findings;
pub use page::{frontier_svg, render_page};
pub use projected::{LeftOut, Projected, ProjectedRow};
pub use shape::ChainShape;
pub use sizes::{DesignSizes, MeanSize};

use bal_replay_bench::{BenchError, BenchMatrix, BenchResult, RunResult, TaskProfiles, run_bench};
use bal_replay_dump::{DumpError, DumpReader};
use bal_replay_engine::{IoDesign, PrefetchOrder, TaskOrder};
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
    /// The disk's fio table (`--disk`) could not be read.
    #[error(transparent)]
    Disk(#[from] DiskModelError),
    /// An earlier study's runs could not be read (or were written with another schema version).
    #[error(transparent)]
    Load(#[from] bal_replay_bench::ResultReadError),
    /// A result could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
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
    /// The disk's curve, where fio measured it or `--disk` gave it.
    pub disk: Option<DiskModel>,
    /// The fio-format table that curve was read from, written beside `bench.json` as
    /// [`DISK_TABLE`].
    pub disk_table: Option<String>,
    /// The frontier chart's file, relative to the page.
    pub frontier_chart: String,
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
        order: TaskOrder::BlockOrder,
        prefetch_order: PrefetchOrder::default(),
        // Root can empty the page cache before each run; direct reads bypass it anyway.
        drop_caches: is_root(),
        direct_io: true,
        pin_metadata: true,
        sequential: false,
        in_memory: false,
        block_cache_bytes: STUDY_BLOCK_CACHE_BYTES,
        cache: Default::default(),
        repeat,
        pipeline: false,
        // The model's projection calibrates on the one-worker runs' task profiles; every run is
        // profiled alike so none pays an overhead the others do not, and only the one-worker
        // runs keep their profiles, as each run ends.
        profile: TaskProfiles::OneWorkerKept,
        pin_workers: None,
        trust_state: false,
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
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
/// each run works on a checkpoint), writes `findings.md`, `frontier.svg` and `bench.json` into
/// `options.out` (each written whole, over nothing but its own earlier version), and returns what
/// it found. `on_run` sees each run as it ends (a progress bar).
pub fn run_study(
    dump_dir: &Path,
    state_dir: &Path,
    options: &StudyOptions,
    on_run: impl FnMut(&RunResult),
) -> Result<StudyOutput, StudyError> {
    let dump = DumpReader::open(dump_dir)?;
    let config = ChainConfig::for_dump(&dump).map_err(|e| StudyError::Chain(e.to_string()))?;
    let sizes = DesignSizes::of_dump(&dump)?;
    let shape = ChainShape::of_dump(&dump)?;
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let matrix = study_matrix(options, cores, shape.blocks);
    let (disk, disk_table) = input_disk(state_dir, options)?.unzip();
    let state_bytes = dir_bytes(state_dir);
    let bench = match &options.from_bench {
        Some(path) => {
            let mut bench = load_bench(path)?;
            keep_calibration_profiles(&mut bench);
            bench
        }
        // Its runs keep one-worker profiles only already (`TaskProfiles::OneWorkerKept`).
        None => run_bench(
            &config,
            dump_dir,
            &StateSpec::RocksDb(state_dir.to_path_buf()),
            &matrix,
            on_run,
        )?,
    };
    write_outputs(
        &bench,
        &sizes,
        &shape,
        StudyContext {
            title: options
                .title
                .clone()
                .unwrap_or_else(|| dump_dir.display().to_string()),
            command: options.command.clone(),
            generated: format!(
                "{} build, {} blocks, {} repeats each",
                if cfg!(debug_assertions) {
                    "dev"
                } else {
                    "release"
                },
                shape.blocks,
                bench
                    .runs
                    .iter()
                    .map(|r| r.throughput.repeats)
                    .max()
                    .unwrap_or(1)
            ),
            state_bytes,
            cores,
            disk,
            disk_table,
            frontier_chart: "frontier.svg".into(),
        },
        &options.out,
    )
}

/// The fio table a study judged its runs against, written beside its `bench.json`: a page
/// computed again from those runs (`--from-bench`) uses the disk as it was when they ran, not as a
/// shared disk happens to be now.
pub const DISK_TABLE: &str = "disk.txt";

/// The input disk's curve and the table it was read from: `--disk`'s table, else the one kept
/// with `--from-bench`'s runs, else fio's measure where asked and installed, else none (the page
/// says what it leaves out without one).
fn input_disk(
    state_dir: &Path,
    options: &StudyOptions,
) -> Result<Option<(DiskModel, String)>, StudyError> {
    let kept_with_the_runs = options
        .from_bench
        .as_ref()
        .map(|bench| bench.with_file_name(DISK_TABLE))
        .filter(|table| table.is_file());
    if let Some(path) = options.disk.clone().or(kept_with_the_runs) {
        let text = std::fs::read_to_string(&path).map_err(|source| {
            StudyError::Disk(DiskModelError::Read {
                path: path.display().to_string(),
                source,
            })
        })?;
        let disk = DiskModel::parse_fio_table(&text, &path.display().to_string())?;
        return Ok(Some((disk, text)));
    }
    if !options.fio {
        return Ok(None);
    }
    let seconds = if options.quick { 1 } else { 5 };
    match fio::measure(state_dir, &[1, 4, 16, 64], seconds) {
        Ok(measured) => Ok(Some(measured)),
        Err(error) => {
            tracing::warn!(%error, "the disk's bound and the projection are left out");
            Ok(None)
        }
    }
}

/// Drops the task profiles a study's own runs would not have kept ([`TaskProfiles::OneWorkerKept`])
/// from a `bench --task-profile` JSON read with `--from-bench`, which keeps them all: the
/// projection calibrates on the one-worker runs' alone, and each profile adds megabytes to
/// `bench.json`.
fn keep_calibration_profiles(bench: &mut BenchResult) {
    let kept = |threads| TaskProfiles::OneWorkerKept.kept(threads);
    for run in bench.runs.iter_mut().filter(|r| !kept(r.threads)) {
        run.batch_profiles = Vec::new();
    }
}

/// Reads an earlier study's `bench.json`.
fn load_bench(path: &Path) -> Result<BenchResult, StudyError> {
    Ok(BenchResult::read_json(path)?)
}

/// Computes the findings of `bench` and writes the page, its chart and the bench's JSON.
pub fn write_outputs(
    bench: &BenchResult,
    sizes: &DesignSizes,
    shape: &ChainShape,
    context: StudyContext,
    out: &Path,
) -> Result<StudyOutput, StudyError> {
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StudyError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    let findings = Findings::compute(bench, sizes, context.disk.as_ref());
    let bench_json = out.join("bench.json");
    bench.write_json(&bench_json)?;
    if let Some(table) = &context.disk_table {
        let path = out.join(DISK_TABLE);
        bal_replay_bench::write_result_file(&path, table.as_bytes()).map_err(write_err(&path))?;
    }
    let chart = out.join(&context.frontier_chart);
    bal_replay_bench::write_result_file(&chart, frontier_svg(&findings.frontier).as_bytes())
        .map_err(write_err(&chart))?;
    let page = out.join("findings.md");
    let text = render_page(&context, &findings, sizes, shape);
    bal_replay_bench::write_result_file(&page, text.as_bytes()).map_err(write_err(&page))?;
    let answer = findings.answer(&context.state_label(), shape);
    Ok(StudyOutput {
        page,
        bench_json,
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
