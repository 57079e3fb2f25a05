//! The numbers of the findings page, computed from one bench's results: a pure function of its
//! JSON (and the sizes, the disk's curve and the chain's shape), so a test can recompute every
//! figure the page shows from the file it came from.

pub use crate::names::{design_name, research_parallel_share};
use crate::{
    ChainShape, DesignSizes, MeanSize,
    projected::{PROJECTED_WORKERS, Projected, ProjectionCheck, project_onto_research_machine},
    read_cost::{FloorRows, ReadCost, ReadCostPoint, read_cost_points},
    runs::{best, measured},
    sweep::{RegimeSweep, SweepRow, sweep_summary},
};
use bal_replay_bench::{BenchResult, Interval, RunResult};
use bal_replay_engine::IoDesign;
use bal_replay_model::DiskModel;
use bal_replay_probe::{Residency, ResidencyBasis};
use bal_replay_report::{research::ROCKSDB_IOPS_T16, thousands};

/// One design's row of the headline table, at the study's largest batch.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeadlineRow {
    /// The design.
    pub design: IoDesign,
    /// Its BAL's mean size per block.
    pub size: MeanSize,
    /// That size over full BAL's (RLP).
    pub size_share_of_full: f64,
    /// The thread count at which it ran fastest.
    pub threads: usize,
    /// Blocks per batch.
    pub batch: usize,
    /// Its throughput there, Mgas/s (the median of its repeats).
    pub mgas_per_s: f64,
    /// The same run end to end as a client pays it (planning, reads, execution, verification,
    /// commit; reading the dump left out where the runs timed it), Mgas/s.
    pub end_to_end_mgas_per_s: f64,
    /// That over full BAL's end to end.
    pub end_to_end_share_of_full: f64,
    /// Both runs timed their reading of the dump, so end to end leaves it out
    /// ([`bal_replay_bench::RunTiming::client_s`]); runs written before they timed it count it.
    pub end_to_end_less_dump: bool,
    /// Its throughput over full BAL's at full BAL's best thread count, with the repeats' range.
    pub share_of_full: Interval,
    /// Its throughput over the verified full BAL's (what a validating node runs) at that one's
    /// best thread count; `None` where it did not run.
    pub share_of_verified: Option<Interval>,
    /// Its throughput over the disk's bound (its gas per device read at the disk's best IOPS);
    /// `None` without a disk curve or a device read.
    pub share_of_disk_bound: Option<f64>,
    /// Device read requests per key read.
    pub device_reads_per_key: Option<f64>,
    /// Where its reads were served from.
    pub residency: Residency,
}

/// What carries from this machine to another, per design: counts and CPU per Mgas, measured on
/// its one-worker run at the headline batch (no worker waits for a core), and its BAL's bytes per
/// Mgas.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CarryRow {
    /// The design.
    pub design: IoDesign,
    /// Workers of the run measured (1 where the study ran one).
    pub threads: usize,
    /// Keys read from the state per Mgas (a key's first read in its batch).
    pub key_reads_per_mgas: f64,
    /// Device read requests per Mgas; `None` without a device counter.
    pub device_reads_per_mgas: Option<f64>,
    /// This process's CPU time per Mgas over the whole replay, ms; `None` where `/proc` did not
    /// tell.
    pub cpu_ms_per_mgas: Option<f64>,
    /// Of that, what reading the state cost: its CPU per Mgas less full BAL's (which reads no
    /// state), ms.
    pub read_cpu_ms_per_mgas: Option<f64>,
    /// The reads' CPU per device read, µs.
    pub cpu_us_per_device_read: Option<f64>,
    /// Its BAL's bytes per Mgas, RLP and snappy.
    pub bal_bytes_per_mgas: MeanSize,
    /// Its reads' CPU per key read, split by where it went; `None` for full BAL, and for runs
    /// recorded before the split was.
    #[serde(default)]
    pub read_cost: Option<ReadCost>,
    /// The workers' own CPU per Mgas while they executed, ms: execution and its on-demand reads,
    /// without planning, prefetch, commits or reading the dump; `None` for runs recorded before it
    /// was.
    #[serde(default)]
    pub worker_cpu_ms_per_mgas: Option<f64>,
}

/// One row of a thread-scaling table.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScalingRow {
    /// Workers.
    pub threads: usize,
    /// Mgas/s.
    pub mgas_per_s: f64,
    /// The sum of each batch's longest transaction, s.
    pub longest_txs_s: f64,
    /// Execution with I/O, s.
    pub total_s: f64,
}

/// Latency per batch of a design (per block at batch 1), ms.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockLatency {
    /// The design.
    pub design: IoDesign,
    /// Workers.
    pub threads: usize,
    /// Blocks per batch.
    pub batch: usize,
    /// Batches measured.
    pub blocks: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile, where there are at least [`MIN_P99_SAMPLES`] batches (with fewer, the
    /// nearest rank is the slowest batch, so the page gives the max only).
    pub p99_ms: Option<f64>,
    /// Slowest batch.
    pub max_ms: f64,
}

/// Batches a 99th percentile needs before it says more than the slowest one.
pub const MIN_P99_SAMPLES: usize = 100;

/// Where a design's time went, s.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimeBreakdown {
    /// The design.
    pub design: IoDesign,
    /// Workers.
    pub threads: usize,
    /// The prefetch before execution.
    pub prefetch_s: f64,
    /// Execution, with the reads it waited on.
    pub execution_s: f64,
    /// Of execution, each batch's longest transaction (the critical path).
    pub longest_txs_s: f64,
    /// Commits.
    pub commit_s: f64,
    /// The rest of the wall time: planning, and reading the dump where the run did not time it
    /// apart.
    pub other_s: f64,
    /// Reading the dump, this tool's input (a client receives its blocks from the network),
    /// where the run timed it.
    pub read_dump_s: Option<f64>,
}

/// One point of the frontier chart: a design at one batch size.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrontierPoint {
    /// The design.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Its BAL's size over full BAL's.
    pub size_share: f64,
    /// Its throughput over full BAL's at the same batch (each at its best thread count).
    pub throughput_share: Interval,
}

