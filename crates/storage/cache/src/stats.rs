//! Hit, miss and disk-read counters of the shared cache.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};
use thread_local::ThreadLocal;

/// What a store read was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadKind {
    /// An account, read on demand.
    Account,
    /// A storage slot, read on demand.
    Storage,
    /// Contract code, read on demand.
    Code,
    /// A multi-get of accounts (prefetch).
    PrefetchAccount,
    /// A multi-get of storage slots (prefetch).
    PrefetchStorage,
}

impl ReadKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ReadKind; 5] = [
        Self::Account,
        Self::Storage,
        Self::Code,
        Self::PrefetchAccount,
        Self::PrefetchStorage,
    ];

    /// A short lowercase name (used as a metric label).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Account => "account",
            Self::Storage => "storage",
            Self::Code => "code",
            Self::PrefetchAccount => "prefetch_account",
            Self::PrefetchStorage => "prefetch_storage",
        }
    }

    /// Whether a read of this kind was made on demand (by a transaction waiting for it), not by
    /// a prefetch.
    pub const fn on_demand(self) -> bool {
        matches!(self, Self::Account | Self::Storage | Self::Code)
    }

    const fn index(self) -> usize {
        self as usize
    }
}

thread_local! {
    /// The on-demand store reads this thread made, through any cache: a task's reads are the
    /// difference of two readings around it, since a task runs on one thread from start to end.
    static ON_DEMAND: std::cell::Cell<ReadTally> = const { std::cell::Cell::new(ReadTally::ZERO) };
}

/// On-demand store reads made by one thread: how many, and the time spent in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadTally {
    /// Reads.
    pub reads: u64,
    /// Time spent waiting for them.
    pub wait: Duration,
    /// Of `reads`, those of keys a prefetch running beside execution was announced to load
    /// ([`SharedCache::track_prefetch`]) but had not loaded yet: reads the prefetch lost.
    ///
    /// [`SharedCache::track_prefetch`]: crate::SharedCache::track_prefetch
    pub raced: u64,
    /// Lookups answered by a value that prefetch loaded, the first one for that value (the
    /// lookup that would have read it on demand without the prefetch).
    pub prefetch_hits: u64,
}

impl ReadTally {
    const ZERO: Self = Self {
        reads: 0,
        wait: Duration::ZERO,
        raced: 0,
        prefetch_hits: 0,
    };

    /// The on-demand reads this thread has made so far, through any [`SharedCache`]. Reads of
    /// another thread's read in flight (a single-flight wait) are not counted: that thread counts
    /// the read.
    ///
    /// [`SharedCache`]: crate::SharedCache
    pub fn of_this_thread() -> Self {
        ON_DEMAND.with(std::cell::Cell::get)
    }

    /// The reads made since `earlier` (a reading on the same thread).
    pub fn since(self, earlier: Self) -> Self {
        Self {
            reads: self.reads.saturating_sub(earlier.reads),
            wait: self.wait.saturating_sub(earlier.wait),
            raced: self.raced.saturating_sub(earlier.raced),
            prefetch_hits: self.prefetch_hits.saturating_sub(earlier.prefetch_hits),
        }
    }

    /// Adds to this thread's tally.
    pub(crate) fn record(update: impl FnOnce(&mut Self)) {
        ON_DEMAND.with(|t| {
            let mut tally = t.get();
            update(&mut tally);
            t.set(tally);
        });
    }
}

/// Number of latency buckets: bucket `i` holds reads taking less than 2^i microseconds.
const BUCKETS: usize = 24;

/// Read latencies in power-of-two microsecond buckets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LatencyHistogram {
    /// `counts[i]`: reads that took less than 2^i µs (and at least 2^(i-1) µs).
    pub counts: Vec<u64>,
}

impl LatencyHistogram {
    /// The upper bound (µs) of the bucket holding quantile `q` (0..=1), or 0 without reads.
    pub fn quantile_us(&self, q: f64) -> u64 {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return 0;
        }
        let target = (q.clamp(0.0, 1.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= target {
                return 1u64 << i;
            }
        }
        1u64 << (BUCKETS - 1)
    }
}

/// `into[i] += from[i]`, `into` grown to `from`'s length.
fn add_counts(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}

/// A snapshot of the counters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that went to the store.
    pub misses: u64,
    /// Keys loaded by prefetching.
    pub prefetched: u64,
    /// Store reads per kind (see [`ReadKind::ALL`] for the order).
    pub reads_by_kind: Vec<u64>,
    /// Total time spent in store reads per kind, in nanoseconds.
    pub read_nanos_by_kind: Vec<u64>,
    /// Latency of on-demand reads (accounts, storage, code).
    pub latency: LatencyHistogram,
}

