//! [`SharedCache`]: one cache of the flat state for every transaction of a replay.
//!
//! The parallel-I/O design reads state on demand from many threads at once. Without a shared cache,
//! two transactions touching the same hot token would each read it from disk; with it, a key is read
//! once: when several transactions miss the same key at the same moment, one reads and the others wait
//! for that read (quick_cache's placeholder guards), so a disk read is never duplicated.
//!
//! The cache is a layer: it wraps any [`StateReader`] and presents revm's `DatabaseRef`, so it stacks
//! under revm's `State` and the BAL overlay in whatever order an executor mode needs. Code is cached
//! as analysed [`Bytecode`], so a contract's jump table is computed once per replay, not once per
//! transaction. It counts hits, misses, disk reads by kind and their latency.
//!
//! Invariant: the cache never holds a value the store does not hold, except the values
//! [`SharedCache::apply_changes`] writes through after a commit; a batch's commit is written to the
//! store first, then through to the cache.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod stats;

pub use stats::{CacheStats, LatencyHistogram, ReadKind, ReadTally};

use alloy_primitives::{
    Address, B256, U256,
    map::{DefaultHashBuilder, HashSet},
};
use bal_replay_state::{FlatAccount, StateChanges, StateError, StateReader};
use quick_cache::{
    UnitWeighter,
    sync::{Cache, GuardResult},
};
use revm::{
    bytecode::Bytecode,
    database_interface::DatabaseRef,
    primitives::{KECCAK_EMPTY, StorageKey, StorageValue},
    state::AccountInfo,
};
use stats::Counters;
use std::{
    sync::{
        RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

/// How many entries each table of the cache holds at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheCapacity {
    /// Accounts.
    pub accounts: usize,
    /// Storage slots.
    pub storage: usize,
    /// Contract codes.
    pub codes: usize,
}

impl Default for CacheCapacity {
    fn default() -> Self {
        Self {
            accounts: 1 << 20,
            storage: 4 << 20,
            codes: 1 << 16,
        }
    }
}

/// One table of the cache. Hashed with foldhash, not std's SipHash: every state read of every
/// transaction hashes a key here, and SipHash showed up in the profile of the hit path.
type Table<K, V> = Cache<K, V, UnitWeighter, DefaultHashBuilder>;

fn table<K: Eq + std::hash::Hash, V: Clone>(capacity: usize) -> Table<K, V> {
    Cache::with(
        capacity,
        capacity as u64,
        UnitWeighter,
        DefaultHashBuilder::default(),
        Default::default(),
    )
}

/// How long a prefetch waits for an on-demand read of the same key: not at all (that read's value
/// is the cache's, and the prefetch's own is the same).
const NO_WAIT: Option<std::time::Duration> = Some(std::time::Duration::ZERO);

/// A bounded concurrent read-through cache over a [`StateReader`].
pub struct SharedCache<S> {
    inner: S,
    accounts: Table<Address, Option<FlatAccount>>,
    storage: Table<(Address, U256), U256>,
    codes: Table<B256, Bytecode>,
    counters: Counters,
    /// Whether `tracker` holds a prefetch to track: checked before taking its lock, so an
    /// untracked lookup pays one relaxed load.
    tracking: AtomicBool,
    tracker: RwLock<Option<PrefetchTracker>>,
}

/// A prefetch running beside execution, tracked to tell which lookups it served
/// ([`SharedCache::track_prefetch`]): its accounts and its slots.
struct PrefetchTracker {
    accounts: Tracked<Address>,
    slots: Tracked<(Address, U256)>,
}

/// One table's keys under a tracked prefetch.
struct Tracked<K> {
    /// The keys the prefetch will load.
    announced: HashSet<K>,
    /// Values the prefetch loaded that no lookup has used yet.
    unclaimed: KeySet<K>,
}

impl<K: Eq + std::hash::Hash> Tracked<K> {
    fn new(keys: impl IntoIterator<Item = K>) -> Self {
        Self {
            announced: keys.into_iter().collect(),
            unclaimed: KeySet::new(),
        }
    }

    /// A lookup of `key` missed and reads it on demand: a read the prefetch lost, if it was to
    /// load the key. A value it loaded and the cache evicted unused is read again here, and no
    /// longer the prefetch's.
    fn missed(&self, key: &K) {
        if self.announced.contains(key) {
            ReadTally::record(|tally| tally.raced += 1);
            self.unclaimed.remove(key);
        }
    }

    /// A lookup of `key` hit: the first use of a value the prefetch loaded is one it served.
    fn hit(&self, key: &K) {
        if self.announced.contains(key) && self.unclaimed.remove(key) {
            ReadTally::record(|tally| tally.prefetch_hits += 1);
        }
    }

    /// The prefetch is about to make its value of `key` visible.
    fn loaded(&self, key: K) {
        if self.announced.contains(&key) {
            self.unclaimed.insert(key);
        }
    }
}

/// A concurrent set that never drops a member (unlike a cache table): a few locked shards.
struct KeySet<K> {
    shards: [std::sync::Mutex<HashSet<K>>; 16],
    hasher: DefaultHashBuilder,
}

impl<K: Eq + std::hash::Hash> KeySet<K> {
    fn new() -> Self {
        Self {
            shards: std::array::from_fn(|_| Default::default()),
            hasher: DefaultHashBuilder::default(),
        }
    }

    fn shard(&self, key: &K) -> &std::sync::Mutex<HashSet<K>> {
        use std::hash::BuildHasher;
        &self.shards[(self.hasher.hash_one(key) % 16) as usize]
    }

    fn insert(&self, key: K) {
        if let Ok(mut set) = self.shard(&key).lock() {
            set.insert(key);
        }
    }

    /// Whether `key` was a member (and is no longer).
    fn remove(&self, key: &K) -> bool {
        self.shard(key).lock().is_ok_and(|mut set| set.remove(key))
    }
}

impl<S> std::fmt::Debug for SharedCache<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCache")
            .field("accounts", &self.accounts.len())
            .field("storage", &self.storage.len())
            .field("codes", &self.codes.len())
            .finish_non_exhaustive()
    }
}

