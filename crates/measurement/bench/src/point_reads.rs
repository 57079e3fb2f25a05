//! `bal-replay bench-db`: random point reads of existing keys, per reader-thread count, MDBX vs RocksDB (the
//! research's "MDBX vs. RocksDB random read benchmark").
//!
//! Method. Keys are sampled first from the store itself: a full scan of its accounts and storage
//! tables with reservoir sampling (uniform, seeded) of up to [`BenchDbOptions::sample`] keys of each
//! kind. Then, for each thread count `t`, `t` threads each do `reads / t` point reads (the first
//! threads one more for the remainder) of keys drawn uniformly from the pool (so about as many
//! account reads as slot reads), each value decoded as a replay would: reth's `Compact` for MDBX,
//! the flat encoding for RocksDB. Every read must find its key. Reported per run: IOPS (reads / wall
//! time), the mean latency of one read (timed around each read), and CPU use (the process's user +
//! system CPU time over the run / wall time, from `/proc/self/stat`).
//!
//! Warm runs (the default) read every sampled key once before the first timed run. With
//! `drop_caches`, before each run the store is closed (RocksDB's block cache goes with it; MDBX's
//! pages are unmapped, as the kernel keeps mapped pages), the page cache is dropped, and the store
//! is reopened.

use std::{
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use alloy_primitives::{B256, U256};
use bal_replay_mdbx_state::{MdbxStore, RethDb, RethDbError, StateSpec};
use bal_replay_rocks::RocksStore;
use bal_replay_state::{FlatAccount, KeyScheme, StateError, cf};

use crate::{StoreKind, VersionedResult, rng::Rng};

/// Why a bench-db run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchDbError {
    /// Opening the reth database failed.
    #[error("opening {spec}")]
    OpenMdbx {
        /// The store.
        spec: StateSpec,
        /// Why.
        #[source]
        source: Box<RethDbError>,
    },
    /// A read or opening the RocksDB state failed.
    #[error("reading {spec}")]
    State {
        /// The store.
        spec: StateSpec,
        /// Why.
        #[source]
        source: StateError,
    },
    /// The store has no accounts and no slots to read.
    #[error("{spec} holds no account and no slot to sample")]
    Empty {
        /// The store.
        spec: StateSpec,
    },
    /// A sampled key was not found again (the store changed, or a reader is wrong).
    #[error("{spec}: {missing} of {reads} reads of sampled keys found nothing")]
    Missing {
        /// The store.
        spec: StateSpec,
        /// Reads that found nothing.
        missing: u64,
        /// Reads done.
        reads: u64,
    },
    /// Dropping the page cache failed.
    #[error("dropping the page cache")]
    DropCaches(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A reader thread panicked.
    #[error("a reader thread panicked")]
    Panicked,
    /// More keys per multi-get call than [`MAX_MULTIGET_KEYS`].
    #[error(
        "multi-gets of {keys} keys per call: at most {MAX_MULTIGET_KEYS} (a call's keys are held \
         in memory and read as one batch)"
    )]
    TooManyKeysPerCall {
        /// Keys per call asked for.
        keys: usize,
    },
    /// A run's reader threads could not all be started (the system's thread or memory limit).
    #[error("running the reads of {spec}")]
    Run {
        /// The store.
        spec: StateSpec,
        /// Why.
        #[source]
        source: RunError,
    },
}

/// Why a timed run ([`run_reads`]) stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A read failed.
    #[error(transparent)]
    Read(#[from] StateError),
    /// A reader thread could not be started: the readers already started stop, and the run
    /// fails as a whole.
    #[error(
        "cannot start reader thread {index} of {threads} (the system's limit on threads or \
         memory: run fewer threads)"
    )]
    ThreadStart {
        /// The thread that could not start (from 0).
        index: usize,
        /// The run's thread count.
        threads: usize,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Most keys per multi-get call ([`BenchDbOptions::multiget_keys`]): a call's keys are gathered,
/// copied and sorted in memory, and RocksDB reads them as one batch, so a larger call only costs
/// memory (a million keys is tens of MiB per thread) and measures nothing more.
pub const MAX_MULTIGET_KEYS: usize = 1 << 20;

/// How to run bench-db.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchDbOptions {
    /// Reader-thread counts, one run each.
    pub threads: Vec<usize>,
    /// Reads per run (split over its threads).
    pub reads: u64,
    /// At most this many sampled keys of each kind (accounts, slots).
    pub sample: usize,
    /// Seed of the sampling and of the reads' key choice.
    pub seed: u64,
    /// Drop the page cache (and reopen the store) before each run.
    pub drop_caches: bool,
    /// RocksDB direct reads (O_DIRECT) and this block cache, for a pread-pool queue-depth sweep
    /// that reaches the disk: each reader thread has one read in flight.
    pub rocks_direct_io: bool,
    /// RocksDB block cache, bytes.
    pub rocks_block_cache_bytes: usize,
    /// RocksDB: index and filter partitions pinned at open, beyond the block cache
    /// ([`bal_replay_rocks::RocksOptions::pin_metadata`]).
    pub rocks_pin_metadata: bool,
    /// The read engine: `None` for point reads (a pread pool: one read in flight per thread);
    /// `Some(n)` for sorted multi-gets of `n` keys per call ([`PointReads::read_sorted`]).
    pub multiget_keys: Option<usize>,
}

