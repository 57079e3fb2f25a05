//! Replay benchmarks: the research's matrix (threads x batch size x I/O design) over one dump, every
//! run from the same pre-state, with sequential and in-memory baselines, printed as the research's
//! tables and saved as JSON.
//!
//! Every run starts from the same pristine state, which is never written, optionally after dropping
//! the page cache, so runs are comparable. A RocksDB state is replayed over a checkpoint of it (hard
//! links, no value rewritten) in a fresh directory of the run's own beside it ([`ScratchState`]); reth's MDBX is opened read-only for each run and read in place
//! under a fresh [`MemOverlay`] that keeps the run's commits in memory. Figures are reported as
//! measured in one process, so their ratios are meaningful even on a noisy machine; absolute numbers
//! are not.
//!
//! [`point_reads`] is the other bench, `bal-replay bench-db`: random point reads of existing keys,
//! reth's MDBX vs the RocksDB flat state, per reader-thread count.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Errors carry the block, index, account, slot and both values of a mismatch: they are built once,
// on the path that stops a run, so their size costs nothing where it matters.
#![allow(clippy::result_large_err)]

pub mod bounds;
mod floor;
mod interval;
mod measured;
pub mod point_reads;
mod rng;
mod tables;

pub use bal_replay_results::{
    Layout, OutputPathError, ResultReadError, VersionedResult, check_output_dir, check_output_file,
    encode_result, parse_result, read_result, read_result_bytes, schema_version, write_result,
    write_result_file,
};
pub use floor::{FLOOR_KEYS, FloorReads, ReadFloor, read_floor};
pub use interval::{
    DesignRatio, INTERVAL_METHOD, Interval, MIN_BOOTSTRAP_REPEATS, median_of as median,
};
pub use measured::{
    BatchSeen, MeasuredReplay, RUN_SCHEMA_VERSION, ReplaySource, RunSummary, measured_replay,
};
pub use tables::render_tables;

use bal_replay_cache::CacheCapacity;
use bal_replay_dump::{BlockHashEntry, DumpReader};
use bal_replay_engine::{
    BalSizeTotals, BatchProfile, BatchReport, EngineError, ExecMode, IoDesign, ReplayOptions,
    ReplayReport, check_state_identity, replay, replay_independent, warm_up_kzg,
};
use bal_replay_executor::ChainConfig;
use bal_replay_host::{
    WORKER_START_ROUNDS, WORKER_START_WORKERS, WorkerStartCost, drop_page_cache,
    measure_worker_start,
};
use bal_replay_mdbx_state::{MdbxOverlayError, MdbxStore, RethDb, RethDbError, StateSpec};
use bal_replay_probe::{CpuUse, DiskEvidence, resident_memory_bytes};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{
    AppliedBlock, FlatContents, MemOverlay, MemStore, StateChanges, StateError, StateReader,
    StateWriter,
};
use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// Why a bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A replay failed (and named why).
    #[error("run {run}: {source}")]
    Run {
        /// Which run.
        run: String,
        /// The cause.
        source: EngineError,
    },
    /// The in-memory baseline loads one state, and a dump of independent blocks has one per block.
    #[error(
        "{}: a dump of independent blocks (imported fixtures) has a state per block, and the in-memory baseline loads one state; leave it out (--no-baselines)",
        dump.display()
    )]
    IndependentInMemory {
        /// The dump.
        dump: PathBuf,
    },
    /// The engine failed outside a run (cloning the state).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The host refused what a cold run needs (dropping the page cache).
    #[error(transparent)]
    Host(#[from] bal_replay_host::HostError),
    /// The state store failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// A run's scratch copy of the state could not be made.
    #[error(transparent)]
    Scratch(#[from] bal_replay_rocks::ScratchError),
    /// The dump could not be read.
    #[error(transparent)]
    Dump(#[from] bal_replay_dump::DumpError),
    /// The matrix leaves a dimension empty (counts cannot be 0: they are `NonZeroUsize`).
    #[error("the bench matrix needs {what}")]
    InvalidMatrix {
        /// What it lacks.
        what: &'static str,
    },
    /// An in-memory run was asked for without loading the state into memory.
    #[error("an in-memory run needs the state loaded into memory (BenchMatrix::in_memory)")]
    NoInMemoryState,
    /// reth's MDBX database could not be opened or its state read.
    #[error("opening reth's MDBX state at {path}")]
    Mdbx {
        /// The directory given.
        path: PathBuf,
        /// The cause.
        source: RethDbError,
    },
    /// The matrix asks for something a bench over MDBX cannot do.
    #[error("{option} is not available over MDBX: {why}")]
    NotOverMdbx {
        /// What was asked for (the in-memory baseline, direct I/O).
        option: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// The state already holds blocks of the dump: a replay from it would skip them, and every
    /// run would measure only the rest (or nothing).
    #[error(
        "state {} already holds blocks up to {held}, and the dump starts at block {dump_first}: a bench replays the whole dump, from a state at block {} (its first block's parent); bench a fresh copy of the state at that block (`bal-replay run` moves the state it replays over on, unless --rewind)",
        state.display(),
        dump_first.saturating_sub(1)
    )]
    StateAhead {
        /// The state's directory.
        state: PathBuf,
        /// The last block the state holds.
        held: u64,
        /// The dump's first block.
        dump_first: u64,
    },
    /// Writing the JSON result failed.
    #[error("writing {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl From<MdbxOverlayError> for BenchError {
    fn from(e: MdbxOverlayError) -> Self {
        match e {
            MdbxOverlayError::Open { path, source } => Self::Mdbx { path, source },
            MdbxOverlayError::State(e) => Self::State(e),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchMatrix {
    /// Worker counts.
    pub threads: Vec<NonZeroUsize>,
    /// Batch sizes (blocks per mega-block).
    pub batches: Vec<NonZeroUsize>,
    /// I/O designs.
    pub designs: Vec<IoDesign>,
    /// Prefetch readers.
    pub io_threads: NonZeroUsize,
    /// Drop the page cache before each run (root only).
    pub drop_caches: bool,
    /// Open RocksDB with direct reads (bypasses the page cache). RocksDB only.
    pub direct_io: bool,
    /// Pin RocksDB's index and filter partitions at open ([`RocksOptions::pin_metadata`]), so
    /// the block cache bounds data blocks only. RocksDB only.
    pub pin_metadata: bool,
    /// Add the sequential baseline (per batch size, over the state's store and in memory).
    pub sequential: bool,
    /// Add the in-memory baseline (parallel design over a `MemStore`, per threads and batch size).
    /// RocksDB only: it loads the whole state into memory, and `bal-replay-mdbx-state` reads MDBX by
    /// key, with no iteration of every entry's value (and a v2 database's keys are hashes, which a
    /// `MemStore` cannot hold).
    pub in_memory: bool,
    /// RocksDB block cache per run, bytes.
    pub block_cache_bytes: usize,
    /// The shared cache's bounds per run.
    pub cache: CacheCapacity,
    /// Runs of each configuration; the median by throughput is reported, with the spread. On a
    /// shared machine one run can be off by tens of percent.
    pub repeat: NonZeroUsize,
    /// Which runs record their batch profiles ([`RunResult::batch_profiles`]) and keep them.
    pub profile: TaskProfiles,
    /// Pin worker `w` of every batch to CPU `pin_workers[w mod len]`
    /// ([`ReplayOptions::pin_workers`]); `None`: the scheduler places them.
    pub pin_workers: Option<Vec<usize>>,
    /// Bench a state that records no chain id or no hash for its block
    /// ([`ReplayOptions::trust_state`]); otherwise it is refused before any run.
    pub trust_state: bool,
}

/// What `bal-replay bench` runs with no options: 1 and 2 workers, batch 1, 10 and 50, every
/// design with both baselines, 8 prefetch readers, through the page cache with RocksDB's default
/// block cache, one run each. Tests and callers change the fields they need
/// (`BenchMatrix { threads, ..BenchMatrix::default() }`).
impl Default for BenchMatrix {
    fn default() -> Self {
        let n = |count| NonZeroUsize::new(count).expect("not 0");
        Self {
            threads: vec![n(1), n(2)],
            batches: vec![n(1), n(10), n(50)],
            designs: IoDesign::ALL.to_vec(),
            io_threads: n(8),
            drop_caches: false,
            direct_io: false,
            pin_metadata: false,
            sequential: true,
            in_memory: true,
            block_cache_bytes: RocksOptions::default().block_cache_bytes,
            cache: CacheCapacity::default(),
            repeat: n(1),
            profile: TaskProfiles::Off,
            pin_workers: None,
            trust_state: false,
        }
    }
}

impl BenchMatrix {
    /// Checks that every dimension has at least one value (counts are never 0, by their type).
    pub fn validate(&self) -> Result<(), BenchError> {
        let invalid = |what| Err(BenchError::InvalidMatrix { what });
        if self.threads.is_empty() {
            return invalid("at least one worker count");
        }
        if self.batches.is_empty() {
            return invalid("at least one batch size");
        }
        if self.designs.is_empty() {
            return invalid("at least one I/O design");
        }
        Ok(())
    }

    /// Every configuration the matrix runs, in table order, with `disk` the store of the state
    /// benched: per batch size, the sequential baselines, then each design at each worker count,
    /// then the in-memory parallel baseline at each worker count.
    pub fn schedule(&self, disk: StoreKind) -> Vec<RunConfig> {
        let mut configs = Vec::new();
        let sequential = |batch, store| RunConfig {
            mode: ExecMode::Sequential,
            design: IoDesign::Parallel,
            threads: NonZeroUsize::MIN,
            batch,
            store,
        };
        let parallel = |design, threads, batch, store| RunConfig {
            mode: ExecMode::Parallel,
            design,
            threads,
            batch,
            store,
        };
        for &batch in &self.batches {
            if self.sequential {
                configs.push(sequential(batch, disk));
                if self.in_memory {
                    configs.push(sequential(batch, StoreKind::Memory));
                }
            }
            for &design in &self.designs {
                for &threads in &self.threads {
                    configs.push(parallel(design, threads, batch, disk));
                }
            }
            if self.in_memory {
                for &threads in &self.threads {
                    configs.push(parallel(
                        IoDesign::Parallel,
                        threads,
                        batch,
                        StoreKind::Memory,
                    ));
                }
            }
        }
        configs
    }

    /// How many replays [`run_bench`] makes: every configuration, `repeat` times.
    pub fn run_count(&self) -> u64 {
        // The store does not change the count.
        (self.schedule(StoreKind::Rocksdb).len() * self.repeat.get()) as u64
    }
}

/// One configuration of a bench matrix: what one replay runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunConfig {
    /// Sequential or parallel.
    pub mode: ExecMode,
    /// I/O design.
    pub design: IoDesign,
    /// Workers.
    pub threads: NonZeroUsize,
    /// Blocks per batch.
    pub batch: NonZeroUsize,
    /// Store the run replays over.
    pub store: StoreKind,
}

impl RunConfig {
    /// The run's name in errors ("Parallel/hybrid t2 b50 Rocksdb").
    fn label(&self) -> String {
        let Self {
            mode,
            design,
            threads,
            batch,
            store,
        } = self;
        format!("{mode:?}/{design} t{threads} b{batch} {store:?}")
    }
}

/// Where a run's state lived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// RocksDB on disk.
    Rocksdb,
    /// All state in memory.
    Memory,
    /// reth's MDBX on disk, read in place; the run's commits kept in memory (`MemOverlay`).
    Mdbx,
}

impl StoreKind {
    /// The store a command line's state names.
    pub fn of(spec: &StateSpec) -> Self {
        match spec {
            StateSpec::RocksDb(_) => Self::Rocksdb,
            StateSpec::Mdbx(_) => Self::Mdbx,
        }
    }

    /// The backend's name in tables and charts: "RocksDB", "MDBX" or "memory".
    pub fn backend_name(self) -> &'static str {
        match self {
            Self::Rocksdb => "RocksDB",
            Self::Mdbx => "MDBX",
            Self::Memory => "memory",
        }
    }

    /// Whether the state was read from disk (RocksDB or MDBX) rather than being the in-memory
    /// baseline.
    pub fn is_disk(self) -> bool {
        !matches!(self, Self::Memory)
    }
}

/// The serde name: `rocksdb`, `memory` or `mdbx`.
impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Rocksdb => "rocksdb",
            Self::Memory => "memory",
            Self::Mdbx => "mdbx",
        })
    }
}

