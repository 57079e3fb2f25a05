//! The floor of a key read: what RocksDB alone takes, on one thread, to read the keys the dump's
//! BALs name, batch by batch, over the same state opened with the same options as the runs. It is
//! the row every design's cost per key read is set against: what a design pays above it is its
//! own (the shared cache, the overlay, revm's `State`, waiting), not the store's.
//!
//! Two readers: point reads, one key at a time in an order shuffled within each batch (as
//! parallel I/O's on-demand reads come, in the order transactions touch keys, not in key order:
//! read in key order, neighbouring keys share data blocks the block cache still holds), and one
//! sorted multi-get per batch and kind (how batched I/O's prefetch reads). The
//! keys of a batch are every account its merged BALs name and every slot they list, written or
//! read, each once: batched I/O's prefetch set. They are read from the pristine state, so a key
//! an earlier batch would have created is absent here (answered by the bloom filter); the floor
//! errs low, never high.

use crate::{BenchError, rng::Rng};
use alloy_primitives::{Address, U256};
use bal_replay_dump::DumpReader;
use bal_replay_host::{drop_page_cache, thread_resource_use};
use bal_replay_probe::device::IoSample;
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::StateReader;
use std::{path::Path, time::Instant};

/// Most keys a floor reads with each reader: enough for the cost per key to settle (hundreds of
/// thousands of reads), few enough that one thread's point reads at queue depth one stay within
/// minutes on a cold disk. Whole batches are read, from the dump's first, until it is reached.
pub const FLOOR_KEYS: u64 = 200_000;

/// What one reader of the floor did.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FloorReads {
    /// Keys read.
    pub keys: u64,
    /// The reading thread's CPU time (user and system), s.
    pub cpu_s: f64,
    /// Of that, in the kernel, s.
    pub system_s: f64,
    /// Wall time of the reads, s.
    pub wall_s: f64,
    /// Times the thread slept (a file read it waited for).
    pub sleeps: u64,
    /// Seconds inside RocksDB's reads (its statistics' timers).
    pub rocksdb_read_s: f64,
    /// Of that, reading SST files.
    pub rocksdb_file_read_s: f64,
    /// Read requests the state's block device completed meanwhile (every process's); none where
    /// the state has no block device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_reads: Option<u64>,
}

impl FloorReads {
    /// CPU per key read, µs.
    pub fn cpu_us_per_key(&self) -> f64 {
        self.cpu_s * 1e6 / self.keys.max(1) as f64
    }
}

/// The floor at one batch size.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadFloor {
    /// Blocks per batch, as the runs it is set against.
    pub batch: usize,
    /// Blocks whose keys were read.
    pub blocks: u64,
    /// Point reads, in an order shuffled within each batch.
    pub point: FloorReads,
    /// One sorted multi-get per batch and kind.
    pub multiget: FloorReads,
}

/// The two readers of the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Point,
    MultiGet,
}

/// The keys of one batch: accounts, then slots, each sorted and once; and every one of them in a
/// shuffled order, for the point reads.
#[derive(Default)]
struct BatchKeys {
    blocks: u64,
    accounts: Vec<Address>,
    slots: Vec<(Address, U256)>,
    shuffled: Vec<Key>,
}

/// A key of a batch, by its index in the batch's sorted accounts or slots.
#[derive(Debug, Clone, Copy)]
enum Key {
    Account(usize),
    Slot(usize),
}

/// `keys` in an order shuffled by a fixed seed (Fisher-Yates over bench-db's generator), so
/// that every run of the floor over a dump reads in the same order.
fn shuffle(keys: &mut [Key], seed: u64) {
    let mut rng = Rng(seed);
    for i in (1..keys.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        keys.swap(i, j);
    }
}