impl<S: StateReader> SharedCache<S> {
    /// A cache over `inner` holding at most `capacity` entries per table.
    pub fn new(inner: S, capacity: CacheCapacity) -> Self {
        Self {
            inner,
            accounts: table(capacity.accounts),
            storage: table(capacity.storage),
            codes: table(capacity.codes),
            counters: Counters::default(),
            tracking: AtomicBool::new(false),
            tracker: RwLock::new(None),
        }
    }

    /// Tracks a prefetch about to run beside execution, which will load `accounts` and `slots`:
    /// from now until [`Self::stop_tracking_prefetch`], each thread's [`ReadTally`] counts its
    /// on-demand reads of those keys the prefetch had not loaded yet (`raced`), and its first
    /// lookups of values the prefetch did load (`prefetch_hits`). Together, the lookups of a task
    /// that the prefetch was there to serve, and how many it did: what a model of the prefetch
    /// racing execution needs. Costs a lock per lookup while on; off by default.
    pub fn track_prefetch(&self, accounts: &[Address], slots: &[(Address, U256)]) {
        let tracker = PrefetchTracker {
            accounts: Tracked::new(accounts.iter().copied()),
            slots: Tracked::new(slots.iter().copied()),
        };
        if let Ok(mut slot) = self.tracker.write() {
            *slot = Some(tracker);
            self.tracking.store(true, Ordering::Release);
        }
    }

    /// Ends [`Self::track_prefetch`].
    pub fn stop_tracking_prefetch(&self) {
        self.tracking.store(false, Ordering::Release);
        if let Ok(mut slot) = self.tracker.write() {
            *slot = None;
        }
    }

    fn tracked(&self, f: impl FnOnce(&PrefetchTracker)) {
        if self.tracking.load(Ordering::Acquire)
            && let Ok(tracker) = self.tracker.read()
            && let Some(tracker) = tracker.as_ref()
        {
            f(tracker);
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Counters since creation (or the last [`Self::reset_stats`]).
    pub fn stats(&self) -> CacheStats {
        self.counters.snapshot()
    }

    /// Zeroes the counters (the cached values stay).
    pub fn reset_stats(&self) {
        self.counters.reset();
    }

    /// Drops every cached value.
    pub fn clear(&self) {
        self.accounts.clear();
        self.storage.clear();
        self.codes.clear();
    }

    fn timed<T>(&self, kind: ReadKind, read: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let value = read();
        self.counters.record_read(kind, start.elapsed());
        value
    }

    /// The account at `address`, from the cache or read once from the store.
    pub fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
        self.lookup(
            &self.accounts,
            |t| &t.accounts,
            address,
            || self.timed(ReadKind::Account, || self.inner.account(address)),
        )
    }

    /// The value of `slot`, from the cache or read once from the store.
    pub fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
        self.lookup(
            &self.storage,
            |t| &t.slots,
            (address, slot),
            || self.timed(ReadKind::Storage, || self.inner.storage(address, slot)),
        )
    }

