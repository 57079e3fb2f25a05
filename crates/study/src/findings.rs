//! The numbers of the findings page, computed from one bench's results: a pure function of its
//! JSON (and the sizes, the disk's curve and the chain's shape), so a test can recompute every
//! figure the page shows from the file it came from.

use crate::{ChainShape, DesignSizes, MeanSize};
use bal_replay_bench::{BenchResult, DiskEvidence, RunResult, StoreKind};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_model::DiskModel;

/// RocksDB's data block size in this project's states: a stored key's read reads one.
pub const DATA_BLOCK_BYTES: f64 = 4096.0;

/// The share of stored-key reads that must reach the device for a run to be disk-resident.
pub const DISK_RESIDENT_SHARE: f64 = 0.8;

/// A ratio with the range its repeats allow: the median over the runs' medians, and the lowest
/// and highest over their extremes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    /// The ratio of the medians.
    pub median: f64,
    /// The lowest the repeats allow.
    pub low: f64,
    /// The highest.
    pub high: f64,
}

impl Interval {
    /// `numerator / denominator` of two repeated runs.
    pub fn ratio(numerator: &RunResult, denominator: &RunResult) -> Self {
        let (n, d) = (numerator.mgas_per_s, denominator.mgas_per_s);
        let low = positive(numerator.mgas_per_s_min, n) / positive(denominator.mgas_per_s_max, d);
        let high = positive(numerator.mgas_per_s_max, n) / positive(denominator.mgas_per_s_min, d);
        Self {
            median: n / d,
            low: low.min(n / d),
            high: high.max(n / d),
        }
    }

    /// Whether 1.0 (no difference) lies inside the range: the difference is within the noise.
    pub fn includes_one(&self) -> bool {
        self.low <= 1.0 && 1.0 <= self.high
    }
}

/// `value` where it is positive (a repeat's extreme), else `fallback` (a result of one run).
fn positive(value: f64, fallback: f64) -> f64 {
    if value > 0.0 { value } else { fallback }
}

/// Where a run's state reads were served from, judged by what reached the device.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Residency {
    /// The share of the run's stored-key reads that reached the device; `None` where the
    /// counters cannot tell (no RocksDB counters, or no key read from the store).
    pub reached_device: Option<f64>,
    /// How it was judged.
    pub basis: ResidencyBasis,
}

/// What [`Residency::reached_device`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResidencyBasis {
    /// With direct reads every block-cache miss is a device read: the share of the run's
    /// block-cache lookups that missed. Counted in blocks, neither in requests (a sorted multi-get
    /// reads neighbouring blocks in one device request, which a count of requests would take for
    /// cache hits) nor in keys (one block serves the neighbouring keys a sorted multi-get asks
    /// for, which a count per key would take for cache hits).
    DataBlocks,
    /// Through the page cache: the bytes the device read, in 4 KiB blocks, per block-cache miss.
    DeviceBytes,
    /// The run read (next to) no key from the state: full BAL executes from the BAL's values.
    NoReads,
    /// No counter tells.
    Unknown,
}

/// Fewer key reads from the state than this and a run "reads no state" (full BAL reads a handful,
/// e.g. the beacon roots contract's code).
pub const MIN_KEY_READS: u64 = 100;

impl Residency {
    /// Judges a run's evidence; `direct_io`: the bench read with O_DIRECT.
    pub fn judge(disk: &DiskEvidence, direct_io: bool) -> Self {
        if disk.key_reads < MIN_KEY_READS {
            return Self {
                reached_device: None,
                basis: ResidencyBasis::NoReads,
            };
        }
        let lookups = disk
            .block_cache_hits
            .zip(disk.block_cache_misses)
            .map(|(hits, misses)| hits + misses)
            .filter(|n| *n > 0);
        let (reached_device, basis) = match (lookups, disk.block_cache_data_misses) {
            (Some(lookups), Some(misses)) if direct_io => (
                Some(misses as f64 / lookups as f64),
                ResidencyBasis::DataBlocks,
            ),
            // Through the page cache a miss reached the device only as far as its bytes say.
            (Some(lookups), Some(misses)) => match disk.device_read_bytes {
                Some(bytes) => (
                    Some((bytes as f64 / DATA_BLOCK_BYTES).min(misses as f64) / lookups as f64),
                    ResidencyBasis::DeviceBytes,
                ),
                None => (None, ResidencyBasis::Unknown),
            },
            _ => (None, ResidencyBasis::Unknown),
        };
        Self {
            reached_device,
            basis,
        }
    }