impl Default for BenchDbOptions {
    fn default() -> Self {
        Self {
            threads: vec![1, 2, 4, 8, 16, 32],
            reads: 1_000_000,
            sample: 100_000,
            seed: 1,
            drop_caches: false,
            rocks_direct_io: false,
            rocks_block_cache_bytes: bal_replay_rocks::RocksOptions::default().block_cache_bytes,
            rocks_pin_metadata: false,
            multiget_keys: None,
        }
    }
}

/// One run: one store, one thread count.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchDbRow {
    /// Reader threads.
    pub threads: usize,
    /// Reads done.
    pub reads: u64,
    /// Of which account reads.
    pub account_reads: u64,
    /// Of which slot reads.
    pub slot_reads: u64,
    /// Reads that found their key (all of them, or the run fails).
    pub found: u64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Reads per second.
    pub iops: f64,
    /// Mean time of one read, microseconds.
    pub avg_latency_us: f64,
    /// User + system CPU time of the process over the run, seconds.
    pub cpu_s: f64,
    /// `cpu_s / wall_s`, in percent of one core (200% = two cores busy).
    pub cpu_pct: f64,
    /// Read requests the store's block device completed during the run (every process's); none
    /// where the store has no block device.
    pub device_reads: Option<u64>,
    /// Keys per sorted multi-get, or none for point reads.
    pub multiget_keys: Option<usize>,
    /// RocksDB read its multi-gets' data blocks through io_uring
    /// ([`bal_replay_rocks::io_uring::read_path`]).
    pub io_uring: bool,
    /// Read system calls of the process during the run (`/proc/self/io` `syscr`): one `pread`
    /// per block read without io_uring, fewer with it (the evidence that io_uring was used).
    pub read_syscalls: Option<u64>,
}

impl BenchDbRow {
    /// Read requests the device completed per second of the run, where it has a device.
    pub fn device_reads_per_s(&self) -> Option<f64> {
        self.device_reads
            .filter(|_| self.wall_s > 0.0)
            .map(|d| d as f64 / self.wall_s)
    }
}

/// The schema version of [`BenchDbResult`] this build writes and reads. Files written before
/// results carried one (a bare array of stores) are version 1.
pub const SCHEMA_VERSION: u32 = 2;

/// What `bench-db --json` writes: every store's runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchDbResult {
    /// [`SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// One entry per store benched.
    pub stores: Vec<BenchDbReport>,
}

impl VersionedResult for BenchDbResult {
    const KIND: &'static str = "bench-db result";
    const SCHEMA_VERSION: u32 = SCHEMA_VERSION;

    /// Every row's numbers, which the report divides and draws, within [`crate::bounds`].
    fn check(&self) -> Result<(), crate::bounds::FieldError> {
        check_bench_db(self)
    }
}

/// Whether `bytes` hold a `bench-db` result's shape, of any version: stores (objects with a
/// `backend` and `rows`) in a non-empty bare array (version 1) or in an object's `stores` array.
/// Values are skipped, never built, so a file of any size costs no memory beyond its bytes;
/// anything else in the stores' place (a number, a string, another array) is not a store.
pub fn looks_like_bench_db(bytes: &[u8]) -> bool {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// One store: an object with both a `backend` and `rows`.
    struct Store(bool);
    /// The stores: whether there is one, and whether all are.
    struct Stores(bool, bool);
    /// The document.
    struct Shape(bool);
    struct StoreVisitor;
    struct StoresVisitor;
    struct ShapeVisitor;

    impl<'de> Visitor<'de> for StoreVisitor {
        type Value = Store;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a store")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Store, A::Error> {
            let (mut backend, mut rows) = (false, false);
            while let Some(key) = map.next_key::<String>()? {
                backend |= key == "backend";
                rows |= key == "rows";
                map.next_value::<IgnoredAny>()?;
            }
            Ok(Store(backend && rows))
        }
    }
    impl<'de> Visitor<'de> for StoresVisitor {
        type Value = Stores;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of stores")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Stores, A::Error> {
            let (mut any, mut all) = (false, true);
            while let Some(Store(store)) = seq.next_element()? {
                any = true;
                all &= store;
            }
            Ok(Stores(any, all))
        }
    }
    impl<'de> Visitor<'de> for ShapeVisitor {
        type Value = Shape;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object or array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Shape, A::Error> {
            let Stores(any, all) = StoresVisitor.visit_seq(seq)?;
            Ok(Shape(any && all))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
            let mut shape = false;
            while let Some(key) = map.next_key::<String>()? {
                if key == "stores" {
                    let Stores(_, all) = map.next_value()?;
                    shape = all;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Shape(shape))
        }
    }
    impl<'de> serde::Deserialize<'de> for Store {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(StoreVisitor)
        }
    }
    impl<'de> serde::Deserialize<'de> for Stores {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_seq(StoresVisitor)
        }
    }
    impl<'de> serde::Deserialize<'de> for Shape {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(ShapeVisitor)
        }
    }
    serde_json::from_slice::<Shape>(bytes).is_ok_and(|s| s.0)
}