/// Which runs of a bench record their task profiles ([`RunResult::batch_profiles`], a few MB per
/// run) and which keep them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskProfiles {
    /// No run is profiled.
    #[default]
    Off,
    /// Every parallel run is profiled and keeps its profiles (`--task-profile`).
    All,
    /// Every parallel run is profiled, so that all pay the same overhead, but only the one-worker
    /// runs keep their profiles (what the model calibrates on): a long matrix does not hold every
    /// run's profiles until it ends.
    OneWorkerKept,
}

impl TaskProfiles {
    /// Whether runs are profiled.
    pub fn recorded(self) -> bool {
        self != Self::Off
    }

    /// Whether a run of `threads` workers keeps its profiles.
    pub fn kept(self, threads: usize) -> bool {
        match self {
            Self::Off => false,
            Self::All => true,
            Self::OneWorkerKept => threads == 1,
        }
    }
}

/// One run of the matrix: what ran, then its figures by what they measure.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Sequential or parallel.
    pub mode: ExecMode,
    /// I/O design (ignored by sequential runs except `full`).
    pub design: IoDesign,
    /// Workers.
    pub threads: usize,
    /// Blocks per batch.
    pub batch: usize,
    /// Store.
    pub store: StoreKind,
    /// Whether the page cache was dropped before the run.
    pub cold: bool,
    /// `--io-threads` of a parallel run whose design prefetches (batched I/O, hybrid,
    /// full-verify): its prefetch runs twice as many reader threads. Absent for the other designs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_threads: Option<usize>,
    /// Blocks replayed.
    pub blocks: u64,
    /// Transactions.
    pub txs: u64,
    /// Gas.
    pub gas: u64,
    /// Mgas/s of this run and the spread of its configuration's repeats.
    pub throughput: Throughput,
    /// Each repeat's Mgas/s (execution with I/O), in the order the bench's rounds ran them: round
    /// `r` of every configuration ran in the same pass over the matrix, so two configurations'
    /// repeats pair by position ([`Interval::ratio`] bootstraps over the pairs).
    pub repeat_mgas_per_s: Vec<f64>,
    /// Where the replay's time went.
    pub timing: RunTiming,
    /// The shared cache's counts.
    pub cache: CacheCounts,
    /// Read and transaction latency percentiles.
    pub latency: Latency,
    /// What the run read from the disk, and whether it was disk-resident ([`bal_replay_probe::Residency`]).
    pub disk: DiskEvidence,
    /// The CPU this process and everything else used during the run (where `/proc` tells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuUse>,
    /// Each batch of this run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<BatchSample>,
    /// Each parallel batch's profile (every task's CPU time, on-demand reads, worker and start;
    /// the prefetch and the commit), when the bench records them (`--task-profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch_profiles: Vec<BatchProfile>,
}

/// A run's throughput, with its configuration's repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Throughput {
    /// Over execution with I/O, Mgas/s (the research's measure).
    pub mgas_per_s: f64,
    /// End to end, Mgas/s: gas over the whole replay's wall time, with planning, prefetch,
    /// commits and reading the dump counted.
    pub end_to_end_mgas_per_s: f64,
    /// How many runs of this configuration were made (this one is the median by throughput).
    pub repeats: usize,
    /// The lowest throughput over the repeats, Mgas/s.
    pub mgas_per_s_min: f64,
    /// The highest.
    pub mgas_per_s_max: f64,
}

/// Where a replay's time went, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunTiming {
    /// Execution with I/O (prefetch + execution).
    pub exec_with_io_s: f64,
    /// Of that, the prefetch that runs before execution (batched I/O). Hybrid's prefetch
    /// overlaps execution and is not counted apart.
    pub prefetch_s: f64,
    /// Sum of each batch's longest transaction.
    pub longest_txs_s: f64,
    /// Commits.
    pub commit_s: f64,
    /// The whole replay.
    pub wall_s: f64,
    /// Of it, reading and decoding the dump's records: this tool's input, which a client
    /// receives from the network instead. Absent from results written before version 7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_dump_s: Option<f64>,
}

impl RunTiming {
    /// The timings of a replay.
    pub fn of(r: &ReplayReport) -> Self {
        Self {
            exec_with_io_s: r.exec_with_io.as_secs_f64(),
            prefetch_s: r.prefetch().as_secs_f64(),
            longest_txs_s: r.longest_txs.as_secs_f64(),
            commit_s: r.commit.as_secs_f64(),
            wall_s: r.wall.as_secs_f64(),
            read_dump_s: Some(r.read_dump.as_secs_f64()),
        }
    }

    /// End to end as a client pays it, seconds: the whole replay less reading the dump (planning,
    /// the prefetch, execution and commits); the whole replay where the run did not time its
    /// reading.
    pub fn client_s(&self) -> f64 {
        self.wall_s - self.read_dump_s.unwrap_or(0.0)
    }
}

/// The shared cache's counts over a replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheCounts {
    /// Lookups answered by the cache.
    pub hits: u64,
    /// Lookups read from the store on demand.
    pub misses: u64,
    /// Keys prefetched before their batch executed.
    pub keys_prefetched: u64,
}

impl CacheCounts {
    /// The counts of a replay.
    pub fn of(r: &ReplayReport) -> Self {
        Self {
            hits: r.cache.hits,
            misses: r.cache.misses,
            keys_prefetched: r.batches.iter().map(|b| b.keys_prefetched).sum(),
        }
    }

    /// Hits over lookups (0 without a lookup).
    pub fn hit_ratio(&self) -> f64 {
        self.hits as f64 / (self.hits + self.misses).max(1) as f64
    }
}

/// Latency percentiles of a run, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    /// Median on-demand read (a bucket's upper bound).
    pub read_p50_us: u64,
    /// 99th percentile on-demand read.
    pub read_p99_us: u64,
    /// Median transaction.
    pub tx_p50_us: u64,
    /// 99th percentile transaction.
    pub tx_p99_us: u64,
}

/// One batch of a run: its throughput, when it ended, and the process's memory and the state's size
/// then (sampled between batches, outside the timed execution).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BatchSample {
    /// First block.
    pub first_block: u64,
    /// Last block.
    pub last_block: u64,
    /// Gas used.
    pub gas: u64,
    /// Execution with I/O (prefetch + execution), seconds.
    pub exec_with_io_s: f64,
    /// Of that, the prefetch before execution, seconds.
    pub prefetch_s: f64,
    /// Seconds from the start of the replay to the end of this batch's commit.
    pub end_s: f64,
    /// Resident memory of the process after the batch, bytes (Linux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// RocksDB's estimate of the state's size after the batch (SST files and memtables), bytes;
    /// none for in-memory and MDBX runs (MDBX is never written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_bytes: Option<u64>,
}