    /// `key` in `table`, or `read` once on a miss (other threads missing it meanwhile wait for
    /// that read); counted, and told to a tracked prefetch's `side`.
    fn lookup<K, V>(
        &self,
        table: &Table<K, V>,
        side: fn(&PrefetchTracker) -> &Tracked<K>,
        key: K,
        read: impl FnOnce() -> Result<V, StateError>,
    ) -> Result<V, StateError>
    where
        K: Eq + std::hash::Hash + Clone,
        V: Clone,
    {
        let mut missed = false;
        let value = table.get_or_insert_with(&key, || {
            missed = true;
            self.tracked(|t| side(t).missed(&key));
            read()
        })?;
        if !missed {
            self.tracked(|t| side(t).hit(&key));
        }
        self.counters.record_lookup(missed);
        Ok(value)
    }

    /// Puts a prefetch's `values` of `keys` in `table`, each only where absent and no on-demand
    /// read is filling it: then the value is that read's, not the prefetch's, and the prefetch
    /// does not wait for it. Tagged for a tracked prefetch's `side` before it is visible, so its
    /// first lookup cannot miss the tag.
    fn fill<K, V>(
        &self,
        table: &Table<K, V>,
        side: fn(&PrefetchTracker) -> &Tracked<K>,
        keys: &[K],
        values: Vec<V>,
    ) where
        K: Eq + std::hash::Hash + Clone,
        V: Clone,
    {
        for (key, value) in keys.iter().zip(values) {
            if let GuardResult::Guard(guard) = table.get_value_or_guard(key, NO_WAIT) {
                self.tracked(|t| side(t).loaded(key.clone()));
                let _ = guard.insert(value);
            }
        }
    }

    /// The analysed code with `hash`, from the cache or read once from the store.
    pub fn code(&self, hash: B256) -> Result<Bytecode, StateError> {
        if hash == KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        let mut missed = false;
        let value = self.codes.get_or_insert_with(&hash, || {
            missed = true;
            match self.timed(ReadKind::Code, || self.inner.code(hash))? {
                Some(bytes) => bal_replay_state::decode_code(hash, bytes),
                None => Err(StateError::MissingCode { hash }),
            }
        })?;
        self.counters.record_lookup(missed);
        Ok(value)
    }