/// All runs over one store.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchDbReport {
    /// The store: `mdbx` or `rocksdb` in JSON.
    pub backend: StoreKind,
    /// The store's directory.
    pub path: String,
    /// `plain` or `hashed` keys.
    pub key_scheme: KeyScheme,
    /// Accounts sampled.
    pub sampled_accounts: usize,
    /// Slots sampled.
    pub sampled_slots: usize,
    /// Accounts in the store.
    pub total_accounts: u64,
    /// Slots in the store.
    pub total_slots: u64,
    /// Page cache dropped before each run.
    pub cold: bool,
    /// CPUs of the machine.
    pub cpus: usize,
    /// One row per thread count.
    pub rows: Vec<BenchDbRow>,
}

/// Point reads by the store's own keys (addresses or their hashes), decoded.
pub trait PointReads: Sync {
    /// The account under `key`.
    fn read_account(&self, key: &[u8]) -> Result<Option<FlatAccount>, StateError>;
    /// The slot `slot_key` of `account_key` (zero when absent).
    fn read_slot(&self, account_key: &[u8], slot_key: &[u8]) -> Result<U256, StateError>;
    /// How many of `keys` exist, read in key order: one by one unless the store has a batched
    /// read (RocksDB's multi-get, which shares index and filter lookups between the keys of one
    /// file).
    fn read_sorted(&self, keys: &mut [&SampledKey]) -> Result<u64, StateError> {
        keys.sort_unstable();
        let mut found = 0;
        for key in keys.iter() {
            found += u64::from(read_one_found(self, key)?);
        }
        Ok(found)
    }
}

fn read_one_found<R: PointReads + ?Sized>(
    reader: &R,
    key: &SampledKey,
) -> Result<bool, StateError> {
    Ok(match key {
        SampledKey::Account(k) => reader.read_account(k)?.is_some(),
        SampledKey::Slot(a, s) => !reader.read_slot(a, s.as_slice())?.is_zero(),
    })
}

impl PointReads for MdbxStore<'_> {
    fn read_account(&self, key: &[u8]) -> Result<Option<FlatAccount>, StateError> {
        self.account_by_key(key)
    }
    fn read_slot(&self, account_key: &[u8], slot_key: &[u8]) -> Result<U256, StateError> {
        self.storage_by_key(account_key, slot_key)
    }
}

/// RocksDB point reads by the store's own keys: [`RocksStore`]'s reads (pinned gets, one reused
/// `ReadOptions`), so the bench measures the store, not key hashing.
impl PointReads for RocksStore {
    fn read_account(&self, key: &[u8]) -> Result<Option<FlatAccount>, StateError> {
        self.account_by_key(key)
    }
    fn read_slot(&self, account_key: &[u8], slot_key: &[u8]) -> Result<U256, StateError> {
        self.storage_by_key(account_key, slot_key)
    }
    fn read_sorted(&self, keys: &mut [&SampledKey]) -> Result<u64, StateError> {
        let mut accounts = Vec::new();
        let mut slots = Vec::new();
        for key in keys.iter() {
            match key {
                SampledKey::Account(k) => accounts.push(k.clone()),
                SampledKey::Slot(a, s) => slots.push([a.as_slice(), s.as_slice()].concat()),
            }
        }
        accounts.sort_unstable();
        slots.sort_unstable();
        let found = self.multi_get_sorted_found(bal_replay_state::cf::ACCOUNTS, &accounts)?
            + self.multi_get_sorted_found(bal_replay_state::cf::STORAGE, &slots)?;
        Ok(found as u64)
    }
}

/// A sampled key (ordered as the store orders them: accounts by key, slots by account then slot).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SampledKey {
    /// An account key.
    Account(Vec<u8>),
    /// An account key and a slot key.
    Slot(Vec<u8>, B256),
}

/// Keys sampled from a store, and how many of each kind it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// The sampled keys, accounts first.
    pub keys: Vec<SampledKey>,
    /// Accounts sampled.
    pub accounts: usize,
    /// Accounts in the store.
    pub total_accounts: u64,
    /// Slots in the store.
    pub total_slots: u64,
}

/// Reservoir sampling (algorithm R): a uniform sample of at most `cap` items of a stream.
struct Reservoir<T> {
    items: Vec<T>,
    seen: u64,
    cap: usize,
    rng: Rng,
}

impl<T> Reservoir<T> {
    fn new(cap: usize, seed: u64) -> Self {
        Self {
            items: Vec::new(),
            seen: 0,
            cap,
            rng: Rng(seed),
        }
    }