impl BatchSample {
    fn of(b: &BatchReport, end_s: f64, state_bytes: Option<u64>) -> Self {
        Self {
            first_block: b.first_block,
            last_block: b.last_block,
            gas: b.gas,
            exec_with_io_s: b.exec_with_io().as_secs_f64(),
            prefetch_s: b.prefetch.as_secs_f64(),
            end_s,
            rss_bytes: resident_memory_bytes(),
            state_bytes,
        }
    }

    /// Throughput over execution with I/O, Mgas/s.
    pub fn mgas_per_s(&self) -> f64 {
        if self.exec_with_io_s > 0.0 {
            self.gas as f64 / self.exec_with_io_s / 1e6
        } else {
            0.0
        }
    }
}

impl RunResult {
    /// The run's figures; the report's batch profiles are moved out of it, not copied (a few MB
    /// per profiled run).
    fn from_report(config: &RunConfig, cold: bool, mut r: ReplayReport) -> Self {
        let mut tx_times: Vec<Duration> = r
            .batches
            .iter()
            .flat_map(|b| b.tx_times.iter().copied())
            .collect();
        tx_times.sort_unstable();
        let q = |p: f64| -> u64 {
            if tx_times.is_empty() {
                return 0;
            }
            let i = ((tx_times.len() - 1) as f64 * p).round() as usize;
            tx_times[i].as_micros() as u64
        };
        let mgas_per_s = r.mgas_per_s();
        Self {
            mode: config.mode,
            design: config.design,
            threads: config.threads.get(),
            batch: config.batch.get(),
            store: config.store,
            cold,
            io_threads: None,
            blocks: r.blocks,
            txs: r.txs,
            gas: r.gas,
            throughput: Throughput {
                mgas_per_s,
                end_to_end_mgas_per_s: r.gas as f64 / r.wall.as_secs_f64().max(1e-9) / 1e6,
                repeats: 1,
                mgas_per_s_min: mgas_per_s,
                mgas_per_s_max: mgas_per_s,
            },
            repeat_mgas_per_s: vec![mgas_per_s],
            timing: RunTiming::of(&r),
            cache: CacheCounts::of(&r),
            latency: Latency {
                read_p50_us: r.cache.latency.quantile_us(0.5),
                read_p99_us: r.cache.latency.quantile_us(0.99),
                tx_p50_us: q(0.5),
                tx_p99_us: q(0.99),
            },
            disk: DiskEvidence::default(),
            cpu: None,
            batches: Vec::new(),
            batch_profiles: r
                .batches
                .iter_mut()
                .filter_map(|b| b.profile.take())
                .collect(),
        }
    }

    /// A short label ("parallel/hybrid t2 b50 rocksdb cold").
    pub fn label(&self) -> String {
        format!(
            "{}/{} t{} b{} {}{}",
            self.mode.name(),
            self.design,
            self.threads,
            self.batch,
            self.store,
            if self.cold { " cold" } else { "" }
        )
    }

    /// Gas over the run's end-to-end time as a client pays it ([`RunTiming::client_s`]), Mgas/s:
    /// [`Throughput::end_to_end_mgas_per_s`] less the dump's reading, where the run timed it.
    pub fn client_mgas_per_s(&self) -> f64 {
        self.gas as f64 / self.timing.client_s().max(1e-9) / 1e6
    }
}

/// Mean RLP-encoded BAL size per block in each design, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeanBalSizes {
    /// Full BAL.
    pub full: f64,
    /// Batched I/O BAL.
    pub batched: f64,
    /// Parallel I/O BAL.
    pub parallel: f64,
}

impl MeanBalSizes {
    /// The mean size of `design`'s BAL (a hybrid carries batched I/O's, a verifying full BAL
    /// full BAL's).
    pub fn of(&self, design: IoDesign) -> f64 {
        match design {
            IoDesign::Full | IoDesign::FullVerify => self.full,
            IoDesign::Batched | IoDesign::Hybrid => self.batched,
            IoDesign::Parallel => self.parallel,
        }
    }
}

/// Which dump a bench ran: its directory and what tells its chain from another's (its block count
/// and its first and last blocks' hashes), so a page computed again from the bench's runs can
/// refuse the dump of another chain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DumpIdentity {
    /// The dump's directory, absolute where it could be resolved.
    pub path: String,
    /// Its records.
    pub blocks: u64,
    /// Its first block; `None` for an empty dump.
    pub first: Option<BlockId>,
    /// Its last block; `None` for an empty dump.
    pub last: Option<BlockId>,
}

/// A block's number and header hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlockId {
    /// Its number.
    pub number: u64,
    /// Its header's hash.
    pub hash: alloy_primitives::B256,
}

impl DumpIdentity {
    /// The identity of the dump `dump`, opened from `dir`: reads its first record and its last
    /// segment.
    pub fn of(dir: &Path, dump: &DumpReader) -> Result<Self, bal_replay_dump::DumpError> {
        let id = |record: bal_replay_dump::BlockRecord| BlockId {
            number: record.number(),
            hash: record.block.header.hash_slow(),
        };
        let first = dump.records().next().transpose()?.map(id);
        let last = dump.last_record()?.map(id);
        Ok(Self {
            path: std::fs::canonicalize(dir)
                .unwrap_or_else(|_| dir.to_path_buf())
                .display()
                .to_string(),
            blocks: dump.manifest().record_count,
            first,
            last,
        })
    }

    /// Whether `other` holds the same chain's blocks (wherever its directory lies: a copy of a
    /// dump is the same dump).
    pub fn same_blocks(&self, other: &Self) -> bool {
        (self.blocks, self.first, self.last) == (other.blocks, other.first, other.last)
    }
}

impl std::fmt::Display for DumpIdentity {
    /// "/data/dump (200 blocks, 1000 0xab..cd to 1199 0x12..34)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} blocks", self.path, self.blocks)?;
        if let (Some(first), Some(last)) = (self.first, self.last) {
            write!(
                f,
                ", block {} {} to block {} {}",
                first.number, first.hash, last.number, last.hash
            )?;
        }
        write!(f, ")")
    }
}

/// The schema version of [`BenchResult`] this build writes and reads. Files written before
/// results carried one are version 1; version 3 records the build that ran the runs
/// ([`BenchResult::build_profile`]); version 4 the read cost account (each run's CPU in user
/// mode and in the kernel, its threads' sleeps and preemptions, its time inside RocksDB's reads
/// and file reads) and the floor of a key read ([`BenchResult::read_floors`]); version 5 each
/// parallel run's workers' own CPU ([`bal_replay_probe::CpuUse::worker_s`]); version 6 the
/// engine's commit ([`BenchResult::engine_commit`]); version 7 each run's time reading the dump
/// ([`RunTiming::read_dump_s`]). Version 3 to 6 files are read too, without what came after them
/// ([`VersionedResult::ALSO_READS`]).
pub const SCHEMA_VERSION: u32 = 7;

/// The Cargo profile this build was made with: "dev", "release" or "measure" (the measurement
/// profile: release with fat LTO and one codegen unit).
pub fn build_profile() -> &'static str {
    env!("BAL_REPLAY_CARGO_PROFILE")
}

/// The commit this build's engine was made from: git's HEAD when it was built, `-dirty` where a
/// tracked file differed from it; `None` for a build outside a git checkout.
pub fn engine_commit() -> Option<&'static str> {
    Some(env!("BAL_REPLAY_ENGINE_COMMIT")).filter(|c| !c.is_empty())
}

/// The result of a whole bench.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchResult {
    /// [`SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// The Cargo profile of the build that ran the runs ([`build_profile`]).
    pub build_profile: String,
    /// The commit of the build that ran the runs ([`engine_commit`]); absent from results
    /// written before version 6 and from builds outside a git checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_commit: Option<String>,
    /// The dump benchmarked.
    pub dump: String,
    /// Blocks in it.
    pub blocks: u64,
    /// Logical CPUs the bench could use (its affinity mask's).
    pub cpus: usize,
    /// Mean BAL sizes.
    pub bal_sizes: MeanBalSizes,
    /// RocksDB read a multi-get's data blocks from one file as one io_uring batch; where the
    /// kernel refused io_uring, one `pread` each ([`bal_replay_rocks::io_uring::read_path`]).
    pub rocksdb_io_uring: bool,
    /// The dump's blocks are independent (imported fixtures), each replayed over a state of its
    /// own as a batch of one block.
    pub independent_blocks: bool,
    /// What starting a batch's worker cost on this machine, measured before the store opened
    /// when the bench recorded task profiles: the model starts workers at this cost
    /// (`bal-replay project`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_start: Option<WorkerStartCost>,
    /// The CPUs the workers were pinned to, worker `w` to the `w mod len`-th
    /// ([`BenchMatrix::pin_workers`]); absent where the scheduler placed them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_workers: Option<Vec<usize>>,
    /// Which dump it ran ([`DumpIdentity`]); absent only from a result put together in memory
    /// from runs, never from one a bench wrote (a reader that needs it says it is missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dump_identity: Option<DumpIdentity>,
    /// Every run, in the order run.
    pub runs: Vec<RunResult>,
    /// Each parallel design's throughput over full BAL's over the state's store, with the range
    /// its repeats allow ([`DesignRatio::of_runs`]); absent (empty) where no parallel design ran
    /// beside full BAL over the same store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ratios_to_full: Vec<DesignRatio>,
    /// The floor of a key read at each batch size of the runs over a RocksDB state: RocksDB's
    /// own point reads and multi-gets of the BALs' keys, on one thread, over the same state and
    /// options ([`read_floor`]). Absent in results written before it was measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_floors: Vec<ReadFloor>,
}

impl VersionedResult for BenchResult {
    const KIND: &'static str = "bench result";
    const SCHEMA_VERSION: u32 = SCHEMA_VERSION;
    /// Versions 4 to 7 only added optional fields.
    const ALSO_READS: &'static [u32] = &[3, 4, 5, 6];