/// Everything the findings page shows, computed from one bench.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Findings {
    /// The batch the headline is taken at (the study's largest).
    pub headline_batch: usize,
    /// One row per design measured.
    pub headline: Vec<HeadlineRow>,
    /// Parallel I/O by thread count at batch 1.
    pub scaling_batch_1: Vec<ScalingRow>,
    /// Parallel I/O by thread count at the headline batch.
    pub scaling_headline_batch: Vec<ScalingRow>,
    /// Per-block latency at batch 1, per design.
    pub latency: Vec<BlockLatency>,
    /// Per-batch latency at the headline batch, per design (empty where that is batch 1).
    pub batch_latency: Vec<BlockLatency>,
    /// Where the time went, per design at the headline batch.
    pub breakdown: Vec<TimeBreakdown>,
    /// BAL size against throughput, per design and batch.
    pub frontier: Vec<FrontierPoint>,
    /// Device reads per Mgas of parallel I/O at the headline batch (its cold reads).
    pub parallel_device_reads_per_mgas: Option<f64>,
    /// Where the reading runs' state was served from, as their counters measured it.
    pub regime: Regime,
    /// The share of the machine's CPU that other processes (and interrupts, and the hypervisor)
    /// took over the runs measured, where the counters tell: a shared machine's noise.
    pub others_cpu_share: Option<f64>,
    /// Whether every design's worker count was chosen on a repeat the page does not report
    /// ([`crate::runs::best`]).
    pub threads_chosen_held_out: bool,
    /// Whether every reading run read through the page cache, emptied before it: the research's
    /// regime (as `bench --drop-caches` without direct reads runs it), which the answer names.
    pub page_cache_emptied: bool,
    /// The model's projection onto the research's machine at the headline batch, or why it was
    /// left out: the model's figures, not measurements.
    pub projected: Projected,
    /// The projection against the research's own measurements on its machine, where it could be
    /// set beside them: the projection enters the answer only within [`MAX_PROJECTION_ERROR`].
    pub projection_check: ProjectionCheck,
    /// What carries across machines, per design.
    pub carry: Vec<CarryRow>,
    /// The floor of a key read at the headline batch, where the bench measured one.
    #[serde(default)]
    pub read_floor: Option<FloorRows>,
    /// Every reading run at the headline batch (and at the sweep's batch, each regime's), its
    /// reads' CPU per key read against the share of full BAL's throughput it kept.
    #[serde(default)]
    pub read_cost_points: Vec<ReadCostPoint>,
    /// Parallel I/O's throughput over batched I/O's at the headline batch (each at its best
    /// thread count), with the range its repeats allow: what dropping the read keys costs.
    pub parallel_over_batched: Option<Interval>,
    /// Each design against full BAL at each regime of the sweep, where the study swept.
    pub sweep: Vec<SweepRow>,
    /// Why parallel I/O keeps less here than in the research, where the CPU counters tell.
    pub research_gap: Option<ResearchGap>,
    /// Another machine's runs of a chain of the same shape, drawn beside this frontier.
    pub beside: Option<BesideFrontier>,
}

/// Another machine's runs (`study --beside`), its frontier at its largest batch: each design's
/// share of full BAL's throughput there, against its own chain's BAL sizes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BesideFrontier {
    /// That machine's logical CPUs.
    pub cores: usize,
    /// Blocks of its chain.
    pub blocks: u64,
    /// Its points.
    pub points: Vec<FrontierPoint>,
}

/// Why parallel I/O keeps less of full BAL's throughput here than in the research, in CPU per
/// Mgas: what its reads cost here beside execution, and the most the research's own figures leave
/// its reads.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ResearchGap {
    /// Execution's CPU per Mgas here (full BAL's one-worker run), ms.
    pub execution_ms: f64,
    /// Parallel I/O's reads' CPU per Mgas here (its one-worker run less full BAL's), ms.
    pub reads_ms: f64,
    /// Whether both are the workers' own CPU while they executed (planning, the dump's reading
    /// and commits apart); else the whole process's over the replay (runs recorded before the
    /// workers' CPU was).
    #[serde(default)]
    pub from_workers: bool,
    /// The share of full BAL's throughput that CPU alone leaves parallel I/O on the same cores:
    /// execution over execution and reads.
    pub cpu_bound_share: f64,
    /// The most time per Mgas the research's parallel I/O can have spent on one thread (batch
    /// 50) on execution, reads and waiting together: one thread over its throughput, ms. A bound.
    pub research_one_thread_ms: f64,
    /// The most CPU per Mgas the research's full BAL can have used: 16 threads over its
    /// throughput, ms. An estimate, not a bound: it holds only where all 16 threads were busy.
    pub research_full_ms: f64,
    /// The same for its parallel I/O, ms.
    pub research_parallel_ms: f64,
    /// What the disk allows parallel I/O at the depth its workers keep, where the disk was
    /// measured.
    pub disk_limit: Option<DiskLimit>,
}

/// The disk's limit on parallel I/O: its workers each wait on one read at a time, so no more
/// reads are in flight than workers, and the disk serves them at its rate for that depth.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiskLimit {
    /// Parallel I/O's workers at the headline batch.
    pub workers: usize,
    /// The disk's random reads per second with that many in flight (its table, interpolated).
    pub iops: f64,
    /// Parallel I/O's device reads per Mgas at the headline batch.
    pub device_reads_per_mgas: f64,
    /// The throughput that rate allows: IOPS over device reads per Mgas, Mgas/s.
    pub mgas_per_s: f64,
    /// That throughput over full BAL's at the headline batch.
    pub share_of_full: f64,
}

impl DiskLimit {
    fn of(
        headline: &[HeadlineRow],
        device_reads_per_mgas: Option<f64>,
        disk: Option<&DiskModel>,
    ) -> Option<Self> {
        let full = headline.iter().find(|r| r.design == IoDesign::Full)?;
        let parallel = headline.iter().find(|r| r.design == IoDesign::Parallel)?;
        let reads = device_reads_per_mgas.filter(|r| *r > 0.0)?;
        let iops = disk?.iops_at(parallel.threads as f64);
        let mgas_per_s = iops / reads;
        Some(Self {
            workers: parallel.threads,
            iops,
            device_reads_per_mgas: reads,
            mgas_per_s,
            share_of_full: mgas_per_s / full.mgas_per_s.max(f64::MIN_POSITIVE),
        })
    }
}

impl ResearchGap {
    fn of(carry: &[CarryRow], disk_limit: Option<DiskLimit>) -> Option<Self> {
        let full = carry.iter().find(|r| r.design == IoDesign::Full)?;
        let parallel = carry.iter().find(|r| r.design == IoDesign::Parallel)?;
        // The workers' own CPU where both runs recorded it: what execution and its reads cost,
        // without this tool's planning, dump reading and commits.
        let (execution_ms, reads_ms, from_workers) =
            match (full.worker_cpu_ms_per_mgas, parallel.worker_cpu_ms_per_mgas) {
                (Some(full), Some(parallel)) => (full, (parallel - full).max(0.0), true),
                _ => (full.cpu_ms_per_mgas?, parallel.read_cpu_ms_per_mgas?, false),
            };
        let threads = 16.0;
        Some(Self {
            execution_ms,
            reads_ms,
            from_workers,
            cpu_bound_share: execution_ms / (execution_ms + reads_ms).max(f64::MIN_POSITIVE),
            research_one_thread_ms: 1e3
                / bal_replay_report::research::PARALLEL_BATCH_50[0].mgas_per_s,
            research_full_ms: threads * 1e3 / bal_replay_report::research::FULL_BATCH_50_T16,
            research_parallel_ms: threads * 1e3
                / bal_replay_report::research::PARALLEL_BATCH_50[4].mgas_per_s,
            disk_limit,
        })
    }