    fn offer(&mut self, make: impl FnOnce() -> T) {
        self.seen += 1;
        if self.items.len() < self.cap {
            self.items.push(make());
        } else {
            let j = self.rng.below(self.seen);
            if let Some(slot) = self.items.get_mut(j as usize) {
                *slot = make();
            }
        }
    }
}

/// Samples up to `cap` account keys and `cap` slot keys of the MDBX state.
pub fn sample_mdbx(store: &MdbxStore<'_>, cap: usize, seed: u64) -> Result<Sample, StateError> {
    let mut accounts = Reservoir::new(cap, seed);
    store.for_each_account_key(|k| accounts.offer(|| k.to_vec()))?;
    let mut slots = Reservoir::new(cap, seed ^ 0x5a5a);
    store.for_each_slot_key(|k, s| slots.offer(|| (k.to_vec(), B256::from_slice(s))))?;
    Ok(finish_sample(accounts, slots))
}

/// Samples up to `cap` account keys and `cap` slot keys of the RocksDB state.
pub fn sample_rocks(store: &RocksStore, cap: usize, seed: u64) -> Result<Sample, StateError> {
    let account_len = store.key_scheme().account_key_len();
    let mut accounts = Reservoir::new(cap, seed);
    store.for_each_key(cf::ACCOUNTS, |k| accounts.offer(|| k.to_vec()))?;
    let mut slots = Reservoir::new(cap, seed ^ 0x5a5a);
    store.for_each_key(cf::STORAGE, |k| {
        if k.len() == account_len + 32 {
            let (a, s) = k.split_at(account_len);
            slots.offer(|| (a.to_vec(), B256::from_slice(s)));
        }
    })?;
    Ok(finish_sample(accounts, slots))
}

fn finish_sample(accounts: Reservoir<Vec<u8>>, slots: Reservoir<(Vec<u8>, B256)>) -> Sample {
    let n_accounts = accounts.items.len();
    let mut keys: Vec<SampledKey> = accounts
        .items
        .into_iter()
        .map(SampledKey::Account)
        .collect();
    keys.extend(slots.items.into_iter().map(|(a, s)| SampledKey::Slot(a, s)));
    Sample {
        keys,
        accounts: n_accounts,
        total_accounts: accounts.seen,
        total_slots: slots.seen,
    }
}

/// The process's user + system CPU time so far, from `/proc/self/stat` (fields 14 and 15, in clock
/// ticks of 1/100 s: Linux's `USER_HZ`, fixed at 100 for every architecture's user ABI). `None` off
/// Linux.
pub fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after it follow its closing paren.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // `rest` starts at field 3 (state); utime is field 14, stime 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// What one reader thread of a timed run did.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// Reads done.
    reads: u64,
    /// Of which account reads.
    accounts: u64,
    /// Reads that found their key.
    found: u64,
    /// Time spent inside reads.
    busy: Duration,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, other: Self) {
        self.reads += other.reads;
        self.accounts += other.accounts;
        self.found += other.found;
        self.busy += other.busy;
    }
}

/// One reader thread: `share` reads of keys drawn from `keys` with its own generator (seeded from
/// `seed` and its index `t`), each timed, or with `multiget` keys per call, each call timed; the
/// first error stops every thread.
fn read_share(
    reader: &dyn PointReads,
    keys: &[SampledKey],
    share: u64,
    (seed, t): (u64, u64),
    multiget: Option<usize>,
    stop: &AtomicBool,
) -> Result<Tally, StateError> {
    let mut rng = Rng(seed ^ t.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let n = keys.len() as u64;
    let mut tally = Tally::default();
    let per_call = multiget.unwrap_or(1).max(1) as u64;
    // Never more than this thread reads: a call larger than the run is its whole share.
    let mut batch: Vec<&SampledKey> = Vec::with_capacity(per_call.min(share) as usize);
    let mut left = share;
    while left > 0 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        batch.clear();
        batch.extend((0..per_call.min(left)).map(|_| &keys[rng.below(n) as usize]));
        left -= batch.len() as u64;
        let accounts = batch
            .iter()
            .filter(|k| matches!(k, SampledKey::Account(_)))
            .count() as u64;
        let t0 = Instant::now();
        let outcome = match multiget {
            Some(_) => reader.read_sorted(&mut batch),
            None => read_one_found(reader, batch[0]).map(u64::from),
        };
        tally.busy += t0.elapsed();
        let found = outcome.inspect_err(|_| {
            stop.store(true, Ordering::Relaxed);
        })?;
        tally.reads += batch.len() as u64;
        tally.accounts += accounts;
        tally.found += found;
    }
    Ok(tally)
}