    /// Every number the projection and the study read, within [`bounds`].
    fn check(&self) -> Result<(), bounds::FieldError> {
        bounds::check_bench(self)
    }
}

impl BenchResult {
    /// The same bench with only the runs `keep` keeps, copied (their ratios to full BAL left
    /// out): what a reader of a few runs needs, without copying the others' task profiles.
    pub fn with_runs_where(&self, keep: impl Fn(&RunResult) -> bool) -> Self {
        Self {
            schema_version: self.schema_version,
            build_profile: self.build_profile.clone(),
            engine_commit: self.engine_commit.clone(),
            dump: self.dump.clone(),
            blocks: self.blocks,
            cpus: self.cpus,
            bal_sizes: self.bal_sizes,
            rocksdb_io_uring: self.rocksdb_io_uring,
            independent_blocks: self.independent_blocks,
            worker_start: self.worker_start,
            pinned_workers: self.pinned_workers.clone(),
            dump_identity: self.dump_identity.clone(),
            runs: self.runs.iter().filter(|r| keep(r)).cloned().collect(),
            ratios_to_full: Vec::new(),
            read_floors: self.read_floors.clone(),
        }
    }

    /// Reads a file `bench --json` wrote, refusing one of another schema version.
    pub fn read_json(path: &Path) -> Result<Self, ResultReadError> {
        read_result(path)
    }

    /// The store the matrix ran over: that of its first run not in memory (one bench runs over one
    /// state), RocksDB when every run was in memory.
    pub fn disk_store(&self) -> StoreKind {
        self.runs
            .iter()
            .map(|r| r.store)
            .find(|s| s.is_disk())
            .unwrap_or(StoreKind::Rocksdb)
    }

    /// Writes the result as pretty JSON.
    pub fn write_json(&self, path: &Path) -> Result<(), BenchError> {
        // With task profiles (tens of thousands of numbers per run), one line: pretty printing
        // would put each number on a line of its own.
        let profiled = self.runs.iter().any(|r| !r.batch_profiles.is_empty());
        let layout = if profiled {
            Layout::OneLine
        } else {
            Layout::Pretty
        };
        write_result(path, self, layout).map_err(|source| BenchError::Io {
            path: path.into(),
            source,
        })
    }
}

/// The order round `round` of a repeated bench runs its `len` configurations in: forwards in even
/// rounds, backwards in odd ones (A B C, C B A, A B C, ...).
pub fn abba_order(len: usize, round: usize) -> Vec<usize> {
    if round.is_multiple_of(2) {
        (0..len).collect()
    } else {
        (0..len).rev().collect()
    }
}

/// Mean BAL sizes of a dump's records.
pub fn mean_bal_sizes(dump: &DumpReader) -> Result<MeanBalSizes, BenchError> {
    let totals = BalSizeTotals::of_records(dump.records())?;
    Ok(MeanBalSizes {
        full: totals.mean(totals.sum.full),
        batched: totals.mean(totals.sum.batched),
        parallel: totals.mean(totals.sum.parallel),
    })
}

/// The store of the state benched, or why the matrix cannot run over it.
fn disk_store(state: &StateSpec, matrix: &BenchMatrix) -> Result<StoreKind, BenchError> {
    match state {
        StateSpec::RocksDb(_) => Ok(StoreKind::Rocksdb),
        StateSpec::Mdbx(_) if matrix.in_memory => Err(BenchError::NotOverMdbx {
            option: "the in-memory baseline",
            why: "it needs the whole state loaded into memory, and MDBX is read by key \
                  (leave it out, or bench the RocksDB state bal-migrate makes of it)",
        }),
        StateSpec::Mdbx(_) if matrix.direct_io => Err(BenchError::NotOverMdbx {
            option: "direct I/O",
            why: "it is a RocksDB option",
        }),
        StateSpec::Mdbx(_) => Ok(StoreKind::Mdbx),
    }
}

/// Refuses a pristine chained-replay state that records no chain id or no hash for its block
/// ([`check_state_identity`]), naming its directory, before anything is loaded or run: every run
/// would refuse it, the in-memory ones by then without its directory. A state of no height is
/// left to the runs' own error. Independent blocks' states are checked block by block as they run.
fn check_pristine_identity(state: &StateSpec) -> Result<(), BenchError> {
    match state {
        StateSpec::RocksDb(dir) => {
            let store = RocksStore::open_read_only(dir)?;
            if let Some(block) = store.applied_block()? {
                check_state_identity(&store, block, false)?;
            }
        }
        StateSpec::Mdbx(dir) => {
            let mdbx_err = |source| BenchError::Mdbx {
                path: dir.clone(),
                source,
            };
            let db = RethDb::open_for_random_reads(dir).map_err(mdbx_err)?;
            let store = MdbxStore::new(&db).map_err(mdbx_err)?;
            if let Some(block) = store.applied_block()? {
                check_state_identity(&store, block, false)?;
            }
        }
    }
    Ok(())
}

/// Refuses a pristine chained-replay state that already holds blocks of the dump, before anything
/// is loaded or run: each run would skip them, as `run` resumes, and measure the rest as the
/// dump ([`BenchError::StateAhead`]). A state below the dump's first block's parent, or past its
/// last, is left to the runs' own error; a dump of independent blocks has a state per block,
/// each checked as it runs. [`run_bench`] checks this first; a caller that does work of its own
/// before it (a study) checks it sooner.
pub fn check_state_at_dump_start(state: &StateSpec, dump: &DumpReader) -> Result<(), BenchError> {
    let manifest = dump.manifest();
    let (true, Some(first), Some(last)) =
        (manifest.chained, manifest.first_block, manifest.last_block)
    else {
        return Ok(());
    };
    let applied = match state {
        StateSpec::RocksDb(dir) => RocksStore::open_read_only(dir)?.applied_block()?,
        StateSpec::Mdbx(dir) => {
            let mdbx_err = |source| BenchError::Mdbx {
                path: dir.clone(),
                source,
            };
            let db = RethDb::open_for_random_reads(dir).map_err(mdbx_err)?;
            MdbxStore::new(&db).map_err(mdbx_err)?.applied_block()?
        }
    };
    match applied {
        Some(held) if (first..=last).contains(&held) => Err(BenchError::StateAhead {
            state: state.path().to_path_buf(),
            held,
            dump_first: first,
        }),
        _ => Ok(()),
    }
}

/// The contents and the identity (block hash, chain) of a pristine RocksDB state, from which each
/// in-memory run builds its `MemStore`.
struct InMemoryState {
    contents: FlatContents,
    identity: Option<AppliedBlock>,
}

impl InMemoryState {
    fn load(dir: &Path) -> Result<Self, BenchError> {
        let pristine = RocksStore::open_read_only(dir)?;
        let (hash, chain_id) = (pristine.applied_block_hash()?, pristine.chain_id()?);
        let identity = pristine.applied_block()?.map(|number| AppliedBlock {
            number,
            hash,
            chain_id,
        });
        Ok(Self {
            contents: pristine.dump_all()?,
            identity,
        })
    }

    fn store(&self) -> Result<MemStore, BenchError> {
        let store = MemStore::from_contents(&self.contents)?;
        if let Some(identity) = self.identity {
            store.commit_block(&StateChanges::default(), identity)?;
        }
        Ok(store)
    }
}

/// What every run of one bench shares.
struct Bench<'a> {
    config: &'a ChainConfig,
    dump: DumpReader,
    state: &'a StateSpec,
    matrix: &'a BenchMatrix,
    rocks_options: RocksOptions,
    /// Over MDBX each run starts with the hashes of the blocks before the dump's first.
    first_block_hashes: Vec<BlockHashEntry>,
    in_memory: Option<InMemoryState>,
}

/// What one replay of a bench measured, before it becomes a [`RunResult`].
struct Measured {
    report: ReplayReport,
    /// The page cache was dropped before it.
    cold: bool,
    disk: DiskEvidence,
    cpu: Option<CpuUse>,
    samples: Vec<BatchSample>,
}

impl Measured {
    /// A replay whose reads no probe watched (in memory, independent blocks).
    fn unprobed(report: ReplayReport, cold: bool, samples: Vec<BatchSample>) -> Self {
        Self {
            report,
            cold,
            disk: DiskEvidence::default(),
            cpu: None,
            samples,
        }
    }
}