    /// The disk's limit where it is tighter than the CPU's: then the disk at the workers' depth,
    /// not the reads' CPU, is what holds parallel I/O here.
    pub fn disk_binds(&self) -> Option<&DiskLimit> {
        self.disk_limit
            .as_ref()
            .filter(|d| d.share_of_full < self.cpu_bound_share)
    }

    /// Whether the two limits are within [`LIMITS_ALIKE`] of each other: then neither alone
    /// names what holds parallel I/O here.
    pub fn limits_alike(&self) -> bool {
        self.disk_limit.is_some_and(|d| {
            let (disk, cpu) = (d.share_of_full, self.cpu_bound_share);
            disk.max(cpu) <= LIMITS_ALIKE * disk.min(cpu)
        })
    }

    /// The answer's sentence on what parts this machine from the research.
    pub fn answer_clause(&self) -> String {
        if let (true, Some(disk)) = (self.limits_alike(), self.disk_limit) {
            return format!(
                "what parts this machine from it is the CPU and the disk alike: parallel I/O's execution and reads take {:.2} ms of CPU per Mgas here against at most {:.2} in the research's one-thread run, and {} random reads/s with {} in flight here against {} through the research's RocksDB at 16 threads, at {:.1} device reads per Mgas",
                self.parallel_ms(),
                self.research_one_thread_ms,
                thousands(disk.iops),
                disk.workers,
                thousands(ROCKSDB_IOPS_T16),
                disk.device_reads_per_mgas,
            );
        }
        match self.disk_binds() {
            Some(disk) => format!(
                "what parts this machine from it is the disk at the depth the workers keep: {} random reads/s with {} in flight here, against {} through the research's RocksDB at 16 threads, at {:.1} device reads per Mgas",
                thousands(disk.iops),
                disk.workers,
                thousands(ROCKSDB_IOPS_T16),
                disk.device_reads_per_mgas,
            ),
            None if self.cpu_parts() => format!(
                "what parts this machine from it is the CPU per Mgas: parallel I/O's execution and reads take {:.2} ms here (its reads {:.2}), against at most {:.2} for execution, reads and waiting in the research's one-thread run",
                self.parallel_ms(),
                self.reads_ms,
                self.research_one_thread_ms
            ),
            None => format!(
                "neither the CPU nor the disk parts this machine from it: parallel I/O's execution and reads take {:.2} ms of CPU per Mgas here, within the {:.2} the research's one-thread run allows",
                self.parallel_ms(),
                self.research_one_thread_ms
            ),
        }
    }

    /// What the CPU figures measure, as the sentences say it.
    fn cpu_basis(&self) -> &'static str {
        if self.from_workers {
            "each the workers' own CPU while they executed, in the design's one-worker run or its fastest where it has none: planning, the dump's reading and the commit apart"
        } else {
            "each the whole process's CPU over the design's one-worker run, or its fastest where it has none: planning, the dump's reading and the commit included"
        }
    }

    /// The research's parallel I/O reads' CPU per Mgas, ms, estimated from its 16-thread
    /// figures: what its parallel I/O can have spent beyond its full BAL were all 16 threads busy
    /// in both (its parallel I/O's scaling says they were not, so this is no bound).
    pub fn research_reads_ms(&self) -> f64 {
        self.research_parallel_ms - self.research_full_ms
    }

    /// Parallel I/O's execution and reads here, CPU per Mgas, ms: what the research's one-thread
    /// run bounds on its side.
    pub fn parallel_ms(&self) -> f64 {
        self.execution_ms + self.reads_ms
    }

    /// Whether parallel I/O takes more CPU per Mgas here than the research's one-thread run
    /// allowed its own (execution, reads and waiting together): only then does the CPU part
    /// this machine from the research.
    pub fn cpu_parts(&self) -> bool {
        self.parallel_ms() > self.research_one_thread_ms
    }

    /// The research's side, a bound and an estimate, as a sentence.
    fn research_side(&self) -> String {
        let one = bal_replay_report::research::PARALLEL_BATCH_50[0].mgas_per_s;
        let sixteen = bal_replay_report::research::PARALLEL_BATCH_50[4].mgas_per_s;
        format!(
            "The research's one-thread run is a bound on its side: its parallel I/O ran at {one:.0} Mgas/s on one thread (batch 50), so it spent at most {:.2} ms per Mgas on execution, reads and waiting together; here execution and reads take {:.2} ms of CPU, {:.1} times that. Its 16-thread figures give only an estimate (full BAL at {:.0} and parallel I/O at {sixteen:.0} Mgas/s leave its reads at most {:.2} ms per Mgas were all 16 threads busy, which its parallel I/O's {:.1}x on 16 threads says they were not).",
            self.research_one_thread_ms,
            self.parallel_ms(),
            self.parallel_ms() / self.research_one_thread_ms,
            bal_replay_report::research::FULL_BATCH_50_T16,
            self.research_reads_ms(),
            sixteen / one,
        )
    }

    /// The page's sentences: the tighter of the two limits, CPU and the disk at the workers'
    /// depth, names what parts this machine from the research.
    pub fn sentence(&self, measured_share: Option<f64>) -> String {
        let measured = measured_share
            .map(|s| format!(" (measured: {s:.2})"))
            .unwrap_or_default();
        let alike = self.limits_alike();
        if let Some(disk) = self.disk_binds() {
            return format!(
                "Parallel I/O's {} workers each wait on one read at a time, so at most {} reads are in flight: this disk serves {} random reads/s at that depth, which at the {:.1} device reads per Mgas parallel I/O made allows at most {:.0} Mgas/s, {:.2} of full BAL's throughput{measured}. Its CPU would allow {}more: its reads cost {:.2} ms of CPU per Mgas beside execution's {:.2} ms ({}), which on the same cores leaves it {:.2} of full BAL's. The research's RocksDB read {} random reads/s at 16 threads, and its parallel I/O's throughput leaves room for at most {:.1} device reads per Mgas: {}",
                disk.workers,
                disk.workers,
                thousands(disk.iops),
                disk.device_reads_per_mgas,
                disk.mgas_per_s,
                disk.share_of_full,
                if alike { "barely " } else { "" },
                self.reads_ms,
                self.execution_ms,
                self.cpu_basis(),
                self.cpu_bound_share,
                thousands(ROCKSDB_IOPS_T16),
                bal_replay_report::research::parallel_device_reads_per_mgas_bound(),
                if alike {
                    ALIKE_CONCLUSION
                } else {
                    "the disk's rate at the workers' depth and the device reads each Mgas needs, not the reads' CPU, are where this machine and the research part."
                },
            );
        }
        let disk_clause = self
            .disk_limit
            .map(|d| {
                format!(
                    " The disk would allow {}more: {} random reads/s with its {} workers' reads in flight, at {:.1} device reads per Mgas, leave it {:.2} of full BAL's.",
                    if alike { "barely " } else { "" },
                    thousands(d.iops),
                    d.workers,
                    d.device_reads_per_mgas,
                    d.share_of_full
                )
            })
            .unwrap_or_default();
        let conclusion = if alike {
            let mut opening = ALIKE_CONCLUSION.to_string();
            opening[..1].make_ascii_uppercase();
            opening
        } else if self.cpu_parts() {
            "The CPU per Mgas, not the disk, is where this machine and the research part: the reads' share of it is the count of key reads per Mgas times the CPU of each (RocksDB's lookups, the shared cache, the kernel).".into()
        } else {
            match self.disk_limit {
                Some(_) => "Within that bound the CPU per Mgas does not part this machine from the research, and the disk allows more than was measured: neither limit explains the difference here.",
                None => "Within that bound the CPU per Mgas does not part this machine from the research; the disk was not measured.",
            }
            .into()
        };
        format!(
            "Parallel I/O's reads cost {:.2} ms of CPU per Mgas here beside full BAL's {:.2} ms ({}), so on the same cores CPU alone holds it to {:.2} of full BAL's throughput{}. {}{disk_clause} {conclusion}",
            self.reads_ms,
            self.execution_ms,
            self.cpu_basis(),
            self.cpu_bound_share,
            measured,
            self.research_side(),
        )
    }
}

