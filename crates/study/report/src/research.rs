//! The research's published figures (`bal-parallel-io-research.md`: 2,000 mainnet blocks
//! 23,770,000-23,771,999 on a 16-core Ryzen 9 5950X with RAID-0 NVMe, page cache dropped), kept as
//! data so a report can set ours next to them.

use bal_replay_engine::IoDesign;

/// One row of the research's "Threads | Throughput | Longest TXs Latency | Total Time" tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadsRow {
    /// Worker threads.
    pub threads: usize,
    /// Throughput, MGas/s.
    pub mgas_per_s: f64,
    /// Longest transactions' latency, seconds.
    pub longest_txs_s: f64,
    /// Total execution-with-I/O time, seconds.
    pub total_s: f64,
}

const fn row(threads: usize, mgas_per_s: f64, longest_txs_s: f64, total_s: f64) -> ThreadsRow {
    ThreadsRow {
        threads,
        mgas_per_s,
        longest_txs_s,
        total_s,
    }
}

/// Parallel I/O BAL, block by block (batch 1).
pub const PARALLEL_BATCH_1: [ThreadsRow; 6] = [
    row(1, 740.0, 6.85, 60.62),
    row(2, 1447.0, 6.75, 31.00),
    row(4, 2167.0, 8.11, 20.70),
    row(8, 2994.0, 9.02, 14.98),
    row(16, 3220.0, 8.92, 13.93),
    row(32, 3253.0, 9.57, 13.79),
];

/// Parallel I/O BAL, mega-blocks of 50 blocks.
pub const PARALLEL_BATCH_50: [ThreadsRow; 6] = [
    row(1, 943.0, 0.53, 47.55),
    row(2, 1857.0, 0.53, 24.16),
    row(4, 3505.0, 0.56, 12.80),
    row(8, 6524.0, 0.57, 6.88),
    row(16, 10842.0, 0.61, 4.13),
    row(32, 10794.0, 1.07, 4.14),
];

/// Full BAL, batch 50, 16 threads, MGas/s.
pub const FULL_BATCH_50_T16: f64 = 13881.0;

/// One row of the research's worst-case I/O table: synthetic transactions of `SLOAD`s of random
/// slots (one per 2,039 gas), over its mainnet database.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorstCaseRow {
    /// I/O design (batched or parallel).
    pub design: IoDesign,
    /// Worker threads.
    pub threads: usize,
    /// Gas per block (per mega-block), Mgas: 64, or 640 for ten blocks executed as one.
    pub block_mgas: f64,
    /// Throughput, Mgas/s.
    pub mgas_per_s: f64,
}

const fn worst(design: IoDesign, threads: usize, block_mgas: f64, mgas_per_s: f64) -> WorstCaseRow {
    WorstCaseRow {
        design,
        threads,
        block_mgas,
        mgas_per_s,
    }
}

/// The research's worst-case I/O table, as published (its detailed table; two rows at 640 M
/// gas and 32 threads differ, both kept).
pub const WORST_CASE: [WorstCaseRow; 9] = [
    worst(IoDesign::Batched, 16, 64.0, 4571.0),
    worst(IoDesign::Batched, 32, 64.0, 5818.0),
    worst(IoDesign::Batched, 48, 64.0, 6400.0),
    worst(IoDesign::Batched, 64, 64.0, 5333.0),
    worst(IoDesign::Parallel, 4, 64.0, 780.0),
    worst(IoDesign::Batched, 16, 640.0, 11034.0),
    worst(IoDesign::Batched, 32, 640.0, 12307.0),
    worst(IoDesign::Batched, 32, 640.0, 10158.0),
    worst(IoDesign::Parallel, 16, 640.0, 7804.0),
];

/// State keys per Mgas of the research's worst-case chain: one `SLOAD` of a new slot per 2,039
/// gas (about 490).
pub const WORST_CASE_KEYS_PER_MGAS: f64 = 1e6 / 2039.0;

/// The research's fastest row of `design` in its worst-case table at `block_mgas`.
pub fn worst_case_best(design: IoDesign, block_mgas: f64) -> Option<WorstCaseRow> {
    WORST_CASE
        .into_iter()
        .filter(|r| r.design == design && r.block_mgas == block_mgas)
        .max_by(|a, b| a.mgas_per_s.total_cmp(&b.mgas_per_s))
}