impl Bench<'_> {
    /// The floor of a key read at each batch size of the matrix ([`read_floor`]), over a
    /// RocksDB state that a chained dump's runs start from, opened read-only with the runs'
    /// options; none over other states.
    fn read_floors(&self) -> Result<Vec<ReadFloor>, BenchError> {
        let StateSpec::RocksDb(path) = self.state else {
            return Ok(Vec::new());
        };
        if !self.dump.manifest().chained {
            return Ok(Vec::new());
        }
        self.matrix
            .batches
            .iter()
            .map(|batch| {
                read_floor(
                    &self.dump,
                    path,
                    &self.rocks_options,
                    batch.get(),
                    self.matrix.drop_caches,
                )
            })
            .collect()
    }

    /// Replays the dump once in `run`'s configuration, from the pristine state.
    fn run(&self, run: &RunConfig) -> Result<RunResult, BenchError> {
        let options = self.replay_options(run);
        let measured = match run.store {
            StoreKind::Rocksdb if !self.dump.manifest().chained => {
                self.run_independent(run, &options)?
            }
            StoreKind::Rocksdb => self.run_on_disk(run, &options, false)?,
            StoreKind::Mdbx => self.run_on_disk(run, &options, true)?,
            StoreKind::Memory => {
                // In-memory runs are only scheduled when the contents were loaded.
                let memory = self.in_memory.as_ref().ok_or(BenchError::NoInMemoryState)?;
                let store = memory.store()?;
                let (start, mut samples) = (Instant::now(), Vec::new());
                let report = replay(self.config, &self.dump, &store, &options, |b| {
                    samples.push(BatchSample::of(b, start.elapsed().as_secs_f64(), None))
                })
                .map_err(|source| BenchError::Run {
                    run: run.label(),
                    source,
                })?;
                Measured::unprobed(report, false, samples)
            }
        };
        // The pristine state was checked before the first run (`check_state_at_dump_start`); a run
        // that skipped blocks all the same measured a part of the dump as if it were the whole.
        if measured.report.skipped > 0 {
            let dump_first = self.dump.manifest().first_block.unwrap_or(0);
            return Err(BenchError::StateAhead {
                state: self.state.path().to_path_buf(),
                held: dump_first + measured.report.skipped - 1,
                dump_first,
            });
        }
        let mut result = RunResult::from_report(run, measured.cold, measured.report);
        result.io_threads = (run.mode == ExecMode::Parallel
            && matches!(
                run.design,
                IoDesign::Batched | IoDesign::Hybrid | IoDesign::FullVerify
            ))
        .then_some(self.matrix.io_threads.get());
        result.disk = measured.disk;
        result.cpu = measured.cpu;
        result.batches = measured.samples;
        Ok(result)
    }

    /// The replay options of `run`'s configuration under this bench's matrix.
    fn replay_options(&self, run: &RunConfig) -> ReplayOptions {
        ReplayOptions {
            mode: run.mode,
            threads: run.threads,
            design: run.design,
            batch: run.batch,
            io_threads: self.matrix.io_threads,
            cache: self.matrix.cache,
            profile: self.matrix.profile.recorded(),
            pin_workers: self.matrix.pin_workers.as_deref().map(Into::into),
            trust_state: self.matrix.trust_state,
            block_hashes_from_dump: false,
        }
    }

    /// Empties the page cache before a run where the matrix asks for cold runs (root only).
    fn start_cold(&self) -> Result<(), BenchError> {
        if self.matrix.drop_caches {
            drop_page_cache()?;
        }
        Ok(())
    }

    /// Independent blocks (imported fixtures): each over a state of its own, `<state>/<number>`,
    /// opened read-only under an overlay that keeps the block's commit in memory, so no state is
    /// written.
    fn run_independent(
        &self,
        run: &RunConfig,
        options: &ReplayOptions,
    ) -> Result<Measured, BenchError> {
        self.start_cold()?;
        let states = self.state.path();
        let read_only = RocksOptions {
            read_only: true,
            ..self.rocks_options.clone()
        };
        let mut samples = Vec::new();
        let start = Instant::now();
        let report = replay_independent(
            self.config,
            &self.dump,
            |number| {
                let store = RocksStore::open(states.join(number.to_string()), &read_only)?;
                Ok(MemOverlay::new(store))
            },
            options,
            |b| samples.push(BatchSample::of(b, start.elapsed().as_secs_f64(), None)),
        )
        .map_err(|source| BenchError::Run {
            run: run.label(),
            source,
        })?;
        Ok(Measured::unprobed(report, self.matrix.drop_caches, samples))
    }

    /// A replay over a fresh scratch copy of the RocksDB state, or over reth's MDBX read in
    /// place, as [`measured_replay`] makes every measured replay (`run`'s too).
    fn run_on_disk(
        &self,
        run: &RunConfig,
        options: &ReplayOptions,
        over_mdbx: bool,
    ) -> Result<Measured, BenchError> {
        let source = if over_mdbx {
            ReplaySource::Mdbx {
                dir: self.state.path(),
                first_block_hashes: &self.first_block_hashes,
            }
        } else {
            ReplaySource::Rocks {
                path: self.state.path(),
                options: &self.rocks_options,
                scratch: Some("bench-run"),
            }
        };
        let start = Instant::now();
        let mut samples = Vec::new();
        let measured = measured_replay(
            self.config,
            &self.dump,
            source,
            options,
            self.matrix.drop_caches,
            &mut |seen| {
                samples.push(BatchSample::of(
                    seen.batch,
                    start.elapsed().as_secs_f64(),
                    seen.state_bytes,
                ))
            },
        )
        .map_err(|e| match e {
            BenchError::Engine(source) => BenchError::Run {
                run: run.label(),
                source,
            },
            other => other,
        })?;
        Ok(Measured {
            report: measured.report,
            cold: self.matrix.drop_caches,
            disk: measured.disk,
            cpu: measured.cpu,
            samples,
        })
    }
}

/// The median run by throughput of one configuration's repeats, with their count and spread.
fn median_of(mut repeats: Vec<RunResult>) -> RunResult {
    let in_round_order: Vec<f64> = repeats.iter().map(|r| r.throughput.mgas_per_s).collect();
    repeats.sort_by(|a, b| a.throughput.mgas_per_s.total_cmp(&b.throughput.mgas_per_s));
    let n = repeats.len();
    let (min, max) = (
        repeats[0].throughput.mgas_per_s,
        repeats[n - 1].throughput.mgas_per_s,
    );
    let mut median = repeats.swap_remove(n / 2);
    median.throughput.repeats = n;
    median.throughput.mgas_per_s_min = min;
    median.throughput.mgas_per_s_max = max;
    median.repeat_mgas_per_s = in_round_order;
    median
}

/// Runs the matrix over `dump` from the pristine state `state` (never written), reporting each run
/// to `on_run` as it finishes ([`BenchMatrix::run_count`] runs in all).
///
/// `state` is a RocksDB flat state (each run replays over a [`ScratchState`] of it, removed after
/// the run; two benches over sibling states never share one) or reth's MDBX (each run opens it
/// read-only and replays over a fresh [`MemOverlay`], [`with_mdbx_overlay`]). Over MDBX the
/// in-memory baseline and direct reads are errors ([`BenchError::NotOverMdbx`]).
pub fn run_bench(
    config: &ChainConfig,
    dump_dir: &Path,
    state: &StateSpec,
    matrix: &BenchMatrix,
    mut on_run: impl FnMut(&RunResult),
) -> Result<BenchResult, BenchError> {
    matrix.validate()?;
    let disk_store = disk_store(state, matrix)?;
    warm_up_kzg();
    // Before any store opens, so no other thread of the process uses the CPU it counts.
    let worker_start = matrix
        .profile
        .recorded()
        .then(|| measure_worker_start(WORKER_START_WORKERS, WORKER_START_ROUNDS))
        .flatten();
    let dump = DumpReader::open(dump_dir)?;
    if !dump.manifest().chained && matrix.in_memory {
        return Err(BenchError::IndependentInMemory {
            dump: dump_dir.to_path_buf(),
        });
    }
    check_state_at_dump_start(state, &dump)?;
    if !matrix.trust_state && dump.manifest().chained {
        check_pristine_identity(state)?;
    }
    let bench = Bench {
        config,
        first_block_hashes: dump.first_block_hashes()?,
        dump,
        state,
        matrix,
        rocks_options: RocksOptions {
            direct_io: matrix.direct_io,
            block_cache_bytes: matrix.block_cache_bytes,
            pin_metadata: matrix.pin_metadata,
            // The evidence of where reads were served from (block-cache hits and misses).
            statistics: true,
            ..RocksOptions::default()
        },
        in_memory: if matrix.in_memory {
            Some(InMemoryState::load(state.path())?)
        } else {
            None
        },
    };
    let configs = matrix.schedule(disk_store);
    // Repeats go round the whole matrix, so a noisy minute on a shared machine touches every
    // configuration alike instead of all repeats of one; every other round goes backwards (ABBA),
    // so a drift over the bench does not favour the configurations scheduled first.
    let mut results: Vec<Vec<RunResult>> = vec![Vec::new(); configs.len()];
    for round in 0..matrix.repeat.get() {
        for index in abba_order(configs.len(), round) {
            let mut result = bench.run(&configs[index])?;
            on_run(&result);
            if !matrix.profile.kept(result.threads) {
                result.batch_profiles = Vec::new();
            }
            results[index].push(result);
        }
    }
    let runs: Vec<RunResult> = results.into_iter().map(median_of).collect();
    Ok(BenchResult {
        schema_version: SCHEMA_VERSION,
        build_profile: build_profile().into(),
        engine_commit: engine_commit().map(str::to_owned),
        dump: dump_dir.display().to_string(),
        blocks: bench.dump.manifest().record_count,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        bal_sizes: mean_bal_sizes(&bench.dump)?,
        rocksdb_io_uring: bal_replay_rocks::io_uring::read_path().is_io_uring(),
        independent_blocks: !bench.dump.manifest().chained,
        worker_start,
        pinned_workers: matrix.pin_workers.clone(),
        dump_identity: Some(DumpIdentity::of(dump_dir, &bench.dump)?),
        ratios_to_full: DesignRatio::of_runs(&runs, disk_store),
        read_floors: bench.read_floors()?,
        runs,
    })
}

/// The reference executor's result format ([`ReferenceThroughput`]): its schema version.
pub const REFERENCE_SCHEMA_VERSION: u32 = 2;

/// Single-thread throughput of the reference executor over independent blocks (e.g. imported
/// fixtures), each over a state seeded with its own pre-state, in memory and on RocksDB.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReferenceThroughput {
    /// [`REFERENCE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The Cargo profile of the build that ran it ([`build_profile`]).
    pub build_profile: String,
    /// Blocks executed.
    pub blocks: u64,
    /// Gas executed.
    pub gas: u64,
    /// Each block's first execution over the in-memory store, summed, seconds.
    pub memory_s: f64,
    /// Execution time over RocksDB (fresh per block, warm page cache), seconds.
    pub rocksdb_s: f64,
    /// Executions of each block over the in-memory store after its first, in the same process.
    pub warm_repeats: usize,
    /// Each block's times.
    pub per_block: Vec<ReferenceBlock>,
}