    /// Loads `addresses` into the cache with one multi-get, skipping those already cached.
    /// Returns how many keys were read from the store.
    pub fn prefetch_accounts(&self, addresses: &[Address]) -> Result<usize, StateError> {
        let missing: Vec<Address> = addresses
            .iter()
            .copied()
            .filter(|a| self.accounts.peek(a).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let values = self.timed(ReadKind::PrefetchAccount, || {
            self.inner.accounts_many(&missing)
        })?;
        self.fill(&self.accounts, |t| &t.accounts, &missing, values);
        self.counters.record_prefetch(missing.len());
        Ok(missing.len())
    }

    /// Loads `slots` into the cache with one multi-get, skipping those already cached.
    /// Returns how many keys were read from the store.
    pub fn prefetch_storage(&self, slots: &[(Address, U256)]) -> Result<usize, StateError> {
        let missing: Vec<(Address, U256)> = slots
            .iter()
            .copied()
            .filter(|k| self.storage.peek(k).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let values = self.timed(ReadKind::PrefetchStorage, || {
            self.inner.storage_many(&missing)
        })?;
        self.fill(&self.storage, |t| &t.slots, &missing, values);
        self.counters.record_prefetch(missing.len());
        Ok(missing.len())
    }

    /// Writes a committed batch's changes through to the cache, so the next batch reads them
    /// without going to disk. Call after the store commit succeeded.
    pub fn apply_changes(&self, changes: &StateChanges) {
        if !changes.wiped_storage.is_empty() {
            // Slots of a wiped account cannot be enumerated in the cache; wipes are rare
            // (self-destructs), so dropping the whole storage table is the simple correct choice.
            self.storage.clear();
        }
        for (address, account) in &changes.accounts {
            self.accounts.insert(*address, *account);
        }
        for (address, slot, value) in &changes.storage {
            self.storage.insert((*address, *slot), *value);
        }
        for (hash, code) in &changes.codes {
            // A commit's codes were deployed by execution or set by a BAL whose code changes
            // `check_bal` accepted (whole designations only), so revm can load each.
            self.codes.insert(*hash, Bytecode::new_raw(code.clone()));
        }
    }
}

/// The cache is itself a flat state's reader, so it stacks under the overlays ([`MemOverlay`]
/// keeps commits in memory over it) as over any store. Point reads go through the cache; the
/// batched reads are prefetches; the rest is the store's.
///
/// [`MemOverlay`]: bal_replay_state::MemOverlay
impl<S: StateReader> StateReader for SharedCache<S> {
    fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
        SharedCache::account(self, address)
    }
    fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
        SharedCache::storage(self, address, slot)
    }
    fn code(&self, hash: B256) -> Result<Option<alloy_primitives::Bytes>, StateError> {
        if hash == KECCAK_EMPTY {
            return Ok(Some(alloy_primitives::Bytes::new()));
        }
        match SharedCache::code(self, hash) {
            Ok(code) => Ok(Some(code.original_bytes())),
            Err(StateError::MissingCode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn bytecode(&self, hash: B256) -> Result<Option<Bytecode>, StateError> {
        match SharedCache::code(self, hash) {
            Ok(code) => Ok(Some(code)),
            Err(StateError::MissingCode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        self.inner.block_hash(number)
    }
    fn applied_block(&self) -> Result<Option<u64>, StateError> {
        self.inner.applied_block()
    }
    fn applied_block_hash(&self) -> Result<Option<B256>, StateError> {
        self.inner.applied_block_hash()
    }
    fn chain_id(&self) -> Result<Option<u64>, StateError> {
        self.inner.chain_id()
    }
    fn location(&self) -> Option<&std::path::Path> {
        self.inner.location()
    }
    fn accounts_many(&self, addresses: &[Address]) -> Result<Vec<Option<FlatAccount>>, StateError> {
        self.prefetch_accounts(addresses)?;
        addresses
            .iter()
            .map(|a| SharedCache::account(self, *a))
            .collect()
    }
    fn storage_many(&self, slots: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        self.prefetch_storage(slots)?;
        slots
            .iter()
            .map(|(a, s)| SharedCache::storage(self, *a, *s))
            .collect()
    }
}

impl<S: StateReader> DatabaseRef for SharedCache<S> {
    type Error = StateError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, StateError> {
        Ok(self.account(address)?.map(|a| a.to_account_info()))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, StateError> {
        self.code(code_hash)
    }

    fn storage_ref(&self, address: Address, index: StorageKey) -> Result<StorageValue, StateError> {
        self.storage(address, index)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, StateError> {
        self.inner
            .block_hash(number)?
            .ok_or(StateError::MissingBlockHash { number })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_state::{MemStore, StateWriter};
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    /// A store that counts reads and is slow, so concurrent misses overlap.
    struct CountingStore {
        inner: MemStore,
        reads: AtomicUsize,
    }

    impl StateReader for CountingStore {
        fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            self.inner.account(address)
        }
        fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            self.inner.storage(address, slot)
        }
        fn code(&self, hash: B256) -> Result<Option<alloy_primitives::Bytes>, StateError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.inner.code(hash)
        }
        fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
            self.inner.block_hash(number)
        }
        fn applied_block(&self) -> Result<Option<u64>, StateError> {
            self.inner.applied_block()
        }
    }

    fn store() -> (CountingStore, Address) {
        let address = Address::with_last_byte(7);
        let changes = StateChanges {
            accounts: vec![(
                address,
                Some(FlatAccount {
                    nonce: 3,
                    balance: U256::from(99),
                    code_hash: KECCAK_EMPTY,
                }),
            )],
            storage: vec![(address, U256::from(1), U256::from(42))],
            ..Default::default()
        };
        (
            CountingStore {
                inner: MemStore::from_changes(&changes, 10),
                reads: AtomicUsize::new(0),
            },
            address,
        )
    }

    #[test]
    fn concurrent_misses_read_the_store_once() {
        let (store, address) = store();
        let cache = Arc::new(SharedCache::new(store, CacheCapacity::default()));
        std::thread::scope(|s| {
            for _ in 0..8 {
                let cache = cache.clone();
                s.spawn(move || {
                    assert_eq!(
                        cache.storage(address, U256::from(1)).unwrap(),
                        U256::from(42)
                    );
                    assert_eq!(cache.account(address).unwrap().unwrap().nonce, 3);
                });
            }
        });
        assert_eq!(
            cache.inner().reads.load(Ordering::SeqCst),
            2,
            "one read per key"
        );
        let stats = cache.stats();
        assert_eq!(stats.misses, 2);
        assert_eq!(stats.hits, 14);
        assert_eq!(stats.reads(ReadKind::Storage), 1);
        assert_eq!(stats.reads(ReadKind::Account), 1);
    }

    #[test]
    fn write_through_serves_new_values_and_wipes_storage() {
        let (store, address) = store();
        let cache = SharedCache::new(store, CacheCapacity::default());
        assert_eq!(
            cache.storage(address, U256::from(1)).unwrap(),
            U256::from(42)
        );
        let changes = StateChanges {
            storage: vec![(address, U256::from(1), U256::from(43))],
            ..Default::default()
        };
        cache.inner().inner.commit(&changes, 11).unwrap();
        cache.apply_changes(&changes);
        assert_eq!(
            cache.storage(address, U256::from(1)).unwrap(),
            U256::from(43)
        );
        assert_eq!(cache.inner().reads.load(Ordering::SeqCst), 1);

        let wipe = StateChanges {
            wiped_storage: vec![address],
            ..Default::default()
        };
        cache.inner().inner.commit(&wipe, 12).unwrap();
        cache.apply_changes(&wipe);
        assert_eq!(cache.storage(address, U256::from(1)).unwrap(), U256::ZERO);
    }

    #[test]
    fn a_thread_tallies_its_own_on_demand_reads_only() {
        let (store, address) = store();
        let cache = SharedCache::new(store, CacheCapacity::default());
        let other = Address::with_last_byte(8);
        let before = ReadTally::of_this_thread();
        // A prefetch is not an on-demand read; a miss is (20 ms in the store); a hit is nothing.
        cache.prefetch_accounts(&[other]).unwrap();
        cache.storage(address, U256::from(1)).unwrap();
        cache.storage(address, U256::from(1)).unwrap();
        let mine = ReadTally::of_this_thread().since(before);
        assert_eq!(mine.reads, 1);
        assert!(
            mine.wait >= std::time::Duration::from_millis(20),
            "{mine:?}"
        );
        // Another thread's miss is that thread's.
        std::thread::scope(|s| {
            s.spawn(|| {
                let theirs = ReadTally::of_this_thread();
                cache.account(address).unwrap();
                assert_eq!(ReadTally::of_this_thread().since(theirs).reads, 1);
            });
        });
        assert_eq!(ReadTally::of_this_thread().since(before).reads, 1);
    }

    #[test]
    fn a_tracked_prefetch_tells_the_reads_it_lost_from_the_lookups_it_served() {
        let (store, address) = store();
        let cache = SharedCache::new(store, CacheCapacity::default());
        let (other, third) = (Address::with_last_byte(8), Address::with_last_byte(9));
        let slot = (address, U256::from(1));
        cache.track_prefetch(&[address, other, third], &[slot]);
        let before = ReadTally::of_this_thread();
        // Read before the prefetch got to it: an on-demand read the prefetch lost.
        assert_eq!(
            cache.storage(address, U256::from(1)).unwrap(),
            U256::from(42)
        );
        // The prefetch then loads what is not cached yet: two accounts, not the slot.
        assert_eq!(cache.prefetch_storage(&[slot]).unwrap(), 0);
        assert_eq!(cache.prefetch_accounts(&[address, other]).unwrap(), 2);
        // The first lookup of each prefetched value is one it served; the second is not.
        assert_eq!(cache.account(other).unwrap(), None);
        assert_eq!(cache.account(other).unwrap(), None);
        assert_eq!(cache.account(address).unwrap().unwrap().nonce, 3);
        // The slot was read on demand, so its later hit was not the prefetch's.
        cache.storage(address, U256::from(1)).unwrap();
        // An announced key the prefetch never loaded, read on demand: lost too.
        assert_eq!(cache.account(third).unwrap(), None);
        let mine = ReadTally::of_this_thread().since(before);
        assert_eq!((mine.reads, mine.raced, mine.prefetch_hits), (2, 2, 2));
        // Untracked, nothing is told apart.
        cache.stop_tracking_prefetch();
        cache.clear();
        let before = ReadTally::of_this_thread();
        cache.storage(address, U256::from(1)).unwrap();
        cache.prefetch_accounts(&[other]).unwrap();
        cache.account(other).unwrap();
        let mine = ReadTally::of_this_thread().since(before);
        assert_eq!((mine.reads, mine.raced, mine.prefetch_hits), (1, 0, 0));
    }

    #[test]
    fn a_key_is_lost_to_the_prefetch_or_served_by_it_never_both() {
        // The prefetch's multi-get (20 ms) returns while a worker's read of the same key (from
        // 2 ms, 20 ms long) is in flight, and a second worker waits on that read. However the
        // threads interleave, the key's first lookup is either a read the prefetch lost or one it
        // served, and no later lookup counts again.
        let (store, address) = store();
        let cache = SharedCache::new(store, CacheCapacity::default());
        cache.track_prefetch(&[address], &[]);
        let tallies: Vec<ReadTally> = std::thread::scope(|s| {
            let lookup = |after_ms| {
                let cache = &cache;
                s.spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(after_ms));
                    let before = ReadTally::of_this_thread();
                    assert_eq!(cache.account(address).unwrap().unwrap().nonce, 3);
                    ReadTally::of_this_thread().since(before)
                })
            };
            let prefetch = s.spawn(|| cache.prefetch_accounts(&[address]).unwrap());
            let (first, second) = (lookup(2), lookup(10));
            prefetch.join().unwrap();
            vec![first.join().unwrap(), second.join().unwrap()]
        });
        let counted: u64 = tallies.iter().map(|t| t.raced + t.prefetch_hits).sum();
        assert_eq!(counted, 1, "{tallies:?}");
        // The same lookup again: neither.
        let before = ReadTally::of_this_thread();
        cache.account(address).unwrap();
        let again = ReadTally::of_this_thread().since(before);
        assert_eq!((again.raced, again.prefetch_hits), (0, 0));
    }

    #[test]
    fn prefetch_fills_the_cache_with_one_read() {
        let (store, address) = store();
        let cache = SharedCache::new(store, CacheCapacity::default());
        let other = Address::with_last_byte(8);
        assert_eq!(cache.prefetch_accounts(&[address, other]).unwrap(), 2);
        assert_eq!(cache.prefetch_accounts(&[address, other]).unwrap(), 0);
        assert_eq!(cache.account(other).unwrap(), None);
        assert_eq!(cache.stats().hits, 1);
        assert_eq!(cache.stats().prefetched, 2);
    }

    #[test]
    fn unknown_code_is_an_error_and_empty_code_is_free() {
        let (store, _) = store();
        let cache = SharedCache::new(store, CacheCapacity::default());
        assert!(matches!(
            cache.code(B256::repeat_byte(1)),
            Err(StateError::MissingCode { .. })
        ));
        assert!(cache.code(KECCAK_EMPTY).unwrap().is_empty());
    }

    #[test]
    fn under_an_overlay_commits_stay_above_and_reads_come_through_the_cache() {
        use bal_replay_state::{MemOverlay, StateWriter};
        let (a, slot) = (Address::repeat_byte(0xaa), U256::from(7));
        let account = FlatAccount {
            nonce: 1,
            balance: U256::from(5),
            code_hash: KECCAK_EMPTY,
        };
        let mut seed = StateChanges::default();
        seed.accounts.push((a, Some(account)));
        seed.storage.push((a, slot, U256::from(9)));
        let store = MemStore::from_changes(&seed, 10);
        let cache = SharedCache::new(&store, CacheCapacity::default());
        let overlay = MemOverlay::new(&cache);
        assert_eq!(overlay.account(a).unwrap(), Some(account));
        assert_eq!(overlay.storage(a, slot).unwrap(), U256::from(9));
        assert_eq!(overlay.applied_block().unwrap(), Some(10));
        // A second read of each is the cache's: two lookups missed, two hit.
        assert_eq!(overlay.storage_many(&[(a, slot)]).unwrap(), [U256::from(9)]);
        assert_eq!(overlay.accounts_many(&[a]).unwrap(), [Some(account)]);
        let stats = cache.stats();
        assert_eq!((stats.misses, stats.hits), (2, 2), "{stats:?}");
        // A commit lands in the overlay; the cache and the store under it keep the old value.
        let mut next = StateChanges::default();
        next.storage.push((a, slot, U256::from(11)));
        overlay.commit(&next, 11).unwrap();
        assert_eq!(overlay.storage(a, slot).unwrap(), U256::from(11));
        assert_eq!(cache.storage(a, slot).unwrap(), U256::from(9));
        assert_eq!(store.storage(a, slot).unwrap(), U256::from(9));
        assert_eq!(
            StateReader::code(&cache, KECCAK_EMPTY).unwrap(),
            Some(alloy_primitives::Bytes::new())
        );
        assert_eq!(
            StateReader::code(&cache, B256::repeat_byte(1)).unwrap(),
            None
        );
    }
}