/// One timed run: `threads` threads reading `reads` keys drawn from `keys`.
pub fn run_reads(
    reader: &dyn PointReads,
    keys: &[SampledKey],
    threads: usize,
    reads: u64,
    seed: u64,
    multiget: Option<usize>,
) -> Result<BenchDbRow, RunError> {
    let threads = threads.max(1);
    let stop = AtomicBool::new(false);
    let cpu_before = process_cpu_time();
    let start = Instant::now();
    let results: Vec<Result<Tally, RunError>> = std::thread::scope(|s| {
        // Grown as threads start: a count no system can start is not allocated up front.
        let mut handles = Vec::new();
        for t in 0..threads as u64 {
            let share = reads / threads as u64 + u64::from(t < reads % threads as u64);
            let stop = &stop;
            let spawned = std::thread::Builder::new()
                .name(format!("bench-db-reader-{t}"))
                .spawn_scoped(s, move || {
                    read_share(reader, keys, share, (seed, t), multiget, stop)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(source) => {
                    // The readers already started stop at their next read; the scope joins them.
                    stop.store(true, Ordering::Relaxed);
                    return vec![Err(RunError::ThreadStart {
                        index: t as usize,
                        threads,
                        source,
                    })];
                }
            }
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| {
                        Err(StateError::Unavailable {
                            reason: "a reader thread panicked".into(),
                        })
                    })
                    .map_err(RunError::from)
            })
            .collect()
    });
    let wall = start.elapsed();
    let cpu = match (cpu_before, process_cpu_time()) {
        (Some(before), Some(after)) => after.saturating_sub(before),
        _ => Duration::ZERO,
    };
    let mut total = Tally::default();
    for r in results {
        total += r?;
    }
    let done = total.reads;
    let wall_s = wall.as_secs_f64().max(1e-9);
    Ok(BenchDbRow {
        threads,
        reads: done,
        account_reads: total.accounts,
        slot_reads: done - total.accounts,
        found: total.found,
        wall_s,
        iops: done as f64 / wall_s,
        avg_latency_us: if done == 0 {
            0.0
        } else {
            total.busy.as_secs_f64() * 1e6 / done as f64
        },
        cpu_s: cpu.as_secs_f64(),
        cpu_pct: cpu.as_secs_f64() / wall_s * 100.0,
        device_reads: None,
        multiget_keys: multiget,
        io_uring: false,
        read_syscalls: None,
    })
}

/// A function that drops the kernel's page cache (the binary passes the engine's).
pub type DropCaches<'a> = &'a dyn Fn() -> Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Runs bench-db over the store `spec` names. `drop_caches` is called before each run when
/// [`BenchDbOptions::drop_caches`] is set.
pub fn bench_db(
    spec: &StateSpec,
    opts: &BenchDbOptions,
    drop_caches: DropCaches<'_>,
) -> Result<BenchDbReport, BenchDbError> {
    if let Some(keys) = opts.multiget_keys.filter(|&k| k > MAX_MULTIGET_KEYS) {
        return Err(BenchDbError::TooManyKeysPerCall { keys });
    }
    let (sample, scheme, rows) = match spec {
        StateSpec::Mdbx(path) => bench_mdbx(spec, path, opts, drop_caches)?,
        StateSpec::RocksDb(path) => bench_rocks(spec, path, opts, drop_caches)?,
    };
    Ok(BenchDbReport {
        backend: StoreKind::of(spec),
        path: spec.path().display().to_string(),
        key_scheme: scheme,
        sampled_accounts: sample.accounts,
        sampled_slots: sample.keys.len() - sample.accounts,
        total_accounts: sample.total_accounts,
        total_slots: sample.total_slots,
        cold: opts.drop_caches,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        rows,
    })
}

/// The sample a store's runs read, the store's key scheme, and one row per run.
type StoreRuns = (Sample, KeyScheme, Vec<BenchDbRow>);

/// bench-db over reth's MDBX at `path`. Warm: the store the sample came from, one warm-up pass,
/// then every thread count. Cold: for each thread count, the page cache dropped and the database
/// opened afresh.
fn bench_mdbx(
    spec: &StateSpec,
    path: &Path,
    opts: &BenchDbOptions,
    drop_caches: DropCaches<'_>,
) -> Result<StoreRuns, BenchDbError> {
    let open_error = |source| BenchDbError::OpenMdbx {
        spec: spec.clone(),
        source: Box::new(source),
    };
    let mut rows = Vec::new();
    let (sample, scheme) = {
        let db = RethDb::open_for_random_reads(path).map_err(open_error)?;
        let store = MdbxStore::new(&db).map_err(open_error)?;
        let sample =
            sample_mdbx(&store, opts.sample, opts.seed).map_err(|e| state_error(spec, e))?;
        check_sample(spec, &sample)?;
        if !opts.drop_caches {
            rows = warm_rows(spec, opts, &store, &sample.keys)?;
        }
        (sample, store.key_scheme())
    };
    if opts.drop_caches {
        for &threads in &opts.threads {
            drop_caches().map_err(BenchDbError::DropCaches)?;
            let db = RethDb::open_for_random_reads(path).map_err(open_error)?;
            let store = MdbxStore::new(&db).map_err(open_error)?;
            rows.push(timed_row(spec, opts, &store, &sample.keys, threads)?);
        }
    }
    Ok((sample, scheme, rows))
}