/// One block's reference executions, seconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReferenceBlock {
    /// Its number.
    pub number: u64,
    /// Its gas.
    pub gas: u64,
    /// Its first execution over the in-memory store.
    pub memory_first_s: f64,
    /// Its executions after that over the same store, in order.
    pub memory_warm_s: Vec<f64>,
    /// Of each of those, the receipts root and logs bloom it checks the header against, timed
    /// again on its receipts, in the same order: the part of `memory_warm_s` that is the block's
    /// check rather than its execution (a peer that checks no root times the rest).
    pub memory_warm_receipts_root_s: Vec<f64>,
    /// Its execution over RocksDB.
    pub rocksdb_s: f64,
}

impl VersionedResult for ReferenceThroughput {
    const KIND: &'static str = "reference executor result";
    const SCHEMA_VERSION: u32 = REFERENCE_SCHEMA_VERSION;

    /// Its times, which its rates divide by, within [`bounds`].
    fn check(&self) -> Result<(), bounds::FieldError> {
        bounds::check_reference(self)
    }
}

impl ReferenceThroughput {
    /// Mgas/s in memory, each block's first execution.
    pub fn memory_mgas_s(&self) -> f64 {
        self.gas as f64 / self.memory_s.max(1e-12) / 1e6
    }
    /// Mgas/s over RocksDB.
    pub fn rocksdb_mgas_s(&self) -> f64 {
        self.gas as f64 / self.rocksdb_s.max(1e-12) / 1e6
    }
    /// Mgas/s in memory over warm executions: each block's fastest and median summed, where
    /// there were any.
    pub fn warm_mgas_s(&self) -> Option<(f64, f64)> {
        self.warm_rate(|b| b.memory_warm_s.clone())
    }

    /// [`Self::warm_mgas_s`] less the receipts-root check: each warm execution's time less its
    /// receipts root's ([`ReferenceBlock::memory_warm_receipts_root_s`]).
    pub fn warm_less_receipts_root_mgas_s(&self) -> Option<(f64, f64)> {
        self.warm_rate(|b| {
            b.memory_warm_s
                .iter()
                .zip(&b.memory_warm_receipts_root_s)
                .map(|(all, root)| all - root)
                .collect()
        })
    }

    /// Gas over each block's fastest and median warm time (by `times`), summed, Mgas/s.
    fn warm_rate(&self, times: impl Fn(&ReferenceBlock) -> Vec<f64>) -> Option<(f64, f64)> {
        (self.warm_repeats > 0).then(|| {
            let (fastest, median) = self.per_block.iter().fold((0.0, 0.0), |(f, m), b| {
                let mut warm = times(b);
                let fastest = warm.iter().copied().fold(f64::INFINITY, f64::min);
                (f + fastest, m + interval::median_of(&mut warm))
            });
            let mgas = self.gas as f64 / 1e6;
            (mgas / fastest.max(1e-12), mgas / median.max(1e-12))
        })
    }

    /// Writes the result as JSON to `path` (in place of a file there, never half-written).
    pub fn write_json(&self, path: &Path) -> Result<(), BenchError> {
        write_result(path, self, Layout::Pretty).map_err(|source| BenchError::Io {
            path: path.into(),
            source,
        })
    }
}

/// `record` executed once by the reference executor over `store`, and the seconds it took.
fn timed_execution<S: StateReader + std::fmt::Debug>(
    config: &ChainConfig,
    store: &S,
    record: &bal_replay_dump::BlockRecord,
) -> Result<(bal_replay_executor::BlockOutput, f64), bal_replay_executor::ExecError> {
    let started = std::time::Instant::now();
    let output = bal_replay_executor::execute_block(
        config,
        bal_replay_state::StateDatabase::new(store),
        &record.block,
        &record.senders,
        bal_replay_executor::ExecOptions::default(),
    )?;
    Ok((output, started.elapsed().as_secs_f64()))
}