/// Each batch's keys, from the dump's first, until [`FLOOR_KEYS`] are reached.
fn batches(dump: &DumpReader, batch: usize) -> Result<Vec<BatchKeys>, BenchError> {
    let mut out = Vec::new();
    let mut current = BatchKeys::default();
    let mut keys = 0u64;
    let mut finish = |mut b: BatchKeys, out: &mut Vec<BatchKeys>| {
        b.accounts.sort_unstable();
        b.accounts.dedup();
        b.slots.sort_unstable();
        b.slots.dedup();
        b.shuffled = (0..b.accounts.len())
            .map(Key::Account)
            .chain((0..b.slots.len()).map(Key::Slot))
            .collect();
        shuffle(&mut b.shuffled, out.len() as u64);
        keys += (b.accounts.len() + b.slots.len()) as u64;
        out.push(b);
        keys >= FLOOR_KEYS
    };
    for record in dump.records() {
        let record = record?;
        for account in &record.bal {
            current.accounts.push(account.address);
            let slots = account.storage_changes.iter().map(|s| s.slot);
            let reads = account.storage_reads.iter().copied();
            current
                .slots
                .extend(slots.chain(reads).map(|slot| (account.address, slot)));
        }
        current.blocks += 1;
        if current.blocks as usize == batch.max(1) {
            let full = std::mem::take(&mut current);
            if finish(full, &mut out) {
                return Ok(out);
            }
        }
    }
    if current.blocks > 0 {
        finish(current, &mut out);
    }
    Ok(out)
}

/// Reads every batch's keys with `reader` from the state at `path`, opened read-only with
/// `options` (statistics on), the page cache dropped first where `drop_caches`.
fn read_all(
    batches: &[BatchKeys],
    path: &Path,
    options: &RocksOptions,
    drop_caches: bool,
    reader: Reader,
) -> Result<FloorReads, BenchError> {
    if drop_caches {
        drop_page_cache()?;
    }
    let store = RocksStore::open(
        path,
        &RocksOptions {
            read_only: true,
            statistics: true,
            ..options.clone()
        },
    )?;
    let counters_before = store.read_counters();
    let io_before = IoSample::take(path);
    let used_before = thread_resource_use();
    let started = Instant::now();
    let mut keys = 0u64;
    for b in batches {
        match reader {
            Reader::Point => {
                for key in &b.shuffled {
                    match *key {
                        Key::Account(i) => store.account(b.accounts[i]).map(drop)?,
                        Key::Slot(i) => {
                            let (address, slot) = b.slots[i];
                            store.storage(address, slot).map(drop)?
                        }
                    }
                }
            }
            Reader::MultiGet => {
                store.accounts_many(&b.accounts)?;
                store.storage_many(&b.slots)?;
            }
        }
        keys += (b.accounts.len() + b.slots.len()) as u64;
    }
    let wall_s = started.elapsed().as_secs_f64();
    let device_reads = IoSample::take(path).since(&io_before).device_reads;
    let used = thread_resource_use()
        .zip(used_before)
        .map(|(now, then)| now.since(&then))
        .unwrap_or_default();
    let rocks = store
        .read_counters()
        .zip(counters_before)
        .map(|(now, then)| now.since(&then))
        .unwrap_or_default();
    Ok(FloorReads {
        keys,
        cpu_s: (used.user + used.system).as_secs_f64(),
        system_s: used.system.as_secs_f64(),
        wall_s,
        sleeps: used.voluntary_switches,
        rocksdb_read_s: rocks.read_micros as f64 / 1e6,
        rocksdb_file_read_s: rocks.file_read_micros as f64 / 1e6,
        device_reads,
    })
}

/// The floor at `batch` over the state at `path`: both readers, each over a freshly opened store
/// (the page cache dropped before each where `drop_caches`, as before each run).
pub fn read_floor(
    dump: &DumpReader,
    path: &Path,
    options: &RocksOptions,
    batch: usize,
    drop_caches: bool,
) -> Result<ReadFloor, BenchError> {
    let batches = batches(dump, batch)?;
    Ok(ReadFloor {
        batch,
        blocks: batches.iter().map(|b| b.blocks).sum(),
        point: read_all(&batches, path, options, drop_caches, Reader::Point)?,
        multiget: read_all(&batches, path, options, drop_caches, Reader::MultiGet)?,
    })
}