    /// At least [`DISK_RESIDENT_SHARE`] of the block lookups reached the device.
    pub fn disk_resident(&self) -> bool {
        self.reached_device
            .is_some_and(|share| share >= DISK_RESIDENT_SHARE)
    }

    /// Whether the run read from the state at all.
    pub fn reads_state(&self) -> bool {
        self.basis != ResidencyBasis::NoReads
    }

    /// "disk-resident", "cache-resident", "reads no state" or "regime unknown".
    pub fn label(&self) -> &'static str {
        match (self.basis, self.reached_device) {
            (ResidencyBasis::NoReads, _) => "reads no state",
            (_, None) => "regime unknown",
            (_, Some(_)) if self.disk_resident() => "disk-resident",
            (_, Some(_)) => "cache-resident",
        }
    }
}

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
    /// Its throughput over full BAL's at full BAL's best thread count, with the repeats' range.
    pub share_of_full: Interval,
    /// Its throughput over the disk's bound (its gas per device read at the disk's best IOPS);
    /// `None` without a disk curve or a device read.
    pub share_of_disk_bound: Option<f64>,
    /// Device read requests per key read.
    pub device_reads_per_key: Option<f64>,
    /// Where its reads were served from.
    pub residency: Residency,
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

/// Per-block latency of a design at batch 1 (a batch is a block), ms.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockLatency {
    /// The design.
    pub design: IoDesign,
    /// Workers.
    pub threads: usize,
    /// Blocks measured.
    pub blocks: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest block.
    pub max_ms: f64,
}

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
    /// The rest of the wall time: planning, reading the dump.
    pub other_s: f64,
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
    /// Where the time went, per design at the headline batch.
    pub breakdown: Vec<TimeBreakdown>,
    /// BAL size against throughput, per design and batch.
    pub frontier: Vec<FrontierPoint>,
    /// Device reads per Mgas of parallel I/O at the headline batch (its cold reads).
    pub parallel_device_reads_per_mgas: Option<f64>,
    /// Whether every run measured is disk-resident.
    pub all_disk_resident: bool,
    /// Whether no run measured is disk-resident.
    pub all_cache_resident: bool,
    /// The share of the machine's CPU that other processes (and interrupts, and the hypervisor)
    /// took over the runs measured, where the counters tell: a shared machine's noise.
    pub others_cpu_share: Option<f64>,
}

/// The research's headline: parallel I/O at 16 threads, batch 50, over full BAL.
pub fn research_parallel_share() -> f64 {
    bal_replay_report::research::PARALLEL_BATCH_50[4].mgas_per_s
        / bal_replay_report::research::FULL_BATCH_50_T16
}

/// The runs the findings read: parallel over the state's store (no baselines).
fn measured(bench: &BenchResult) -> impl Iterator<Item = &RunResult> {
    bench
        .runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel && r.store != StoreKind::Memory)
}