impl CacheStats {
    /// Adds the counters of another cache (independent blocks replayed each through a cache of
    /// its own, reported as one run).
    pub fn add(&mut self, other: &Self) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.prefetched += other.prefetched;
        add_counts(&mut self.reads_by_kind, &other.reads_by_kind);
        add_counts(&mut self.read_nanos_by_kind, &other.read_nanos_by_kind);
        add_counts(&mut self.latency.counts, &other.latency.counts);
    }

    /// Store reads of `kind`.
    pub fn reads(&self, kind: ReadKind) -> u64 {
        self.reads_by_kind
            .get(kind.index())
            .copied()
            .unwrap_or_default()
    }

    /// Time spent in store reads of `kind`.
    pub fn read_time(&self, kind: ReadKind) -> Duration {
        Duration::from_nanos(
            self.read_nanos_by_kind
                .get(kind.index())
                .copied()
                .unwrap_or_default(),
        )
    }

    /// hits / (hits + misses), or 0 without lookups.
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// The counters, one set per thread: every lookup of every worker counts a hit or a miss, and one
/// shared set would bounce its cache line between the cores on each of them. A snapshot sums the
/// threads' sets (thread ids are reused, so there are at most as many sets as threads alive at once).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    per_thread: ThreadLocal<ThreadCounters>,
}

#[derive(Debug, Default)]
struct ThreadCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    prefetched: AtomicU64,
    reads: [AtomicU64; 5],
    read_nanos: [AtomicU64; 5],
    latency: [AtomicU64; BUCKETS],
}

impl Counters {
    fn local(&self) -> &ThreadCounters {
        self.per_thread.get_or_default()
    }

    pub(crate) fn record_lookup(&self, missed: bool) {
        self.local().record_lookup(missed);
    }

    pub(crate) fn record_prefetch(&self, keys: usize) {
        self.local().record_prefetch(keys);
    }

    pub(crate) fn record_read(&self, kind: ReadKind, elapsed: Duration) {
        self.local().record_read(kind, elapsed);
    }

    pub(crate) fn snapshot(&self) -> CacheStats {
        let mut total = ThreadCounters::default().snapshot();
        for counters in self.per_thread.iter() {
            let s = counters.snapshot();
            total.hits += s.hits;
            total.misses += s.misses;
            total.prefetched += s.prefetched;
            let add = |sum: &mut Vec<u64>, part: Vec<u64>| {
                sum.iter_mut().zip(part).for_each(|(a, b)| *a += b)
            };
            add(&mut total.reads_by_kind, s.reads_by_kind);
            add(&mut total.read_nanos_by_kind, s.read_nanos_by_kind);
            add(&mut total.latency.counts, s.latency.counts);
        }
        total
    }

    pub(crate) fn reset(&self) {
        self.per_thread.iter().for_each(ThreadCounters::reset);
    }
}

impl ThreadCounters {
    fn record_lookup(&self, missed: bool) {
        if missed {
            self.misses.fetch_add(1, Ordering::Relaxed);
        } else {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn record_prefetch(&self, keys: usize) {
        self.prefetched.fetch_add(keys as u64, Ordering::Relaxed);
    }

    fn record_read(&self, kind: ReadKind, elapsed: Duration) {
        let i = kind.index();
        if kind.on_demand() {
            ReadTally::record(|t| {
                t.reads += 1;
                t.wait += elapsed;
            });
        }
        self.reads[i].fetch_add(1, Ordering::Relaxed);
        let nanos = elapsed.as_nanos().min(u64::MAX as u128) as u64;
        self.read_nanos[i].fetch_add(nanos, Ordering::Relaxed);
        if kind.on_demand() {
            let micros = (nanos / 1_000).max(1);
            let bucket = (64 - micros.leading_zeros() as usize).min(BUCKETS - 1);
            self.latency[bucket].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> CacheStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            hits: load(&self.hits),
            misses: load(&self.misses),
            prefetched: load(&self.prefetched),
            reads_by_kind: self.reads.iter().map(load).collect(),
            read_nanos_by_kind: self.read_nanos.iter().map(load).collect(),
            latency: LatencyHistogram {
                counts: self.latency.iter().map(load).collect(),
            },
        }
    }

    fn reset(&self) {
        let zero = |a: &AtomicU64| a.store(0, Ordering::Relaxed);
        zero(&self.hits);
        zero(&self.misses);
        zero(&self.prefetched);
        self.reads.iter().for_each(zero);
        self.read_nanos.iter().for_each(zero);
        self.latency.iter().for_each(zero);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_buckets() {
        let c = Counters::default();
        for _ in 0..90 {
            c.record_read(ReadKind::Storage, Duration::from_micros(3));
        }
        for _ in 0..10 {
            c.record_read(ReadKind::Storage, Duration::from_micros(700));
        }
        let s = c.snapshot();
        assert_eq!(s.latency.quantile_us(0.5), 4);
        assert_eq!(s.latency.quantile_us(0.99), 1024);
        assert_eq!(s.reads(ReadKind::Storage), 100);
    }
}