/// bench-db over the RocksDB flat state at `path`, warm or cold as [`bench_mdbx`].
fn bench_rocks(
    spec: &StateSpec,
    path: &Path,
    opts: &BenchDbOptions,
    drop_caches: DropCaches<'_>,
) -> Result<StoreRuns, BenchDbError> {
    let options = bal_replay_rocks::RocksOptions {
        read_only: true,
        direct_io: opts.rocks_direct_io,
        block_cache_bytes: opts.rocks_block_cache_bytes,
        pin_metadata: opts.rocks_pin_metadata,
        ..bal_replay_rocks::RocksOptions::default()
    };
    let open = || RocksStore::open(path, &options).map_err(|e| state_error(spec, e));
    let store = open()?;
    let sample = sample_rocks(&store, opts.sample, opts.seed).map_err(|e| state_error(spec, e))?;
    check_sample(spec, &sample)?;
    let scheme = store.key_scheme();
    let rows = if opts.drop_caches {
        drop(store);
        let mut rows = Vec::new();
        for &threads in &opts.threads {
            drop_caches().map_err(BenchDbError::DropCaches)?;
            let store = open()?;
            rows.push(timed_row(spec, opts, &store, &sample.keys, threads)?);
        }
        rows
    } else {
        warm_rows(spec, opts, &store, &sample.keys)?
    };
    Ok((sample, scheme, rows))
}

fn state_error(spec: &StateSpec, source: StateError) -> BenchDbError {
    BenchDbError::State {
        spec: spec.clone(),
        source,
    }
}

/// One warm-up pass over `keys`, then a timed run per thread count.
fn warm_rows(
    spec: &StateSpec,
    opts: &BenchDbOptions,
    reader: &dyn PointReads,
    keys: &[SampledKey],
) -> Result<Vec<BenchDbRow>, BenchDbError> {
    warm_up(reader, keys).map_err(|source| BenchDbError::State {
        spec: spec.clone(),
        source,
    })?;
    opts.threads
        .iter()
        .map(|&threads| timed_row(spec, opts, reader, keys, threads))
        .collect()
}

/// One timed run, checked to have found every key.
fn timed_row(
    spec: &StateSpec,
    opts: &BenchDbOptions,
    reader: &dyn PointReads,
    keys: &[SampledKey],
    threads: usize,
) -> Result<BenchDbRow, BenchDbError> {
    let before = bal_replay_probe::device::IoSample::take(spec.path());
    let mut row = run_reads(
        reader,
        keys,
        threads,
        opts.reads,
        opts.seed,
        opts.multiget_keys,
    )
    .map_err(|source| match source {
        RunError::Read(source) => BenchDbError::State {
            spec: spec.clone(),
            source,
        },
        source => BenchDbError::Run {
            spec: spec.clone(),
            source,
        },
    })?;
    let delta = bal_replay_probe::device::IoSample::take(spec.path()).since(&before);
    row.device_reads = delta.device_reads;
    row.read_syscalls = delta.read_syscalls;
    row.io_uring = bal_replay_rocks::io_uring::read_path().is_io_uring()
        && matches!(spec, StateSpec::RocksDb(_));
    checked(spec, row)
}

fn check_sample(spec: &StateSpec, sample: &Sample) -> Result<(), BenchDbError> {
    if sample.keys.is_empty() {
        Err(BenchDbError::Empty { spec: spec.clone() })
    } else {
        Ok(())
    }
}

/// Every sampled key exists, so every read must find its key.
fn checked(spec: &StateSpec, row: BenchDbRow) -> Result<BenchDbRow, BenchDbError> {
    if row.found == row.reads {
        Ok(row)
    } else {
        Err(BenchDbError::Missing {
            spec: spec.clone(),
            missing: row.reads - row.found,
            reads: row.reads,
        })
    }
}

/// Reads every sampled key once, so warm runs start with the keys' pages (and RocksDB's blocks)
/// cached.
fn warm_up(reader: &dyn PointReads, keys: &[SampledKey]) -> Result<(), StateError> {
    for key in keys {
        read_one_found(reader, key)?;
    }
    Ok(())
}