/// The fastest run of `design` at `batch`, over thread counts.
fn best(bench: &BenchResult, design: IoDesign, batch: usize) -> Option<&RunResult> {
    measured(bench)
        .filter(|r| r.design == design && r.batch == batch)
        .max_by(|a, b| a.mgas_per_s.total_cmp(&b.mgas_per_s))
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
    /// The findings of `bench`, with the sizes of its dump and the disk's curve where measured.
    /// `direct_io`: the bench read with O_DIRECT (how residency is judged).
    pub fn compute(
        bench: &BenchResult,
        sizes: &DesignSizes,
        disk: Option<&DiskModel>,
        direct_io: bool,
    ) -> Self {
        let mut batches: Vec<usize> = measured(bench).map(|r| r.batch).collect();
        batches.sort_unstable();
        batches.dedup();
        let headline_batch = batches.last().copied().unwrap_or(1);
        let designs: Vec<IoDesign> = IoDesign::ALL
            .into_iter()
            .filter(|d| measured(bench).any(|r| r.design == *d))
            .collect();
        let full_size = sizes.full.rlp.max(f64::MIN_POSITIVE);
        let headline = designs
            .iter()
            .filter_map(|&design| {
                let run = best(bench, design, headline_batch)?;
                let full = best(bench, IoDesign::Full, headline_batch)?;
                let size = sizes.of(design);
                let residency = Residency::judge(&run.disk, direct_io);
                let bound = disk.filter(|_| residency.reads_state()).and_then(|disk| {
                    let reads = run.disk.device_reads.filter(|n| *n > 0)? as f64;
                    let bound_mgas = run.gas as f64 / reads * disk.best_iops() / 1e6;
                    Some(run.mgas_per_s / bound_mgas)
                });
                Some(HeadlineRow {
                    design,
                    size,
                    size_share_of_full: size.rlp / full_size,
                    threads: run.threads,
                    batch: headline_batch,
                    mgas_per_s: run.mgas_per_s,
                    share_of_full: Interval::ratio(run, full),
                    share_of_disk_bound: bound,
                    device_reads_per_key: run.disk.device_reads_per_key,
                    residency,
                })
            })
            .collect();
        let scaling = |batch: usize| {
            let mut rows: Vec<ScalingRow> = measured(bench)
                .filter(|r| r.design == IoDesign::Parallel && r.batch == batch)
                .map(|r| ScalingRow {
                    threads: r.threads,
                    mgas_per_s: r.mgas_per_s,
                    longest_txs_s: r.longest_txs_s,
                    total_s: r.exec_with_io_s,
                })
                .collect();
            rows.sort_by_key(|r| r.threads);
            rows
        };
        let latency = designs
            .iter()
            .filter_map(|&design| {
                let run = best(bench, design, 1)?;
                let mut ms: Vec<f64> = run.batches.iter().map(|b| b.exec_with_io_s * 1e3).collect();
                if ms.is_empty() {
                    return None;
                }
                ms.sort_by(f64::total_cmp);
                Some(BlockLatency {
                    design,
                    threads: run.threads,
                    blocks: ms.len(),
                    p50_ms: percentile(&ms, 50.0),
                    p90_ms: percentile(&ms, 90.0),
                    p99_ms: percentile(&ms, 99.0),
                    max_ms: ms[ms.len() - 1],
                })
            })
            .collect();
        let breakdown = designs
            .iter()
            .filter_map(|&design| {
                let run = best(bench, design, headline_batch)?;
                Some(TimeBreakdown {
                    design,
                    threads: run.threads,
                    prefetch_s: run.prefetch_s,
                    execution_s: (run.exec_with_io_s - run.prefetch_s).max(0.0),
                    longest_txs_s: run.longest_txs_s,
                    commit_s: run.commit_s,
                    other_s: (run.wall_s - run.exec_with_io_s - run.commit_s).max(0.0),
                })
            })
            .collect();
        let frontier = batches
            .iter()
            .flat_map(|&batch| {
                designs.iter().filter_map(move |&design| {
                    let run = best(bench, design, batch)?;
                    let full = best(bench, IoDesign::Full, batch)?;
                    Some(FrontierPoint {
                        design,
                        batch,
                        size_share: sizes.of(design).rlp / full_size,
                        throughput_share: Interval::ratio(run, full),
                    })
                })
            })
            .collect();
        let parallel_device_reads_per_mgas = best(bench, IoDesign::Parallel, headline_batch)
            .and_then(|r| {
                let reads = r.disk.device_reads? as f64;
                Some(reads / (r.gas as f64 / 1e6).max(f64::MIN_POSITIVE))
            });
        let residencies: Vec<Residency> = measured(bench)
            .map(|r| Residency::judge(&r.disk, direct_io))
            .filter(Residency::reads_state)
            .collect();
        let (others, capacity) = measured(bench).filter_map(|r| r.disk.cpu).fold(
            (0.0, 0.0),
            |(others, capacity), cpu| {
                (
                    others + cpu.other_s,
                    capacity + cpu.wall_s * bench.cpus as f64,
                )
            },
        );
        Self {
            others_cpu_share: (capacity > 0.0).then(|| others / capacity),
            headline_batch,
            headline,
            scaling_batch_1: scaling(1),
            scaling_headline_batch: scaling(headline_batch),
            latency,
            breakdown,
            frontier,
            parallel_device_reads_per_mgas,
            all_disk_resident: !residencies.is_empty()
                && residencies.iter().all(Residency::disk_resident),
            all_cache_resident: residencies.iter().all(|r| !r.disk_resident()),
        }
    }

    /// The headline row of `design`.
    pub fn row(&self, design: IoDesign) -> Option<&HeadlineRow> {
        self.headline.iter().find(|r| r.design == design)
    }

    /// The answer in two or three sentences, from the numbers.
    pub fn answer(&self, state: &str, shape: &ChainShape) -> String {
        let regime = if self.all_disk_resident {
            "disk-resident (at least 80% of every reading run's block lookups went to the device)"
        } else if self.all_cache_resident {
            "cache-resident (under 80% of each run's block lookups went to the device)"
        } else {
            "partly disk-resident (see the regime column)"
        };
        let keep = |design: IoDesign| {
            self.row(design).map(|r| {
                let noise = if r.share_of_full.includes_one() {
                    ", within the runs' noise of full BAL"
                } else {
                    ""
                };
                format!(
                    "{} keeps {:.2} ({:.2}-{:.2}) of full BAL's throughput at {} thread{}, batch {}, at {:.0}% of its size{noise}",
                    design_name(design),
                    r.share_of_full.median,
                    r.share_of_full.low,
                    r.share_of_full.high,
                    r.threads,
                    if r.threads == 1 { "" } else { "s" },
                    r.batch,
                    100.0 * r.size_share_of_full,
                )
            })
        };
        let mut out = format!("On this {state}, {regime}: ");
        let parts: Vec<String> = [IoDesign::Parallel, IoDesign::Batched]
            .into_iter()
            .filter_map(keep)
            .collect();
        out.push_str(&parts.join("; "));
        out.push_str(". ");
        out.push_str(&format!(
            "The research measured parallel I/O at {:.2} of full BAL (16 threads, batch 50, disk-resident over NVMe) at {:.0}% of its size.",
            research_parallel_share(),
            100.0 * bal_replay_report::research::BAL_SIZE_KB[2]
                / bal_replay_report::research::BAL_SIZE_KB[0],
        ));
        if let Some(reads) = self.parallel_device_reads_per_mgas {
            // The research's one-thread parallel I/O at batch 50 executed a Mgas in 1/943 s; a
            // read that blocks its thread at its disk's 85 µs leaves room for that many reads.
            let room = 1e6 / bal_replay_report::research::PARALLEL_BATCH_50[0].mgas_per_s / 85.0;
            out.push_str(&format!(
                " Its one-thread rate (943 Mgas/s) leaves room for at most {room:.1} blocking reads per Mgas at its disk's 85 µs; parallel I/O here read {reads:.1} device blocks per Mgas ({:.0} state keys per Mgas in the chain, mainnet's recent blocks 88).",
                shape.state_keys_per_mgas
            ));
        }
        out
    }
}