/// The research's RocksDB random reads (its ioarena table): (threads, reads per second, mean
/// latency in µs), kept beside the disk model that projects onto its machine.
pub const ROCKSDB_RANDOM_READS: [(usize, f64, f64); 5] = bal_replay_model::RESEARCH_ROCKSDB_READS;

/// The research's RocksDB random 4 KiB reads per second at 16 threads (its ioarena table: 180K
/// IOPS at 90 µs).
pub const ROCKSDB_IOPS_T16: f64 = ROCKSDB_RANDOM_READS[3].1;

/// The most device reads per Mgas the research's parallel I/O can have made at 16 threads, batch
/// 50: its disk's reads per second at 16 threads over its throughput there (about 16.6). More
/// reads than this and its RocksDB could not have served them in the time it measured.
pub fn parallel_device_reads_per_mgas_bound() -> f64 {
    ROCKSDB_IOPS_T16 / PARALLEL_BATCH_50[4].mgas_per_s
}

/// One row of the research's batched-vs-parallel table across batch sizes (mainnet data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchRow {
    /// I/O design.
    pub design: IoDesign,
    /// Worker threads.
    pub threads: usize,
    /// Blocks per batch.
    pub batch: usize,
    /// Mean gas per mega-block, Mgas.
    pub block_mgas: f64,
    /// Throughput, MGas/s.
    pub mgas_per_s: f64,
}

const fn brow(
    design: IoDesign,
    threads: usize,
    batch: usize,
    block_mgas: f64,
    mgas_per_s: f64,
) -> BatchRow {
    BatchRow {
        design,
        threads,
        batch,
        block_mgas,
        mgas_per_s,
    }
}

/// Batched vs parallel I/O across batch sizes.
pub const BY_BATCH: [BatchRow; 12] = [
    brow(IoDesign::Batched, 16, 1, 22.0, 3587.0),
    brow(IoDesign::Batched, 32, 1, 22.0, 3333.0),
    brow(IoDesign::Parallel, 16, 1, 22.0, 2893.0),
    brow(IoDesign::Batched, 16, 10, 224.0, 7221.0),
    brow(IoDesign::Batched, 32, 10, 224.0, 6725.0),
    brow(IoDesign::Parallel, 16, 10, 224.0, 6842.0),
    brow(IoDesign::Batched, 16, 50, 1121.0, 10159.0),
    brow(IoDesign::Batched, 32, 50, 1121.0, 10259.0),
    brow(IoDesign::Parallel, 16, 50, 1121.0, 10842.0),
    brow(IoDesign::Batched, 16, 100, 2243.0, 11129.0),
    brow(IoDesign::Batched, 32, 100, 2243.0, 11266.0),
    brow(IoDesign::Parallel, 16, 100, 2243.0, 11292.0),
];

/// Mean RLP-encoded BAL size per block, KB (1 KB = 1,000 bytes): full, batched I/O, parallel I/O.
pub const BAL_SIZE_KB: [f64; 3] = [213.0, 110.0, 71.0];

/// The research's throughput for a design, batch size and thread count, if it published one
/// (the per-thread tables first, then the batch-size table).
pub fn throughput(design: IoDesign, batch: usize, threads: usize) -> Option<f64> {
    let by_threads = |rows: &[ThreadsRow]| {
        rows.iter()
            .find(|r| r.threads == threads)
            .map(|r| r.mgas_per_s)
    };
    match (design, batch) {
        (IoDesign::Parallel, 1) => by_threads(&PARALLEL_BATCH_1),
        (IoDesign::Parallel, 50) => by_threads(&PARALLEL_BATCH_50),
        (IoDesign::Full, 50) if threads == 16 => Some(FULL_BATCH_50_T16),
        _ => None,
    }
    .or_else(|| {
        BY_BATCH
            .iter()
            .find(|r| r.design == design && r.batch == batch && r.threads == threads)
            .map(|r| r.mgas_per_s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_follow_the_tables() {
        assert_eq!(throughput(IoDesign::Parallel, 50, 2), Some(1857.0));
        assert_eq!(throughput(IoDesign::Parallel, 1, 16), Some(3220.0));
        assert_eq!(throughput(IoDesign::Parallel, 10, 16), Some(6842.0));
        assert_eq!(throughput(IoDesign::Batched, 100, 32), Some(11266.0));
        assert_eq!(throughput(IoDesign::Full, 50, 16), Some(13881.0));
        assert_eq!(throughput(IoDesign::Full, 50, 2), None);
        assert_eq!(throughput(IoDesign::Hybrid, 50, 2), None);
    }
}