/// The research's table: one row per thread count and store, thread counts ascending.
pub fn render_bench_db(reports: &[BenchDbReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!(
            "{} {} ({} keys): {} of {} accounts and {} of {} slots sampled{}\n",
            r.backend,
            r.path,
            r.key_scheme,
            r.sampled_accounts,
            r.total_accounts,
            r.sampled_slots,
            r.total_slots,
            if r.cold {
                ", page cache dropped before each run"
            } else {
                ", warm"
            }
        ));
    }
    let cpus = reports.first().map_or(1, |r| r.cpus);
    out.push_str(&format!(
        "\n| Threads | Database | Engine | Reads | IOPS | Avg latency (µs) | CPU (% of one core; {cpus} cores) | CPU µs / read | Device reads / read | Read syscalls / device read |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
    ));
    let mut rows: Vec<(&BenchDbReport, &BenchDbRow)> = reports
        .iter()
        .flat_map(|r| r.rows.iter().map(move |row| (r, row)))
        .collect();
    rows.sort_by_key(|(_, row)| row.threads);
    for (r, row) in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.1} | {} | {} |\n",
            row.threads,
            r.backend.backend_name(),
            match (row.multiget_keys, row.io_uring) {
                (None, _) => "point reads".to_string(),
                (Some(n), false) => format!("sorted multi-get of {n}"),
                (Some(n), true) => format!("sorted multi-get of {n}, io_uring"),
            },
            row.reads,
            human(row.iops),
            row.avg_latency_us,
            row.cpu_pct,
            row.cpu_s * 1e6 / row.reads.max(1) as f64,
            row.device_reads.map_or("-".to_string(), |d| format!(
                "{:.2}",
                d as f64 / row.reads.max(1) as f64
            )),
            match (row.read_syscalls, row.device_reads) {
                (Some(s), Some(d)) if d > 0 => format!("{:.2}", s as f64 / d as f64),
                _ => "-".to_string(),
            }
        ));
    }
    out
}

/// `12.3K`, `1.05M`.
fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Writes `reports` to `path` as a [`BenchDbResult`].
pub fn write_json(reports: &[BenchDbReport], path: &std::path::Path) -> std::io::Result<()> {
    let result = BenchDbResult {
        schema_version: SCHEMA_VERSION,
        stores: reports.to_vec(),
    };
    crate::write_result(path, &result, crate::Layout::Pretty)
}

/// Checks every number of a `bench-db` result: each row's rates divide by its wall time.
fn check_bench_db(result: &BenchDbResult) -> Result<(), crate::bounds::FieldError> {
    for (i, store) in result.stores.iter().enumerate() {
        check_store(&format!("stores[{i}]"), store)?;
    }
    Ok(())
}

fn check_store(at: &str, store: &BenchDbReport) -> Result<(), crate::bounds::FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    for (name, value) in [
        ("sampled_accounts", store.sampled_accounts as u64),
        ("sampled_slots", store.sampled_slots as u64),
        ("total_accounts", store.total_accounts),
        ("total_slots", store.total_slots),
    ] {
        bal_replay_results::bounds::count(|| field(name), value)?;
    }
    bal_replay_results::bounds::threads(|| field("cpus"), store.cpus as u64)?;
    for (r, row) in store.rows.iter().enumerate() {
        check_db_row(&field(&format!("rows[{r}]")), row)?;
    }
    Ok(())
}