/// Times the reference executor (no BAL building, no recording) on every record of `dump`, each block
/// once over a `MemStore`, then `warm_repeats` more times over the same store (as a peer's
/// in-process benchmark times it), and once over a fresh RocksDB holding its pre-state (seeding
/// untimed). `scratch` is a directory for the RocksDB states.
pub fn reference_throughput(
    config: &ChainConfig,
    dump: &DumpReader,
    scratch: &Path,
    warm_repeats: usize,
) -> Result<ReferenceThroughput, BenchError> {
    warm_up_kzg();
    let mut out = ReferenceThroughput {
        schema_version: REFERENCE_SCHEMA_VERSION,
        build_profile: build_profile().into(),
        warm_repeats,
        ..ReferenceThroughput::default()
    };
    for record in dump.records() {
        let record = record?;
        let seed = StateChanges::from_pre_state(&record.pre_state, &record.block_hashes);
        let parent = record.number().saturating_sub(1);
        let exec_err = |e: bal_replay_executor::ExecError| BenchError::Run {
            run: format!("block {}", record.number()),
            source: e.into(),
        };

        let mem = MemStore::from_changes(&seed, parent);
        let (a, memory_first_s) = timed_execution(config, &mem, &record).map_err(exec_err)?;
        out.memory_s += memory_first_s;
        let mut memory_warm_s = Vec::with_capacity(warm_repeats);
        let mut memory_warm_receipts_root_s = Vec::with_capacity(warm_repeats);
        for _ in 0..warm_repeats {
            let (again, seconds) = timed_execution(config, &mem, &record).map_err(exec_err)?;
            memory_warm_s.push(seconds);
            let started = std::time::Instant::now();
            let root = bal_replay_executor::receipts_root_and_bloom(&again.receipts);
            memory_warm_receipts_root_s.push(started.elapsed().as_secs_f64());
            debug_assert_eq!(root, (again.receipts_root, again.logs_bloom));
            if again.gas_used != a.gas_used {
                return Err(BenchError::Run {
                    run: format!("block {}", record.number()),
                    source: EngineError::HeaderMismatch(bal_replay_executor::HeaderMismatch {
                        block: record.number(),
                        field: "gasUsed",
                        expected: a.gas_used.to_string(),
                        got: format!("{} (repeated in memory)", again.gas_used),
                    }),
                });
            }
        }

        let dir = scratch.join(format!("ref-{}", record.number()));
        let rocks = RocksStore::create(&dir, Default::default(), &RocksOptions::default())?;
        rocks.commit(&seed, parent)?;
        rocks.flush()?;
        let (b, rocksdb_s) = timed_execution(config, &rocks, &record).map_err(exec_err)?;
        out.rocksdb_s += rocksdb_s;
        drop(rocks);
        std::fs::remove_dir_all(&dir).map_err(|source| BenchError::Io {
            path: dir.clone(),
            source,
        })?;

        if a.gas_used != record.gas_used() || b.gas_used != record.gas_used() {
            return Err(BenchError::Run {
                run: format!("block {}", record.number()),
                source: EngineError::HeaderMismatch(bal_replay_executor::HeaderMismatch {
                    block: record.number(),
                    field: "gasUsed",
                    expected: record.gas_used().to_string(),
                    got: format!("{} (memory), {} (rocksdb)", a.gas_used, b.gas_used),
                }),
            });
        }
        out.blocks += 1;
        out.per_block.push(ReferenceBlock {
            number: record.number(),
            gas: record.gas_used(),
            memory_first_s,
            memory_warm_s,
            memory_warm_receipts_root_s,
            rocksdb_s,
        });
        // Each block's header gas equals its executed gas (checked above), so no real dump gets
        // near u64::MAX; a sum past it is an error all the same, never a panic.
        out.gas = out
            .gas
            .checked_add(record.gas_used())
            .ok_or_else(|| BenchError::Run {
                run: format!("block {}", record.number()),
                source: EngineError::GasOverflow {
                    first: dump.manifest().first_block.unwrap_or_default(),
                    last: record.number(),
                },
            })?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_matrix_is_what_bench_runs_with_no_options() {
        let m = BenchMatrix::default();
        m.validate().unwrap();
        // Per batch size: 2 sequential (RocksDB and memory), 5 designs x 2 workers, 2 in memory.
        assert_eq!(m.run_count(), 3 * (2 + 10 + 2));
        assert_eq!(m.io_threads.get(), 8);
        assert_eq!(m.block_cache_bytes, 512 << 20);
    }

    #[test]
    fn a_study_profiles_every_run_and_keeps_one_workers_profiles() {
        use TaskProfiles::*;
        assert!(!Off.recorded() && All.recorded() && OneWorkerKept.recorded());
        assert_eq!(
            [1, 2, 16].map(|t| (Off.kept(t), All.kept(t), OneWorkerKept.kept(t))),
            [
                (false, true, true),
                (false, true, false),
                (false, true, false)
            ]
        );
    }

    #[test]
    fn repeats_alternate_direction() {
        assert_eq!(abba_order(3, 0), vec![0, 1, 2]);
        assert_eq!(abba_order(3, 1), vec![2, 1, 0]);
        assert_eq!(abba_order(3, 2), vec![0, 1, 2]);
        assert!(abba_order(0, 1).is_empty());
    }

    fn n(count: usize) -> NonZeroUsize {
        NonZeroUsize::new(count).unwrap()
    }

    fn matrix() -> BenchMatrix {
        BenchMatrix {
            batches: vec![n(1), n(50)],
            designs: vec![IoDesign::Parallel],
            io_threads: n(2),
            sequential: false,
            in_memory: false,
            block_cache_bytes: 1 << 20,
            ..BenchMatrix::default()
        }
    }

    /// A zero count cannot be written (`NonZeroUsize`); an empty dimension is refused.
    #[test]
    fn a_matrix_with_an_empty_dimension_is_refused() {
        let good = matrix();
        good.validate().unwrap();
        let cases = [
            (
                BenchMatrix {
                    threads: vec![],
                    ..good.clone()
                },
                "the bench matrix needs at least one worker count",
            ),
            (
                BenchMatrix {
                    batches: vec![],
                    ..good.clone()
                },
                "the bench matrix needs at least one batch size",
            ),
            (
                BenchMatrix {
                    designs: vec![],
                    ..good.clone()
                },
                "the bench matrix needs at least one I/O design",
            ),
        ];
        for (matrix, message) in cases {
            assert_eq!(matrix.validate().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn the_schedule_is_in_table_order_and_counts_the_repeats() {
        let m = BenchMatrix {
            designs: vec![IoDesign::Full, IoDesign::Hybrid],
            sequential: true,
            in_memory: true,
            repeat: n(3),
            ..matrix()
        };
        let schedule = m.schedule(StoreKind::Rocksdb);
        // Per batch size: 2 sequential, 2 designs x 2 worker counts, 2 in memory.
        assert_eq!(schedule.len(), 2 * (2 + 4 + 2));
        assert_eq!(m.run_count(), 3 * 16);
        let first: Vec<_> = schedule[..8]
            .iter()
            .map(|r| (r.mode, r.design, r.threads.get(), r.batch.get(), r.store))
            .collect();
        let (seq, par) = (ExecMode::Sequential, ExecMode::Parallel);
        let (rocks, mem) = (StoreKind::Rocksdb, StoreKind::Memory);
        assert_eq!(
            first,
            [
                (seq, IoDesign::Parallel, 1, 1, rocks),
                (seq, IoDesign::Parallel, 1, 1, mem),
                (par, IoDesign::Full, 1, 1, rocks),
                (par, IoDesign::Full, 2, 1, rocks),
                (par, IoDesign::Hybrid, 1, 1, rocks),
                (par, IoDesign::Hybrid, 2, 1, rocks),
                (par, IoDesign::Parallel, 1, 1, mem),
                (par, IoDesign::Parallel, 2, 1, mem),
            ]
        );
    }

    /// A run with every group filled, as a bench over RocksDB with direct reads records it.
    fn grouped_run() -> RunResult {
        RunResult {
            mode: ExecMode::Parallel,
            design: IoDesign::Hybrid,
            threads: 4,
            batch: 50,
            store: StoreKind::Rocksdb,
            cold: true,
            io_threads: Some(2),
            blocks: 200,
            txs: 31_000,
            gas: 3_000_000_000,
            throughput: Throughput {
                mgas_per_s: 750.0,
                end_to_end_mgas_per_s: 600.0,
                repeats: 3,
                mgas_per_s_min: 700.0,
                mgas_per_s_max: 790.0,
            },
            repeat_mgas_per_s: Vec::new(),
            timing: RunTiming {
                exec_with_io_s: 4.0,
                prefetch_s: 0.5,
                longest_txs_s: 1.5,
                commit_s: 0.75,
                wall_s: 5.0,
                read_dump_s: Some(0.25),
            },
            cache: CacheCounts {
                hits: 900,
                misses: 100,
                keys_prefetched: 4_000,
            },
            latency: Latency {
                read_p50_us: 90,
                read_p99_us: 400,
                tx_p50_us: 120,
                tx_p99_us: 2_000,
            },
            disk: DiskEvidence::new(
                bal_replay_probe::device::IoDelta {
                    device_reads: Some(1_700),
                    device_read_bytes: Some(9_500 * 4096),
                    ..Default::default()
                },
                0,
                Some(bal_replay_rocks::RocksReadCounters {
                    keys_read: 10_000,
                    keys_found_in_files: 10_000,
                    block_cache_hits: 500,
                    block_cache_misses: 9_500,
                    block_cache_data_misses: 9_500,
                    read_micros: 60_000,
                    file_read_micros: 25_000,
                }),
                true,
            ),
            cpu: Some(CpuUse {
                wall_s: 5.0,
                process_s: 12.0,
                other_s: 1.0,
                steal_s: 0.0,
                user_s: Some(11.0),
                system_s: Some(1.0),
                sleeps: Some(3_000),
                preemptions: Some(400),
                worker_s: Some(9.5),
            }),
            batches: vec![BatchSample {
                first_block: 1,
                last_block: 50,
                gas: 750_000_000,
                exec_with_io_s: 1.0,
                prefetch_s: 0.125,
                end_s: 1.25,
                rss_bytes: Some(1 << 30),
                state_bytes: None,
            }],
            // A task profile, so the model's input is pinned by the golden file too.
            batch_profiles: vec![batch_profile()],
        }
    }

    /// One parallel batch's profile with one task and a concurrent prefetch.
    fn batch_profile() -> BatchProfile {
        BatchProfile {
            first_block: 1,
            last_block: 50,
            tasks: vec![bal_replay_engine::TaskProfile {
                block: 1,
                index: 0,
                worker: 1,
                start_ns: 1_000,
                wall_ns: 50_000,
                cpu_ns: 45_000,
                reads: 12,
                read_wait_ns: 20_000,
                gas: 100_000,
                raced: 1,
                prefetch_hits: 3,
            }],
            prefetch: Some(bal_replay_engine::PrefetchProfile {
                keys: 400,
                readers: 4,
                wall_ns: 900_000,
                cpu_ns: 1_200_000,
                concurrent: true,
            }),
            exec_ns: 2_000_000,
            commit_ns: 300_000,
            worker_run_delay_ns: Some(10_000),
            process_cpu_ns: Some(3_000_000),
        }
    }

    fn bench_result(runs: Vec<RunResult>) -> BenchResult {
        BenchResult {
            schema_version: SCHEMA_VERSION,
            build_profile: "dev".into(),
            engine_commit: Some("0123456789ab".into()),
            dump: "dump".into(),
            blocks: 200,
            cpus: 2,
            bal_sizes: MeanBalSizes::default(),
            rocksdb_io_uring: false,
            independent_blocks: false,
            worker_start: None,
            pinned_workers: None,
            dump_identity: None,
            ratios_to_full: Vec::new(),
            read_floors: vec![ReadFloor {
                batch: 50,
                blocks: 200,
                point: FloorReads {
                    keys: 10_000,
                    cpu_s: 0.03,
                    system_s: 0.005,
                    wall_s: 0.5,
                    sleeps: 1_700,
                    rocksdb_read_s: 0.45,
                    rocksdb_file_read_s: 0.43,
                    device_reads: Some(1_500),
                },
                multiget: FloorReads {
                    keys: 10_000,
                    cpu_s: 0.02,
                    system_s: 0.002,
                    wall_s: 0.05,
                    sleeps: 40,
                    rocksdb_read_s: 0.04,
                    rocksdb_file_read_s: 0.025,
                    device_reads: Some(300),
                },
            }],
            runs,
        }
    }

    /// A parallel run of `design` at 4 threads, batch 50, `repeats` times: `mgas` its median,
    /// `spread` each side.
    fn repeated_run(design: IoDesign, mgas: f64, spread: f64, repeats: usize) -> RunResult {
        let mut run = grouped_run();
        run.design = design;
        run.throughput.mgas_per_s = mgas;
        run.throughput.mgas_per_s_min = mgas - spread;
        run.throughput.mgas_per_s_max = mgas + spread;
        run.throughput.repeats = repeats;
        run
    }

    #[test]
    fn ratios_of_repeated_runs_carry_their_range_and_of_single_runs_none() {
        let runs = |repeats, spread: [f64; 3]| {
            vec![
                repeated_run(IoDesign::Full, 1000.0, spread[0], repeats),
                repeated_run(IoDesign::Parallel, 590.0, spread[1], repeats),
                repeated_run(IoDesign::Hybrid, 995.0, spread[2], repeats),
            ]
        };
        // Parallel I/O from 580 / 1010 to 600 / 990; hybrid from 985 / 1010 to 1005 / 990, which
        // holds 1.0.
        let repeated = render_tables(&bench_result(runs(3, [10.0; 3])));
        for text in [
            "| 50 | 4 | 1000.0 | 590.0 (0.59, 0.57-0.61) | 995.0 (0.99, 0.98-1.02, within noise) |",
            "- batch 50, 4 threads: parallel / full = 0.59 (0.57-0.61)\n",
            "- batch 50, 4 threads: hybrid / full = 0.99 (0.98-1.02, within noise)\n",
        ] {
            assert!(repeated.contains(text), "{text:?} not in\n{repeated}");
        }
        let ratios = DesignRatio::of_runs(&runs(3, [10.0; 3]), StoreKind::Rocksdb);
        assert_eq!(ratios.len(), 2);
        assert_eq!(
            (ratios[0].design, ratios[0].batch, ratios[0].threads),
            (IoDesign::Parallel, 50, 4)
        );
        assert_eq!(
            (ratios[0].ratio.low, ratios[0].ratio.high),
            (580.0 / 1010.0, 600.0 / 990.0)
        );
        assert!(!ratios[0].within_noise && ratios[1].within_noise);
        // Runs made once print their ratios as before, without a range.
        let single = render_tables(&bench_result(runs(1, [0.0; 3])));
        for text in [
            "| 50 | 4 | 1000.0 | 590.0 (0.59) | 995.0 (0.99) |",
            "- batch 50, 4 threads: parallel / full = 0.59\n",
            "- batch 50, 4 threads: hybrid / full = 0.99\n",
        ] {
            assert!(single.contains(text), "{text:?} not in\n{single}");
        }
    }

    #[test]
    fn a_grouped_run_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        // Without task profiles, which make the file one line.
        let mut run = grouped_run();
        run.batch_profiles.clear();
        let written = bench_result(vec![run]);
        written.write_json(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // The version first, then each group as an object of its own.
        assert!(
            text.starts_with(&format!(
                "{{\n  \"schema_version\": {SCHEMA_VERSION},\n  \"build_profile\": \"dev\",\n"
            )),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let run = &json["runs"][0];
        assert_eq!(run["throughput"]["mgas_per_s"], 750.0);
        assert_eq!(run["timing"]["prefetch_s"], 0.5);
        assert_eq!(run["cache"]["keys_prefetched"], 4_000);
        assert_eq!(run["latency"]["tx_p99_us"], 2_000);
        assert_eq!(run["disk"]["residency"]["basis"], "data-blocks");
        assert_eq!(run["disk"]["residency"]["disk_resident"], true);
        assert_eq!(run["cpu"]["process_s"], 12.0);
        assert!(run.get("mgas_per_s").is_none() && run.get("device_reads").is_none());
        assert_eq!(BenchResult::read_json(&path).unwrap(), written);
    }

    #[test]
    fn the_reference_throughput_format_is_its_golden_file() {
        let golden =
            bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        let sample = ReferenceThroughput {
            schema_version: REFERENCE_SCHEMA_VERSION,
            build_profile: "measure".into(),
            blocks: 1,
            gas: 21_000,
            memory_s: 0.5,
            rocksdb_s: 0.75,
            warm_repeats: 2,
            per_block: vec![ReferenceBlock {
                number: 46_147,
                gas: 21_000,
                memory_first_s: 0.5,
                memory_warm_s: vec![0.25, 0.125],
                memory_warm_receipts_root_s: vec![0.0625, 0.03125],
                rocksdb_s: 0.75,
            }],
        };
        bal_replay_results::assert_golden(&golden, &sample);
        // Less the check: 21,000 gas over (0.25 - 0.0625) s and (0.125 - 0.03125) s.
        let (fastest, median) = sample.warm_less_receipts_root_mgas_s().unwrap();
        assert_eq!(fastest, 0.021 / 0.09375);
        assert_eq!(median, 0.021 / ((0.1875 + 0.09375) / 2.0));
    }

    /// The build names the commit it was made from: HEAD's, as git gives it now.
    #[test]
    fn the_build_records_its_engine_commit() {
        let head = std::process::Command::new("git")
            .args(["-c", "safe.directory=*", "rev-parse", "--short=12", "HEAD"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(head.status.success(), "git rev-parse failed");
        let head = String::from_utf8(head.stdout).unwrap();
        let commit = engine_commit().expect("built inside a git checkout");
        assert_eq!(commit.trim_end_matches("-dirty"), head.trim());
    }

    #[test]
    fn the_bench_result_format_is_its_golden_file() {
        let golden =
            bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        bal_replay_results::assert_golden(&golden, &bench_result(vec![grouped_run()]));
    }

    /// Version 4 only added optional fields: a version 3 file is read whole, without the read
    /// cost account or the floors; version 2 is refused, naming both.
    #[test]
    fn a_version_3_bench_result_is_read_without_the_account() {
        let golden =
            bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        let v3 = golden.join("bench-result-v3.json");
        let read: BenchResult = bal_replay_results::read_result(&v3).unwrap();
        assert_eq!(read.schema_version, 3);
        assert!(read.read_floors.is_empty());
        assert_eq!(read.runs[0].cpu.unwrap().system_s, None);
        assert_eq!(read.runs[0].disk.rocksdb_read_s, None);
        let text = std::fs::read_to_string(&v3).unwrap().replacen(
            "\"schema_version\": 3",
            "\"schema_version\": 2",
            1,
        );
        let err = parse_result::<BenchResult>(Path::new("b.json"), text.as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("version 2")
                && err.to_string().contains("versions 3, 4, 5, 6 and 7"),
            "{err}"
        );
    }

    /// The golden bench result with `edit` applied to its JSON, read back: the error's text.
    fn golden_bench_edited(edit: impl FnOnce(&mut serde_json::Value)) -> Result<(), String> {
        let mut json = serde_json::to_value(bench_result(vec![grouped_run()])).unwrap();
        edit(&mut json);
        parse_result::<BenchResult>(Path::new("b.json"), &serde_json::to_vec(&json).unwrap())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Numbers only a crafted file holds (a throughput of 1.7e308 kept the report's chart
    /// spinning; one of 0 is a run that replayed nothing) are refused at load, naming the field.
    #[test]
    fn a_bench_result_with_numbers_no_run_records_is_refused_naming_the_field() {
        golden_bench_edited(|_| {}).unwrap();
        let mgas = "a number from 1e-6 to 1e7 (Mgas/s of a run that replayed gas)";
        for (value, written) in [(1.7e308, "1.7e308"), (0.0, "0"), (-1.0, "-1")] {
            let err =
                golden_bench_edited(|j| j["runs"][0]["throughput"]["mgas_per_s"] = value.into())
                    .unwrap_err();
            assert_eq!(
                err,
                format!("b.json: runs[0].throughput.mgas_per_s = {written}: expected {mgas}")
            );
        }
        let err =
            golden_bench_edited(|j| j["runs"][0]["timing"]["wall_s"] = 0.0.into()).unwrap_err();
        assert_eq!(
            err,
            "b.json: runs[0].timing.wall_s = 0: expected a number from 1e-9 to 1e7 (seconds of a run that took time)"
        );
        let err = golden_bench_edited(|j| j["runs"][0]["timing"]["exec_with_io_s"] = 5e-324.into())
            .unwrap_err();
        assert!(
            err.starts_with("b.json: runs[0].timing.exec_with_io_s = 5e-324: expected"),
            "{err}"
        );
        let err = golden_bench_edited(|j| j["runs"][0]["latency"]["tx_p99_us"] = u64::MAX.into())
            .unwrap_err();
        assert_eq!(
            err,
            format!(
                "b.json: runs[0].latency.tx_p99_us = {}: expected at most 9007199254740992 (2^53)",
                u64::MAX
            )
        );
        let err =
            golden_bench_edited(|j| j["runs"][0]["cpu"]["worker_s"] = 1e300.into()).unwrap_err();
        assert!(
            err.starts_with("b.json: runs[0].cpu.worker_s = 1e300: expected"),
            "{err}"
        );
        let err = golden_bench_edited(|j| j["bal_sizes"]["full"] = 1e300.into()).unwrap_err();
        assert!(
            err.starts_with("b.json: bal_sizes.full = 1e300: expected"),
            "{err}"
        );
        let err =
            golden_bench_edited(|j| j["runs"][0]["batches"][0]["exec_with_io_s"] = 5e-324.into())
                .unwrap_err();
        assert!(
            err.starts_with("b.json: runs[0].batches[0].exec_with_io_s = 5e-324: expected"),
            "{err}"
        );
    }

    #[test]
    fn a_reference_result_with_no_time_is_refused() {
        let sample = ReferenceThroughput {
            schema_version: REFERENCE_SCHEMA_VERSION,
            memory_s: 0.0,
            rocksdb_s: 0.5,
            ..ReferenceThroughput::default()
        };
        let err = parse_result::<ReferenceThroughput>(
            Path::new("r.json"),
            &serde_json::to_vec(&sample).unwrap(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.json: memory_s = 0: expected a number from 1e-9 to 1e7 (seconds of a run that took time)"
        );
    }

    #[test]
    fn a_bench_result_of_another_schema_version_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let mut json = serde_json::to_value(bench_result(vec![grouped_run()])).unwrap();
        // Version 1: written before results carried a version (and before runs were grouped).
        json.as_object_mut().unwrap().remove("schema_version");
        let v1 = dir.path().join("v1.json");
        std::fs::write(&v1, serde_json::to_vec(&json).unwrap()).unwrap();
        assert_eq!(
            BenchResult::read_json(&v1).unwrap_err().to_string(),
            format!(
                "{}: written with bench result schema version 1, this build reads versions 3, 4, 5, 6 and 7",
                v1.display()
            )
        );
        json["schema_version"] = 99.into();
        let v99 = dir.path().join("v99.json");
        std::fs::write(&v99, serde_json::to_vec(&json).unwrap()).unwrap();
        assert_eq!(
            BenchResult::read_json(&v99).unwrap_err().to_string(),
            format!(
                "{}: written with bench result schema version 99, this build reads versions 3, 4, 5, 6 and 7",
                v99.display()
            )
        );
        // Not JSON at all names the file and what it should hold.
        let garbage = dir.path().join("garbage.json");
        std::fs::write(&garbage, b"not json").unwrap();
        assert_eq!(
            BenchResult::read_json(&garbage).unwrap_err().to_string(),
            format!("{}: not a JSON bench result", garbage.display())
        );
    }

    #[test]
    fn store_kinds_keep_their_json_names() {
        // "rocksdb" and "memory" are what JSON written before MDBX runs holds.
        for (kind, json) in [
            (StoreKind::Rocksdb, "\"rocksdb\""),
            (StoreKind::Memory, "\"memory\""),
            (StoreKind::Mdbx, "\"mdbx\""),
        ] {
            assert_eq!(serde_json::to_string(&kind).unwrap(), json);
            assert_eq!(serde_json::from_str::<StoreKind>(json).unwrap(), kind);
            assert_eq!(format!("\"{kind}\""), json);
        }
        assert!(serde_json::from_str::<StoreKind>("\"MDBX\"").is_err());
        assert_eq!(
            (
                StoreKind::Mdbx.backend_name(),
                StoreKind::Mdbx.is_disk(),
                StoreKind::Memory.is_disk()
            ),
            ("MDBX", true, false)
        );
    }
}