/// How far apart the CPU's and the disk's limits on parallel I/O may be for the page to name
/// both: 15%, under the runs' own spread at most worker counts.
pub const LIMITS_ALIKE: f64 = 1.15;

/// The page's conclusion where the two limits are alike (after a colon; capitalized where it
/// opens a sentence).
const ALIKE_CONCLUSION: &str = "the reads' CPU and the disk's rate at the workers' depth hold it alike here (their limits within 15% of each other): both part this machine from the research.";

/// The largest error, either way, that the projection may show against the research's own
/// measurements and still be part of the answer.
pub const MAX_PROJECTION_ERROR: f64 = 0.30;

/// Where the state's reads of the runs a page shows were served from, as far as their counters
/// measured it: a regime is claimed only where every reading run's counters judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Regime {
    /// At least 80% of every reading run's block lookups went to the device.
    DiskResident,
    /// Under 80% of each reading run's block lookups went to the device.
    CacheResident,
    /// Some runs disk-resident, some not.
    PartlyDiskResident,
    /// No counter told for some run (MDBX, independent blocks), or no run read state.
    NotMeasured,
}

impl Regime {
    /// The regime of runs judged `residencies` (those that read state).
    pub fn of(residencies: &[Residency]) -> Self {
        let measured = |r: &Residency| r.reached_device.is_some();
        if residencies.is_empty() || !residencies.iter().all(measured) {
            Self::NotMeasured
        } else if residencies.iter().all(|r| r.disk_resident) {
            Self::DiskResident
        } else if residencies.iter().all(|r| !r.disk_resident) {
            Self::CacheResident
        } else {
            Self::PartlyDiskResident
        }
    }

    /// How the answer names it.
    pub fn sentence(self) -> &'static str {
        match self {
            Self::DiskResident => {
                "disk-resident (at least 80% of every reading run's block lookups went to the device)"
            }
            Self::CacheResident => {
                "cache-resident (under 80% of each run's block lookups went to the device)"
            }
            Self::PartlyDiskResident => "partly disk-resident (see the regime column)",
            Self::NotMeasured => {
                "regime not measured (no device counter told where every run's reads were served from: see the regime column)"
            }
        }
    }
}