fn check_db_row(at: &str, row: &BenchDbRow) -> Result<(), crate::bounds::FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    bal_replay_results::bounds::threads(|| field("threads"), row.threads as u64)?;
    for (name, value) in [
        ("reads", Some(row.reads)),
        ("account_reads", Some(row.account_reads)),
        ("slot_reads", Some(row.slot_reads)),
        ("found", Some(row.found)),
        ("device_reads", row.device_reads),
        ("multiget_keys", row.multiget_keys.map(|k| k as u64)),
        ("read_syscalls", row.read_syscalls),
    ] {
        if let Some(value) = value {
            bal_replay_results::bounds::count(|| field(name), value)?;
        }
    }
    bal_replay_results::bounds::seconds(|| field("wall_s"), row.wall_s)?;
    // A read takes at least a nanosecond of some thread's time.
    let max_iops = 1e9 * crate::bounds::MAX_THREADS as f64;
    bal_replay_results::bounds::within(
        || field("iops"),
        row.iops,
        (0.0, max_iops),
        "reads a second",
    )?;
    bal_replay_results::bounds::within(
        || field("avg_latency_us"),
        row.avg_latency_us,
        (0.0, bal_replay_results::bounds::MAX_SECONDS * 1e6),
        "microseconds",
    )?;
    bal_replay_results::bounds::part_seconds(|| field("cpu_s"), row.cpu_s)?;
    bal_replay_results::bounds::within(
        || field("cpu_pct"),
        row.cpu_pct,
        (0.0, 100.0 * crate::bounds::MAX_THREADS as f64),
        "percent of one core",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservoir_is_uniform_enough_and_bounded() {
        let mut r = Reservoir::new(100, 7);
        for i in 0..10_000u64 {
            r.offer(|| i);
        }
        assert_eq!(r.items.len(), 100);
        assert_eq!(r.seen, 10_000);
        // A uniform sample of 0..10000 has a mean near 5000.
        let mean = r.items.iter().sum::<u64>() as f64 / 100.0;
        assert!((3500.0..6500.0).contains(&mean), "{mean}");
        let mut small = Reservoir::new(100, 7);
        for i in 0..10u64 {
            small.offer(|| i);
        }
        assert_eq!(small.items, (0..10).collect::<Vec<_>>());
    }

    fn store() -> BenchDbReport {
        BenchDbReport {
            backend: StoreKind::Mdbx,
            path: "/data/reth/db".into(),
            key_scheme: KeyScheme::Hashed,
            sampled_accounts: 10,
            sampled_slots: 20,
            total_accounts: 100,
            total_slots: 200,
            cold: true,
            cpus: 2,
            rows: vec![BenchDbRow {
                threads: 1,
                reads: 30,
                account_reads: 10,
                slot_reads: 20,
                found: 30,
                wall_s: 0.5,
                iops: 60.0,
                avg_latency_us: 16_000.0,
                cpu_s: 0.25,
                cpu_pct: 50.0,
                device_reads: Some(30),
                multiget_keys: None,
                io_uring: false,
                read_syscalls: None,
            }],
        }
    }

    #[test]
    fn a_bench_db_result_keeps_its_words_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench-db.json");
        write_json(&[store()], &path).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(json["schema_version"], 2);
        // The enums are written as the words a version-1 file held.
        assert_eq!(json["stores"][0]["backend"], "mdbx");
        assert_eq!(json["stores"][0]["key_scheme"], "hashed");
        let back: BenchDbResult = crate::read_result(&path).unwrap();
        assert_eq!(back.stores, [store()]);
    }

    /// A row's wall time of 5e-324 s kept the report's key-point search spinning: refused at
    /// load, naming the field.
    #[test]
    fn a_bench_db_result_with_numbers_no_run_records_is_refused() {
        let read = |edit: &dyn Fn(&mut BenchDbRow)| {
            let mut s = store();
            edit(&mut s.rows[0]);
            let result = BenchDbResult {
                schema_version: SCHEMA_VERSION,
                stores: vec![s],
            };
            crate::parse_result::<BenchDbResult>(
                Path::new("db.json"),
                &serde_json::to_vec(&result).unwrap(),
            )
            .map_err(|e| e.to_string())
        };
        read(&|_| {}).unwrap();
        assert_eq!(
            read(&|r| r.wall_s = 5e-324).unwrap_err(),
            "db.json: stores[0].rows[0].wall_s = 5e-324: expected a number from 1e-9 to 1e7 (seconds of a run that took time)"
        );
        assert!(
            read(&|r| r.iops = 1e300)
                .unwrap_err()
                .starts_with("db.json: stores[0].rows[0].iops = 1e300: expected"),
        );
        assert!(
            read(&|r| r.threads = 0)
                .unwrap_err()
                .starts_with("db.json: stores[0].rows[0].threads = 0: expected from 1 to 4096"),
        );
    }

    /// What a bench-db result looks like is told without building its values: versions 1 and 2
    /// do, a bench result, an array of numbers or of other objects do not.
    #[test]
    fn a_bench_db_result_is_told_by_its_shape() {
        let v2 = serde_json::to_vec(&BenchDbResult {
            schema_version: SCHEMA_VERSION,
            stores: vec![store()],
        })
        .unwrap();
        assert!(looks_like_bench_db(&v2));
        assert!(looks_like_bench_db(
            &serde_json::to_vec(&[store()]).unwrap()
        ));
        assert!(looks_like_bench_db(
            br#"{"schema_version": 2, "stores": []}"#
        ));
        for not in [
            &b"[]"[..],
            b"[1, 2, 3]",
            br#"[{"backend": "mdbx"}]"#,
            br#"{"stores": [1]}"#,
            br#"{"stores": 1}"#,
            br#"{"runs": []}"#,
            b"not json",
            b"7",
        ] {
            assert!(
                !looks_like_bench_db(not),
                "{}",
                String::from_utf8_lossy(not)
            );
        }
    }

    #[test]
    fn the_bench_db_result_format_is_its_golden_file() {
        let golden =
            bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        let result = BenchDbResult {
            schema_version: SCHEMA_VERSION,
            stores: vec![store()],
        };
        bal_replay_results::assert_golden(&golden, &result);
    }

    #[test]
    fn a_bench_db_result_of_another_schema_version_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        // Version 1 was a bare array of stores.
        let v1 = dir.path().join("v1.json");
        std::fs::write(&v1, serde_json::to_vec(&[store()]).unwrap()).unwrap();
        let err = crate::read_result::<BenchDbResult>(&v1).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: written with bench-db result schema version 1, this build reads version 2",
                v1.display()
            )
        );
        let v99 = dir.path().join("v99.json");
        let json = serde_json::json!({"schema_version": 99, "stores": []});
        std::fs::write(&v99, serde_json::to_vec(&json).unwrap()).unwrap();
        let err = crate::read_result::<BenchDbResult>(&v99).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: written with bench-db result schema version 99, this build reads version 2",
                v99.display()
            )
        );
    }

    #[test]
    fn cpu_time_is_read() {
        let before = process_cpu_time().expect("linux");
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu_time().unwrap() >= before);
    }
}