/// The design as the page names it.
pub fn design_name(design: IoDesign) -> &'static str {
    match design {
        IoDesign::Full => "full BAL",
        IoDesign::FullVerify => "full BAL, verified",
        IoDesign::Batched => "batched I/O",
        IoDesign::Parallel => "parallel I/O",
        IoDesign::Hybrid => "hybrid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 5.0);
        assert_eq!(percentile(&values, 90.0), 9.0);
        assert_eq!(percentile(&values, 99.0), 10.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn residency_counts_blocks_with_direct_reads_and_bytes_without() {
        // What a batched I/O run over a 200 M-entry state counted: a sorted multi-get reads
        // neighbouring blocks in one request (70,606 requests) and serves neighbouring keys from
        // one block (211,964 stored-key reads, 125,447 block lookups).
        let disk = DiskEvidence {
            key_reads: 394_306,
            stored_key_reads: Some(211_964),
            block_cache_hits: Some(12_381),
            block_cache_misses: Some(113_066),
            block_cache_data_misses: Some(113_066),
            device_reads: Some(70_606),
            device_read_bytes: Some(719_521_280),
            ..DiskEvidence::default()
        };
        let direct = Residency::judge(&disk, true);
        assert_eq!(direct.basis, ResidencyBasis::DataBlocks);
        let share = direct.reached_device.unwrap();
        assert!((share - 113_066.0 / 125_447.0).abs() < 1e-12, "{share}");
        assert!(direct.disk_resident());
        let cached = DiskEvidence {
            device_read_bytes: Some(4096 * 10),
            ..disk
        };
        let through_page_cache = Residency::judge(&cached, false);
        assert_eq!(through_page_cache.basis, ResidencyBasis::DeviceBytes);
        assert_eq!(through_page_cache.label(), "cache-resident");
        let full = DiskEvidence {
            key_reads: 5,
            ..disk
        };
        assert_eq!(Residency::judge(&full, true).label(), "reads no state");
    }
}