/// Whether every run that read state read through the page cache (its residency judged by the
/// device's bytes) and started with it emptied.
fn page_cache_emptied(bench: &BenchResult) -> bool {
    let mut reading = measured(bench)
        .filter(|r| r.disk.residency.reads_state())
        .peekable();
    reading.peek().is_some()
        && reading.all(|r| r.cold && r.disk.residency.basis == ResidencyBasis::DeviceBytes)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Findings {
    /// Whether the model's projection is made and within [`MAX_PROJECTION_ERROR`] of the
    /// research's own figures: only then do the answer, its tables and its charts quote it.
    pub fn projection_in_answer(&self) -> bool {
        matches!(self.projected, Projected::Made { .. })
            && self
                .projection_check
                .kept_out(MAX_PROJECTION_ERROR)
                .is_none()
    }

    /// The findings of `bench`, with the sizes of its dump and the disk's curve where measured.
    /// Residency is as the bench judged each run ([`Residency`]).
    pub fn compute(bench: &BenchResult, sizes: &DesignSizes, disk: Option<&DiskModel>) -> Self {
        let mut batches: Vec<usize> = measured(bench).map(|r| r.batch).collect();
        batches.sort_unstable();
        batches.dedup();
        let headline_batch = batches.last().copied().unwrap_or(1);
        let designs: Vec<IoDesign> = IoDesign::ALL
            .into_iter()
            .filter(|d| measured(bench).any(|r| r.design == *d))
            .collect();
        let parallel_device_reads_per_mgas = best(bench, IoDesign::Parallel, headline_batch)
            .and_then(|r| {
                let reads = r.disk.device_reads? as f64;
                Some(reads / (r.gas as f64 / 1e6).max(f64::MIN_POSITIVE))
            });
        let residencies: Vec<Residency> = measured(bench)
            .map(|r| r.disk.residency)
            .filter(Residency::reads_state)
            .collect();
        let projected = project_onto_research_machine(bench, disk, headline_batch);
        let carry = carry_rows(bench, sizes, &designs, headline_batch);
        let headline = headline_rows(bench, sizes, disk, &designs, headline_batch);
        let research_gap = ResearchGap::of(
            &carry,
            DiskLimit::of(&headline, parallel_device_reads_per_mgas, disk),
        );
        let parallel_over_batched = best(bench, IoDesign::Parallel, headline_batch)
            .zip(best(bench, IoDesign::Batched, headline_batch))
            .map(|(p, b)| Interval::ratio(&p, &b));
        Self {
            others_cpu_share: others_cpu_share(bench),
            threads_chosen_held_out: measured(bench).all(crate::runs::choice_held_out),
            page_cache_emptied: page_cache_emptied(bench),
            headline_batch,
            headline,
            scaling_batch_1: parallel_scaling(bench, 1),
            scaling_headline_batch: parallel_scaling(bench, headline_batch),
            latency: block_latencies(bench, &designs, 1),
            batch_latency: if headline_batch > 1 {
                block_latencies(bench, &designs, headline_batch)
            } else {
                Vec::new()
            },
            breakdown: time_breakdowns(bench, &designs, headline_batch),
            frontier: frontier_points(bench, |d| sizes.of(d).rlp, &designs, &batches),
            parallel_device_reads_per_mgas,
            regime: Regime::of(&residencies),
            projection_check: ProjectionCheck::against_research(&projected, headline_batch),
            projected,
            research_gap,
            carry,
            read_floor: FloorRows::at(&bench.read_floors, headline_batch),
            read_cost_points: read_cost_points(bench, headline_batch, None),
            parallel_over_batched,
            sweep: Vec::new(),
            beside: None,
        }
    }

    /// The same findings with another machine's frontier at its largest batch, where given.
    pub fn with_beside(mut self, beside: Option<&BenchResult>) -> Self {
        self.beside = beside.map(|other| {
            let batch = measured(other).map(|r| r.batch).max().unwrap_or(1);
            let designs: Vec<IoDesign> = IoDesign::ALL
                .into_iter()
                .filter(|d| measured(other).any(|r| r.design == *d))
                .collect();
            let sizes = other.bal_sizes;
            BesideFrontier {
                cores: other.cpus,
                blocks: other.blocks,
                points: frontier_points(other, |d| sizes.of(d), &designs, &[batch]),
            }
        });
        self
    }

    /// The same findings with the rows of the study's regime sweep, where it ran one.
    pub fn with_sweep(mut self, sweep: Option<&RegimeSweep>) -> Self {
        self.sweep = sweep.map(RegimeSweep::rows).unwrap_or_default();
        if let Some(sweep) = sweep {
            for point in &sweep.points {
                let label = point.regime.label();
                self.read_cost_points.extend(read_cost_points(
                    &point.bench,
                    sweep.batch,
                    Some(&label),
                ));
            }
        }
        self
    }

    /// The most CPU per key read the research's figures leave its parallel I/O's reads, µs: its
    /// reads' CPU per Mgas ([`ResearchGap::research_reads_ms`]) over the key reads per Mgas of
    /// this chain's parallel I/O (the same chain shape reads the same keys per Mgas).
    pub fn research_read_us_per_key(&self) -> Option<f64> {
        let gap = self.research_gap.as_ref()?;
        let keys = self.carry_row(IoDesign::Parallel)?.key_reads_per_mgas;
        (keys > 0.0).then(|| gap.research_reads_ms() * 1e3 / keys)
    }

    /// What carries across machines for `design`.
    pub fn carry_row(&self, design: IoDesign) -> Option<&CarryRow> {
        self.carry.iter().find(|r| r.design == design)
    }

    /// The headline trade in one sentence: what parallel I/O keeps of batched I/O's throughput
    /// for the read keys it drops, and the bytes per Mgas that saves.
    pub fn trade_sentence(&self) -> Option<String> {
        let ratio = self.parallel_over_batched?;
        let (parallel, batched) = (
            self.carry_row(IoDesign::Parallel)?,
            self.carry_row(IoDesign::Batched)?,
        );
        let saved = |f: fn(&MeanSize) -> f64| {
            (f(&batched.bal_bytes_per_mgas) - f(&parallel.bal_bytes_per_mgas)) / 1000.0
        };
        Some(format!(
            "Dropping the read keys (parallel I/O against batched I/O, batch {}) keeps {:.2}{} of batched I/O's throughput and saves {:.2} KB per Mgas in RLP ({:.2} KB snappy).",
            self.headline_batch,
            ratio.median,
            match (ratio.has_range(), ratio.includes_one()) {
                (false, _) => String::new(),
                (true, true) => format!(
                    " ({:.2}-{:.2}, within the runs' noise)",
                    ratio.low, ratio.high
                ),
                (true, false) => format!(" ({:.2}-{:.2})", ratio.low, ratio.high),
            },
            saved(|s| s.rlp),
            saved(|s| s.snappy),
        ))
    }

    /// The headline row of `design`.
    pub fn row(&self, design: IoDesign) -> Option<&HeadlineRow> {
        self.headline.iter().find(|r| r.design == design)
    }

    /// The answer in two or three sentences, from the numbers.
    pub fn answer(&self, state: &str, shape: &ChainShape) -> String {
        let regime = self.regime.sentence();
        let keep = |design: IoDesign| {
            self.row(design).map(|r| {
                let noise = if r.share_of_full.includes_one() {
                    ", within the runs' noise of full BAL"
                } else {
                    ""
                };
                // A BAL of diffs alone can be a sliver of full BAL's (the worst case's reads
                // change no state): "0%" would say it is empty.
                let size = match 100.0 * r.size_share_of_full {
                    percent if percent < 0.5 => "under 1%".to_owned(),
                    percent => format!("{percent:.0}%"),
                };
                format!(
                    "{} keeps {} of full BAL's throughput at {size} of its size ({} thread{}){noise}",
                    design_name(design),
                    r.share_of_full.median_and_range(),
                    r.threads,
                    if r.threads == 1 { "" } else { "s" },
                )
            })
        };
        // At most five sentences: what each design keeps, the trade EIP-7928 turns on, the
        // regimes, where the research parts from this machine, and the projection.
        let parts: Vec<String> = [IoDesign::Parallel, IoDesign::Batched]
            .into_iter()
            .filter_map(keep)
            .collect();
        let read = if self.page_cache_emptied {
            "read through the page cache, emptied before each run (the research's regime), and "
        } else {
            ""
        };
        let mut sentences = vec![format!(
            "On this {state} at batch {}, {read}{regime}: {}.",
            self.headline_batch,
            parts.join("; ")
        )];
        if let Some(trade) = self.trade_sentence() {
            sentences.push(trade);
        }
        let research = research_parallel_share();
        let bound = bal_replay_report::research::parallel_device_reads_per_mgas_bound();
        match sweep_summary(&self.sweep, research) {
            Some(summary) => sentences.push(summary),
            None => {
                if let Some(reads) = self.parallel_device_reads_per_mgas {
                    sentences.push(format!(
                        "Parallel I/O read {reads:.1} device blocks per Mgas ({:.0} state keys per Mgas in the chain, mainnet's recent blocks 88).",
                        shape.state_keys_per_mgas
                    ));
                }
            }
        }
        sentences.push(match &self.research_gap {
            Some(gap) => format!(
                "The research measured parallel I/O at {research:.2} of full BAL (16 threads, batch 50), at most {bound:.1} device reads per Mgas; {}.",
                gap.answer_clause()
            ),
            None => format!(
                "The research measured parallel I/O at {research:.2} of full BAL (16 threads, batch 50), at most {bound:.1} device reads per Mgas."
            ),
        });
        sentences.push(self.projected_sentence());
        sentences.join(" ")
    }

    /// The answer's sentence on the model's projection onto the research's machine, or on why
    /// there is none.
    pub fn projected_sentence(&self) -> String {
        if let (Projected::Made { .. }, Some(why)) = (
            &self.projected,
            self.projection_check.kept_out(MAX_PROJECTION_ERROR),
        ) {
            return format!(
                "The model's projection onto the research's machine is not in the answer: {why}. The appendix keeps it, with its errors."
            );
        }
        let share = |design| {
            self.projected
                .row(design)
                .and_then(|r| r.share_of_full)
                .map_or_else(|| "-".into(), |s| format!("{s:.2}"))
        };
        match &self.projected {
            Projected::Made { .. } => format!(
                "Projected by the model onto the research's machine ({}), at {PROJECTED_WORKERS} threads and batch {}: parallel I/O keeps {} of full BAL's throughput (the model's error on this machine's runs: {}), batched I/O {} ({}); the model's figures, not measurements.",
                self.projected.machine_label(),
                self.headline_batch,
                share(IoDesign::Parallel),
                self.projected.error_here_label(IoDesign::Parallel),
                share(IoDesign::Batched),
                self.projected.error_here_label(IoDesign::Batched),
            ),
            Projected::LeftOut(why) => {
                format!("The model's projection onto the research's machine was left out: {why}.")
            }
        }
    }
}

/// Each design against full BAL at `batch`, at each one's best thread count.
fn headline_rows(
    bench: &BenchResult,
    sizes: &DesignSizes,
    disk: Option<&DiskModel>,
    designs: &[IoDesign],
    batch: usize,
) -> Vec<HeadlineRow> {
    let full_size = sizes.full.rlp.max(f64::MIN_POSITIVE);
    designs
        .iter()
        .filter_map(|&design| {
            let run = best(bench, design, batch)?;
            let full = best(bench, IoDesign::Full, batch)?;
            let verified = best(bench, IoDesign::FullVerify, batch);
            let size = sizes.of(design);
            let residency = run.disk.residency;
            let bound = disk.filter(|_| residency.reads_state()).and_then(|disk| {
                let reads = run.disk.device_reads.filter(|n| *n > 0)? as f64;
                let bound_mgas = run.gas as f64 / reads * disk.best_iops() / 1e6;
                Some(run.throughput.mgas_per_s / bound_mgas)
            });
            Some(HeadlineRow {
                design,
                size,
                size_share_of_full: size.rlp / full_size,
                threads: run.threads,
                batch,
                mgas_per_s: run.throughput.mgas_per_s,
                end_to_end_mgas_per_s: run.client_mgas_per_s(),
                end_to_end_share_of_full: run.client_mgas_per_s()
                    / full.client_mgas_per_s().max(f64::MIN_POSITIVE),
                end_to_end_less_dump: run.timing.read_dump_s.is_some()
                    && full.timing.read_dump_s.is_some(),
                share_of_full: Interval::ratio(&run, &full),
                share_of_verified: verified.map(|v| Interval::ratio(&run, &v)),
                share_of_disk_bound: bound,
                device_reads_per_key: run.disk.device_reads_per_key,
                residency,
            })
        })
        .collect()
}

/// What carries across machines, per design, from its one-worker run at `batch` (its fastest
/// run where it has none).
fn carry_rows(
    bench: &BenchResult,
    sizes: &DesignSizes,
    designs: &[IoDesign],
    batch: usize,
) -> Vec<CarryRow> {
    let run_of = |design: IoDesign| {
        measured(bench)
            .find(|r| r.design == design && r.batch == batch && r.threads == 1)
            .map(std::borrow::Cow::Borrowed)
            .or_else(|| best(bench, design, batch))
    };
    let cpu_ms_per_mgas = |run: &RunResult| {
        let mgas = run.gas as f64 / 1e6;
        run.cpu
            .filter(|_| mgas > 0.0)
            .map(|cpu| cpu.process_s * 1e3 / mgas)
    };
    let full = run_of(IoDesign::Full);
    let full_cpu = full.as_deref().and_then(cpu_ms_per_mgas);
    designs
        .iter()
        .filter_map(|&design| {
            let run = run_of(design)?;
            let mgas = (run.gas as f64 / 1e6).max(f64::MIN_POSITIVE);
            let mgas_per_block = mgas / run.blocks.max(1) as f64;
            let device_reads_per_mgas = run.disk.device_reads.map(|n| n as f64 / mgas);
            let cpu = cpu_ms_per_mgas(&run);
            let read_cpu = cpu
                .zip(full_cpu)
                .filter(|_| design != IoDesign::Full)
                .map(|(c, f)| (c - f).max(0.0));
            let size = sizes.of(design);
            Some(CarryRow {
                design,
                threads: run.threads,
                key_reads_per_mgas: run.disk.key_reads as f64 / mgas,
                device_reads_per_mgas,
                cpu_ms_per_mgas: cpu,
                read_cpu_ms_per_mgas: read_cpu,
                cpu_us_per_device_read: read_cpu
                    .zip(device_reads_per_mgas)
                    .filter(|(_, reads)| *reads >= 0.1)
                    .map(|(ms, reads)| ms * 1e3 / reads),
                bal_bytes_per_mgas: MeanSize {
                    rlp: size.rlp / mgas_per_block,
                    snappy: size.snappy / mgas_per_block,
                },
                read_cost: full
                    .as_deref()
                    .filter(|_| design != IoDesign::Full)
                    .and_then(|full| ReadCost::of_run(&run, full)),
                worker_cpu_ms_per_mgas: run.cpu.and_then(|c| c.worker_s).map(|s| s * 1e3 / mgas),
            })
        })
        .collect()
}

/// Parallel I/O by thread count at `batch`.
fn parallel_scaling(bench: &BenchResult, batch: usize) -> Vec<ScalingRow> {
    let mut rows: Vec<ScalingRow> = measured(bench)
        .filter(|r| r.design == IoDesign::Parallel && r.batch == batch)
        .map(|r| ScalingRow {
            threads: r.threads,
            mgas_per_s: r.throughput.mgas_per_s,
            longest_txs_s: r.timing.longest_txs_s,
            total_s: r.timing.exec_with_io_s,
        })
        .collect();
    rows.sort_by_key(|r| r.threads);
    rows
}

/// Per-batch latency percentiles at `batch`, per design at its best thread count.
fn block_latencies(bench: &BenchResult, designs: &[IoDesign], batch: usize) -> Vec<BlockLatency> {
    designs
        .iter()
        .filter_map(|&design| {
            let run = best(bench, design, batch)?;
            let mut ms: Vec<f64> = run.batches.iter().map(|b| b.exec_with_io_s * 1e3).collect();
            if ms.is_empty() {
                return None;
            }
            ms.sort_by(f64::total_cmp);
            Some(BlockLatency {
                design,
                threads: run.threads,
                batch,
                blocks: ms.len(),
                p50_ms: percentile(&ms, 50.0),
                p90_ms: percentile(&ms, 90.0),
                p99_ms: (ms.len() >= MIN_P99_SAMPLES).then(|| percentile(&ms, 99.0)),
                max_ms: ms[ms.len() - 1],
            })
        })
        .collect()
}

/// Where each design's time went at `batch`, at its best thread count.
fn time_breakdowns(bench: &BenchResult, designs: &[IoDesign], batch: usize) -> Vec<TimeBreakdown> {
    designs
        .iter()
        .filter_map(|&design| {
            let run = best(bench, design, batch)?;
            Some(TimeBreakdown {
                design,
                threads: run.threads,
                prefetch_s: run.timing.prefetch_s,
                execution_s: (run.timing.exec_with_io_s - run.timing.prefetch_s).max(0.0),
                longest_txs_s: run.timing.longest_txs_s,
                commit_s: run.timing.commit_s,
                other_s: (run.timing.client_s() - run.timing.exec_with_io_s - run.timing.commit_s)
                    .max(0.0),
                read_dump_s: run.timing.read_dump_s,
            })
        })
        .collect()
}

/// BAL size against the share of full BAL's throughput, one point per design and batch size.
/// `rlp_size` gives each design's BAL size (RLP).
fn frontier_points(
    bench: &BenchResult,
    rlp_size: impl Fn(IoDesign) -> f64 + Copy,
    designs: &[IoDesign],
    batches: &[usize],
) -> Vec<FrontierPoint> {
    let full_size = rlp_size(IoDesign::Full).max(f64::MIN_POSITIVE);
    batches
        .iter()
        .flat_map(|&batch| {
            designs.iter().filter_map(move |&design| {
                let run = best(bench, design, batch)?;
                let full = best(bench, IoDesign::Full, batch)?;
                Some(FrontierPoint {
                    design,
                    batch,
                    size_share: rlp_size(design) / full_size,
                    throughput_share: Interval::ratio(&run, &full),
                })
            })
        })
        .collect()
}

/// The share of the machine's CPU that other processes took over the runs, where `/proc` told.
fn others_cpu_share(bench: &BenchResult) -> Option<f64> {
    let (others, capacity) =
        measured(bench)
            .filter_map(|r| r.cpu)
            .fold((0.0, 0.0), |(others, capacity), cpu| {
                (
                    others + cpu.other_s,
                    capacity + cpu.wall_s * bench.cpus as f64,
                )
            });
    (capacity > 0.0).then(|| others / capacity)
}

/// The findings of the bench format's golden sample, every design measured (the page's and its
/// charts' tests).
#[cfg(test)]
pub(crate) fn golden_findings() -> Findings {
    let root = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"));
    let bench: bal_replay_bench::BenchResult =
        bal_replay_results::read_result(&root.join(format!(
            "crates/measurement/bench/tests/golden/bench-result-v{}.json",
            bal_replay_bench::SCHEMA_VERSION
        )))
        .unwrap();
    let size = |rlp| MeanSize { rlp, snappy: rlp };
    let sizes = DesignSizes {
        blocks: 10,
        full: size(30_000.0),
        batched: size(20_000.0),
        parallel: size(10_000.0),
        network: None,
    };
    Findings::compute(&bench, &sizes, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_to_the_research_is_the_reads_cpu_per_mgas() {
        let row = |design, cpu: f64, reads: Option<f64>| CarryRow {
            design,
            threads: 1,
            key_reads_per_mgas: 58.5,
            device_reads_per_mgas: Some(27.2),
            cpu_ms_per_mgas: Some(cpu),
            read_cpu_ms_per_mgas: reads,
            cpu_us_per_device_read: None,
            bal_bytes_per_mgas: MeanSize::default(),
            read_cost: None,
            worker_cpu_ms_per_mgas: None,
        };
        let gap = ResearchGap::of(
            &[
                row(IoDesign::Full, 0.897, None),
                row(IoDesign::Parallel, 2.684, Some(1.787)),
            ],
            None,
        )
        .unwrap();
        // 0.897 / (0.897 + 1.787); 16 threads over 13,881 and over 10,842 Mgas/s.
        assert!((gap.cpu_bound_share - 0.334).abs() < 0.001, "{gap:?}");
        assert!((gap.research_full_ms - 1.1527).abs() < 0.001);
        assert!((gap.research_parallel_ms - 1.4757).abs() < 0.001);
        assert!((gap.research_reads_ms() - 0.3230).abs() < 0.001);
        let sentence = gap.sentence(Some(0.31));
        assert!(
            sentence
                .contains("CPU alone holds it to 0.33 of full BAL's throughput (measured: 0.31)"),
            "{sentence}"
        );
        // The research's side: its one-thread run a bound (1,000 / 943), its 16-thread figures
        // an estimate.
        assert!((gap.research_one_thread_ms - 1.0604).abs() < 0.001);
        assert!(gap.cpu_parts());
        assert!(
            sentence.contains("so it spent at most 1.06 ms per Mgas on execution, reads and waiting together; here execution and reads take 2.68 ms of CPU, 2.5 times that"),
            "{sentence}"
        );
        assert!(
            sentence.contains("leave its reads at most 0.32 ms per Mgas were all 16 threads busy, which its parallel I/O's 11.5x on 16 threads says they were not"),
            "{sentence}"
        );
        assert!(
            gap.answer_clause().contains("parallel I/O's execution and reads take 2.68 ms here (its reads 1.79), against at most 1.06"),
            "{}",
            gap.answer_clause()
        );
        assert!(
            sentence.contains("(each the whole process's CPU over the design's one-worker run"),
            "{sentence}"
        );
        // Where both runs recorded their workers' own CPU, the gap is that: execution without
        // this tool's planning, dump reading and commits.
        let with_workers = |mut r: CarryRow, ms: f64| {
            r.worker_cpu_ms_per_mgas = Some(ms);
            r
        };
        let workers = ResearchGap::of(
            &[
                with_workers(row(IoDesign::Full, 0.897, None), 0.70),
                with_workers(row(IoDesign::Parallel, 2.684, Some(1.787)), 2.30),
            ],
            None,
        )
        .unwrap();
        assert!(workers.from_workers, "{workers:?}");
        assert!((workers.execution_ms - 0.70).abs() < 1e-9, "{workers:?}");
        assert!((workers.reads_ms - 1.60).abs() < 1e-9, "{workers:?}");
        assert!(
            workers.sentence(None).contains(
                "beside full BAL's 0.70 ms (each the workers' own CPU while they executed"
            ),
            "{}",
            workers.sentence(None)
        );
        // One side without it: the whole process's CPU on both.
        let mixed = ResearchGap::of(
            &[
                row(IoDesign::Full, 0.897, None),
                with_workers(row(IoDesign::Parallel, 2.684, Some(1.787)), 2.30),
            ],
            None,
        )
        .unwrap();
        assert!(!mixed.from_workers && (mixed.execution_ms - 0.897).abs() < 1e-9);
        // A chain whose reads cost next to nothing (a state in memory): within the research's
        // bound, so the page says the CPU does not part them, not "0.0 times fewer".
        let light = ResearchGap::of(
            &[
                row(IoDesign::Full, 0.98, None),
                row(IoDesign::Parallel, 0.98, Some(0.0)),
            ],
            None,
        )
        .unwrap();
        assert!(!light.cpu_parts());
        assert!(
            light.answer_clause().starts_with("neither the CPU nor the disk parts this machine from it: parallel I/O's execution and reads take 0.98 ms"),
            "{}",
            light.answer_clause()
        );
        assert!(
            light.sentence(None).ends_with(
                "does not part this machine from the research; the disk was not measured."
            ),
            "{}",
            light.sentence(None)
        );
        assert!(!light.sentence(None).contains("times fewer"));
        // Without parallel I/O's run there is no gap to state.
        assert_eq!(
            ResearchGap::of(&[row(IoDesign::Full, 0.9, None)], None),
            None
        );
    }

    /// The 16-core machine's figures (16 workers, 90,400 reads/s at depth 16, 31.3 device reads
    /// per Mgas, full BAL at 12,390 Mgas/s): the disk's limit there, and the gap it makes.
    fn sixteen_core_gap() -> (DiskLimit, ResearchGap) {
        let carry_row = |design, cpu: f64, reads: Option<f64>| CarryRow {
            design,
            threads: 1,
            key_reads_per_mgas: 65.6,
            device_reads_per_mgas: Some(31.3),
            cpu_ms_per_mgas: Some(cpu),
            read_cpu_ms_per_mgas: reads,
            cpu_us_per_device_read: None,
            bal_bytes_per_mgas: MeanSize::default(),
            read_cost: None,
            worker_cpu_ms_per_mgas: None,
        };
        let headline_row = |design, threads, mgas_per_s| HeadlineRow {
            design,
            size: MeanSize::default(),
            size_share_of_full: 1.0,
            threads,
            batch: 50,
            mgas_per_s,
            end_to_end_mgas_per_s: mgas_per_s,
            end_to_end_share_of_full: 1.0,
            end_to_end_less_dump: true,
            share_of_full: Interval {
                median: 1.0,
                low: 1.0,
                high: 1.0,
            },
            share_of_verified: None,
            share_of_disk_bound: None,
            device_reads_per_key: None,
            residency: Residency::default(),
        };
        let disk = DiskModel::parse_fio_table(
            "depth iops mean_latency_us\n1 27996 35.4\n4 65889 60.4\n16 90400 176.6\n64 115937 551.5\n",
            "disk.txt",
        )
        .unwrap();
        let headline = [
            headline_row(IoDesign::Full, 16, 12_389.5),
            headline_row(IoDesign::Parallel, 16, 2_213.8),
        ];
        let limit = DiskLimit::of(&headline, Some(31.3), Some(&disk)).unwrap();
        // 90,400 / 31.3 = 2,888 Mgas/s, 0.233 of 12,389.5.
        assert!((limit.mgas_per_s - 2888.2).abs() < 0.5, "{limit:?}");
        assert!((limit.share_of_full - 0.2331).abs() < 0.001, "{limit:?}");
        let gap = ResearchGap::of(
            &[
                carry_row(IoDesign::Full, 1.561, None),
                carry_row(IoDesign::Parallel, 2.455, Some(0.893)),
            ],
            Some(limit),
        )
        .unwrap();
        (limit, gap)
    }

    /// Where the disk at the workers' depth allows less than the CPU, it is what the page names.
    #[test]
    fn the_disk_at_the_workers_depth_is_named_where_it_binds() {
        let (_, gap) = sixteen_core_gap();
        assert!(gap.disk_binds().is_some());
        let sentence = gap.sentence(Some(0.18));
        assert!(
            sentence.contains("this disk serves 90,400 random reads/s at that depth, which at the 31.3 device reads per Mgas parallel I/O made allows at most 2888 Mgas/s, 0.23 of full BAL's throughput (measured: 0.18)"),
            "{sentence}"
        );
        assert!(
            sentence.contains("leaves it 0.64 of full BAL's"),
            "{sentence}"
        );
        assert!(
            gap.answer_clause()
                .contains("90,400 random reads/s with 16 in flight here, against 180,000"),
            "{}",
            gap.answer_clause()
        );
    }

    /// A faster disk leaves the CPU binding; limits within 15% of each other are both named.
    #[test]
    fn the_cpu_binds_on_a_faster_disk_and_alike_limits_are_both_named() {
        let (limit, gap) = sixteen_core_gap();
        // With a disk four times as fast the CPU binds again, and the disk's allowance is said.
        let fast = DiskLimit {
            iops: 4.0 * limit.iops,
            mgas_per_s: 4.0 * limit.mgas_per_s,
            share_of_full: 4.0 * limit.share_of_full,
            ..limit
        };
        let gap = ResearchGap {
            disk_limit: Some(fast),
            ..gap
        };
        assert!(gap.disk_binds().is_none() && !gap.limits_alike());
        // Limits within 15% of each other (the disk's 0.60, the CPU's 0.64): both are named.
        let near = DiskLimit {
            share_of_full: 0.60,
            ..limit
        };
        let alike = ResearchGap {
            disk_limit: Some(near),
            ..gap
        };
        assert!(alike.limits_alike() && alike.disk_binds().is_some());
        let sentence = alike.sentence(None);
        assert!(
            sentence.contains("Its CPU would allow barely more"),
            "{sentence}"
        );
        assert!(
            sentence.ends_with(
                "(their limits within 15% of each other): both part this machine from the research."
            ),
            "{sentence}"
        );
        assert!(
            alike.answer_clause().starts_with(
                "what parts this machine from it is the CPU and the disk alike: parallel I/O's execution and reads take 2.45 ms of CPU per Mgas here against at most 1.06 in the research's one-thread run"
            ),
            "{}",
            alike.answer_clause()
        );
        assert!(
            gap.answer_clause()
                .contains("execution and reads take 2.45 ms here (its reads 0.89)"),
            "{}",
            gap.answer_clause()
        );
        assert!(
            gap.sentence(None).contains("leave it 0.93 of full BAL's"),
            "{}",
            gap.sentence(None)
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 5.0);
        assert_eq!(percentile(&values, 90.0), 9.0);
        assert_eq!(percentile(&values, 99.0), 10.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    /// Without a device counter (imported fixture blocks, MDBX) no regime is claimed: a run whose
    /// counters cannot tell is "not measured", not cache-resident.
    #[test]
    fn a_regime_is_claimed_only_where_every_run_measured_it() {
        let run = |reached: Option<f64>| Residency {
            disk_resident: reached.is_some_and(|s| s >= 0.8),
            reached_device: reached,
            basis: if reached.is_some() {
                bal_replay_probe::ResidencyBasis::DataBlocks
            } else {
                bal_replay_probe::ResidencyBasis::Unknown
            },
        };
        assert_eq!(Regime::of(&[run(None), run(None)]), Regime::NotMeasured);
        assert_eq!(
            Regime::of(&[run(Some(0.1)), run(None)]),
            Regime::NotMeasured
        );
        assert_eq!(Regime::of(&[]), Regime::NotMeasured);
        assert_eq!(Regime::of(&[run(Some(0.1))]), Regime::CacheResident);
        assert_eq!(Regime::of(&[run(Some(0.9))]), Regime::DiskResident);
        assert_eq!(
            Regime::of(&[run(Some(0.9)), run(Some(0.1))]),
            Regime::PartlyDiskResident
        );
        assert!(
            Regime::NotMeasured
                .sentence()
                .starts_with("regime not measured")
        );
    }
}
