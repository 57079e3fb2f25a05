//! [`RocksStore`]: the flat state in RocksDB, one column family per table, tuned for point reads.

use std::path::{Path, PathBuf};

use alloy_primitives::{Address, B256, Bytes, U256, hex};
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, BlockBasedTablePinningTier, Cache, ColumnFamily,
    ColumnFamilyDescriptor, DB, DBCompressionType, DataBlockIndexType, FlushOptions, IteratorMode,
    Options, ReadOptions, WriteBatch, WriteOptions, checkpoint::Checkpoint,
};
use tracing::{debug, warn};

use bal_replay_state::{
    AppliedBlock, FlatAccount, FlatContents, KeyScheme, StateChanges, StateError, StateReader,
    StateWriter, cf,
    codec::{self, StateKey},
};

/// How a state's SST files lay out their index and filters, chosen when the state is made
/// (`bal-dump generate`, `bal-migrate`, [`RocksStore::create`]) and kept in RocksDB's own OPTIONS
/// file, which [`TableLayout::of_state`] reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableLayout {
    /// Two-level index and partitioned filters (4 KiB partitions): a lookup whose metadata is not
    /// cached reads one partition of each, so it holds for a state whose metadata does not fit in
    /// memory. The default.
    #[default]
    Partitioned,
    /// One index and one full filter per file: with the metadata pinned (`--disk-resident`), two
    /// partition lookups fewer per key (the prefetch's CPU per device read 21-25% lower on
    /// 2 cores, docs/notes/2026-11-26-sst-layouts.md); unpinned, a lookup that misses the cache
    /// reads a whole file's filter and index.
    Unpartitioned,
}

impl TableLayout {
    /// The layout's name, as the flags and pages spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Partitioned => "partitioned",
            Self::Unpartitioned => "unpartitioned",
        }
    }

    /// The layout the state at `path` was made with, from RocksDB's newest `OPTIONS-<n>` file
    /// there (the accounts table's `index_type`): `None` where there is none or it names neither
    /// layout. Reads that file only.
    pub fn of_state(path: &Path) -> Option<Self> {
        let newest = std::fs::read_dir(path)
            .ok()?
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let number: u64 = name.strip_prefix("OPTIONS-")?.parse().ok()?;
                Some((number, name))
            })
            .max()?;
        let text = std::fs::read_to_string(path.join(newest.1)).ok()?;
        let table = text
            .split("[TableOptions/BlockBasedTable \"")
            .find(|section| section.starts_with(&format!("{}\"", cf::ACCOUNTS)))?;
        let index_type = table
            .lines()
            .find_map(|l| l.trim().strip_prefix("index_type="))?;
        match index_type.trim() {
            "kTwoLevelIndexSearch" => Some(Self::Partitioned),
            "kBinarySearch" => Some(Self::Unpartitioned),
            _ => None,
        }
    }
}

impl std::fmt::Display for TableLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TableLayout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "partitioned" => Ok(Self::Partitioned),
            "unpartitioned" => Ok(Self::Unpartitioned),
            other => Err(format!(
                "unknown table layout {other:?}: partitioned or unpartitioned"
            )),
        }
    }
}

/// How a [`RocksStore`] is opened and tuned.
#[derive(Debug, Clone, PartialEq)]
pub struct RocksOptions {
    /// Size of the LRU block cache shared by all column families, in bytes.
    pub block_cache_bytes: usize,
    /// Bits per key of the full (not block-based) bloom filters; 0 disables them.
    pub bloom_bits_per_key: f64,
    /// Reads bypass the OS page cache (O_DIRECT), so the block cache is the only cache and memory
    /// use is bounded by it.
    pub direct_io: bool,
    /// Opens the database read-only: several processes may read it, commits fail.
    pub read_only: bool,
    /// Limit on open SST files; -1 keeps all open, which avoids re-opening table readers on reads.
    pub max_open_files: i32,
    /// [`RocksStore::open`] creates a missing database, recorded as [`KeyScheme::Plain`].
    pub create_if_missing: bool,
    /// Commits wait for the write-ahead log to reach the disk (survive a machine crash, not only a
    /// process crash). Slower.
    pub sync_commits: bool,
    /// Commits skip the write-ahead log, for bulk loading: much faster, but a crash loses every
    /// commit not yet flushed. The store flushes when dropped; call [`RocksStore::flush`] at
    /// checkpoints that must survive a crash.
    pub write_without_wal: bool,
    /// Collects RocksDB's counters (keys read, block-cache hits and misses, time in reads and in
    /// file reads) for [`RocksStore::read_counters`]: the evidence of where a run's reads were
    /// served from and what they cost. Costs a few percent of read throughput.
    pub statistics: bool,
    /// Loads every SST file's index and filter partitions when the store opens and pins them in
    /// the block cache, whose capacity then grows by what they take, so only data blocks compete
    /// for (and are bounded by) `block_cache_bytes`. This is how a node with RocksDB's default table options holds a large
    /// state: index and filters in memory (there, table-reader memory), data blocks on the disk.
    /// Memory grows by the state's metadata ([`RocksStore::block_cache_pinned_bytes`]: about 3%
    /// of its size).
    pub pin_metadata: bool,
    /// The index and filter layout of the files a new state is made with
    /// ([`RocksStore::create`]); a state opened keeps the layout it was made with
    /// ([`TableLayout::of_state`]), whatever this says.
    pub table_layout: TableLayout,
}

impl Default for RocksOptions {
    fn default() -> Self {
        Self {
            block_cache_bytes: 512 << 20,
            bloom_bits_per_key: 10.0,
            direct_io: false,
            read_only: false,
            max_open_files: -1,
            create_if_missing: false,
            sync_commits: false,
            write_without_wal: false,
            statistics: false,
            pin_metadata: false,
            table_layout: TableLayout::Partitioned,
        }
    }
}

/// RocksDB's read counters since the store was opened ([`RocksOptions::statistics`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RocksReadCounters {
    /// Keys looked up, by point reads and multi-gets.
    pub keys_read: u64,
    /// Of those, keys found in SST files, by point reads and multi-gets alike (RocksDB's per-level
    /// hit counts, which both record): the reads that can need a data block from the disk. The
    /// others were answered by a bloom filter (absent keys) or the memtable.
    pub keys_found_in_files: u64,
    /// Block-cache lookups answered from the cache (data, index and filter blocks).
    pub block_cache_hits: u64,
    /// Block-cache lookups that read the block from its SST file.
    pub block_cache_misses: u64,
    /// Of the misses, data blocks (the others are index and filter blocks).
    pub block_cache_data_misses: u64,
    /// Microseconds spent inside point reads and multi-gets, summed over calls (RocksDB's
    /// `db.get.micros` and `db.multiget.micros`): its own work per key, with the file reads below.
    pub read_micros: u64,
    /// Of that, microseconds spent reading SST files (`sst.read.micros`, each block read from a
    /// file, through the kernel or io_uring): what the kernel and the device took.
    pub file_read_micros: u64,
}

impl RocksReadCounters {
    /// The counters from `earlier` to `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            keys_read: self.keys_read.saturating_sub(earlier.keys_read),
            keys_found_in_files: self
                .keys_found_in_files
                .saturating_sub(earlier.keys_found_in_files),
            block_cache_hits: self
                .block_cache_hits
                .saturating_sub(earlier.block_cache_hits),
            block_cache_misses: self
                .block_cache_misses
                .saturating_sub(earlier.block_cache_misses),
            block_cache_data_misses: self
                .block_cache_data_misses
                .saturating_sub(earlier.block_cache_data_misses),
            read_micros: self.read_micros.saturating_sub(earlier.read_micros),
            file_read_micros: self
                .file_read_micros
                .saturating_sub(earlier.file_read_micros),
        }
    }
}

/// A flat state in RocksDB. Safe to share across threads (`&self` everywhere); reads are point
/// lookups, each commit one atomic `WriteBatch`.
pub struct RocksStore {
    db: DB,
    path: PathBuf,
    key_scheme: KeyScheme,
    /// Reused for every point read: building `ReadOptions` costs an allocation through the C API.
    read_opts: ReadOptions,
    sync_commits: bool,
    write_without_wal: bool,
    read_only: bool,
    table_layout: TableLayout,
    /// The database's options when statistics are on: RocksDB's counters are read through them.
    statistics: Option<Options>,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("path", &self.path)
            .field("key_scheme", &self.key_scheme)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// Options of one column family. All tables are read by point lookups, mostly for keys that exist
/// but also for many that do not (fresh slots, new accounts), so every one gets full bloom filters
/// on every level and a hash index inside data blocks.
fn cf_options(cache: &Cache, opts: &RocksOptions) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    if opts.bloom_bits_per_key > 0.0 {
        // `false`: full filters (one per SST file), not the legacy per-block filters.
        table.set_bloom_filter(opts.bloom_bits_per_key, false);
    }
    // Index and filter blocks live in (and are bounded by) the shared block cache instead of in
    // unaccounted table-reader memory; L0's are pinned since every read consults them.
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    // Partitioned index and filters by default. A file's full filter is megabytes (10 bits per
    // key); on a state far larger than the block cache (mainnet's), a lookup that misses the cache
    // would read all of it from the disk again, dwarfing the 4 KiB data block it is after.
    // Partitioned, a lookup reads one 4 KiB partition of each, and only their small top levels
    // stay pinned.
    match opts.table_layout {
        TableLayout::Partitioned => {
            table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            table.set_partition_filters(true);
            table.set_metadata_block_size(4096);
            table.set_pin_top_level_index_and_filter(true);
        }
        TableLayout::Unpartitioned => {
            table.set_index_type(BlockBasedIndexType::BinarySearch);
            table.set_partition_filters(false);
        }
    }
    if opts.pin_metadata {
        // "All": every file's partitions, not only flushed or L0 files'; loaded at table open.
        table.set_partition_pinning_tier(BlockBasedTablePinningTier::All);
        table.set_top_level_index_pinning_tier(BlockBasedTablePinningTier::All);
        table.set_unpartitioned_pinning_tier(BlockBasedTablePinningTier::All);
    }
    // Sizes filters to the allocator's size classes: less wasted memory at the same FP rate.
    table.set_optimize_filters_for_memory(true);
    // A point lookup inside a data block by hash instead of binary search.
    table.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
    table.set_data_block_hash_ratio(0.75);

    let mut cf = Options::default();
    cf.set_block_based_table_factory(&table);
    cf.set_compression_type(DBCompressionType::Lz4);
    cf.set_bottommost_compression_type(DBCompressionType::Lz4);
    // Keep last-level filters: lookups of absent keys are common (new slots, new accounts), and
    // without them each would read a data block from the largest level.
    cf.set_optimize_filters_for_hits(false);
    // Whole-key bloom in the memtables too, so absent keys skip the memtable search.
    cf.set_memtable_prefix_bloom_ratio(0.02);
    cf.set_memtable_whole_key_filtering(true);
    cf
}

/// Options for SST files written outside the database and ingested ([`RocksStore::ingest_accounts`]):
/// the same table format as its column families' (filters, block index, compression).
pub(crate) fn sst_options(table_layout: TableLayout) -> Options {
    let opts = RocksOptions {
        table_layout,
        ..RocksOptions::default()
    };
    cf_options(&Cache::new_lru_cache(1 << 20), &opts)
}

/// Opens the database, with the options it was opened with when statistics are on.
fn open_db(
    path: &Path,
    opts: &RocksOptions,
    create: bool,
) -> Result<(DB, Option<Options>), StateError> {
    let mut cache = Cache::new_lru_cache(opts.block_cache_bytes);
    let mut db_opts = Options::default();
    if opts.statistics {
        db_opts.enable_statistics();
        // Timers on (two clock reads per call): the read cost account splits a key read's time
        // into RocksDB's own and its file reads'. Mutex and compression timers stay off.
        db_opts.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptDetailedTimers);
    }
    db_opts.create_if_missing(create);
    db_opts.create_missing_column_families(create);
    db_opts.set_max_open_files(opts.max_open_files);
    db_opts.set_use_direct_reads(opts.direct_io);
    // Flushes cover all column families at one sequence number, so a commit written without the
    // WAL is on disk either whole or not at all.
    db_opts.set_atomic_flush(true);
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let cores = i32::try_from(cores).unwrap_or(i32::MAX);
    db_opts.increase_parallelism(cores);
    db_opts.set_max_background_jobs(cores.max(2));
    db_opts.set_bytes_per_sync(1 << 20);
    db_opts.set_keep_log_file_num(4);

    let cfs = cf::ALL.map(|name| ColumnFamilyDescriptor::new(name, cf_options(&cache, opts)));
    let result = if opts.read_only {
        DB::open_cf_descriptors_read_only(&db_opts, path, cfs, false)
    } else {
        DB::open_cf_descriptors(&db_opts, path, cfs)
    };
    let db = result.map_err(|source| StateError::Open {
        path: path.to_path_buf(),
        source: source.into(),
    })?;
    if opts.pin_metadata {
        // The partitions pinned at open are charged to the cache; without room beyond them the
        // LRU would hold no data block at all. So the cache's bound applies to data blocks.
        let pinned = cache.get_pinned_usage();
        cache.set_capacity(opts.block_cache_bytes.saturating_add(pinned));
    }
    Ok((db, opts.statistics.then_some(db_opts)))
}

/// Refuses `path` unless it holds a RocksDB database with this crate's column families, reading
/// only its directory, `CURRENT` and manifest. Without it RocksDB's read-write open of a wrong
/// `--state` takes its `LOCK` and writes its `LOG` into the user's directory (and creates a
/// missing path) before it fails; the metadata ([`RocksStore::open`]) is checked once open.
fn check_is_state(path: &Path) -> Result<(), StateError> {
    let not_a_state = |reason: &str| StateError::NotAState {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(not_a_state("it is a file, not a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(not_a_state("it does not exist"));
        }
        Err(source) => {
            return Err(StateError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    if !path.join("CURRENT").is_file() {
        return Err(not_a_state(
            "the directory holds no RocksDB database (no CURRENT file)",
        ));
    }
    let families = DB::list_cf(&Options::default(), path).map_err(|source| StateError::Open {
        path: path.to_path_buf(),
        source: source.into(),
    })?;
    match cf::ALL
        .iter()
        .find(|name| !families.iter().any(|f| f == *name))
    {
        Some(missing) => Err(not_a_state(&format!(
            "its RocksDB database has no `{missing}` column family (not made by bal-replay)"
        ))),
        None => Ok(()),
    }
}

pub(crate) fn hex_key(key: &[u8]) -> String {
    hex::encode_prefixed(key)
}

impl RocksStore {
    /// RocksDB's read counters since the store was opened, or `None` without
    /// [`RocksOptions::statistics`].
    pub fn read_counters(&self) -> Option<RocksReadCounters> {
        use rocksdb::statistics::{Histogram, Ticker};
        let opts = self.statistics.as_ref()?;
        Some(RocksReadCounters {
            keys_read: opts.get_ticker_count(Ticker::NumberKeysRead)
                + opts.get_ticker_count(Ticker::NumberMultigetKeysRead),
            // Not `NumberMultigetKeysFound` besides: it counts a multi-get's memtable hits too,
            // and its keys found in files are already in the per-level hits (which counted the
            // prefetching designs' stored keys twice until 2026-11-24).
            keys_found_in_files: opts.get_ticker_count(Ticker::GetHitL0)
                + opts.get_ticker_count(Ticker::GetHitL1)
                + opts.get_ticker_count(Ticker::GetHitL2AndUp),
            block_cache_hits: opts.get_ticker_count(Ticker::BlockCacheHit),
            block_cache_misses: opts.get_ticker_count(Ticker::BlockCacheMiss),
            block_cache_data_misses: opts.get_ticker_count(Ticker::BlockCacheDataMiss),
            read_micros: opts.get_histogram_data(Histogram::DbGet).sum()
                + opts.get_histogram_data(Histogram::DbMultiget).sum(),
            file_read_micros: opts.get_histogram_data(Histogram::SstReadMicros).sum(),
        })
    }

    /// Bytes of the block cache held by pinned entries: the index and filter partitions
    /// [`RocksOptions::pin_metadata`] keeps, plus the top levels pinned in any case.
    pub fn block_cache_pinned_bytes(&self) -> Option<u64> {
        // The cache is shared by every column family; the property is read through one of them
        // (the database-level property reads the default family's, which has no cache of ours).
        let accounts = self.cf(cf::ACCOUNTS).ok()?;
        self.db
            .property_int_value_cf(accounts, "rocksdb.block-cache-pinned-usage")
            .ok()
            .flatten()
    }

    /// Opens an existing store read-only with the default tuning ([`RocksOptions::read_only`]):
    /// several processes may read it, and nothing it holds can change.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StateError> {
        Self::open(
            path,
            &RocksOptions {
                read_only: true,
                ..RocksOptions::default()
            },
        )
    }

    /// Opens the store at `path`, reading its key scheme from the metadata.
    ///
    /// Fails with [`StateError::MissingMetadata`] if the database was not made by
    /// [`RocksStore::create`] — except that with `create_if_missing` a new or empty database is
    /// initialised as [`KeyScheme::Plain`] — and with [`StateError::UnsupportedFormat`] if it was
    /// written in another format version.
    pub fn open(path: impl AsRef<Path>, opts: &RocksOptions) -> Result<Self, StateError> {
        let path = path.as_ref();
        // Logs, once per process, whether multi-gets will read through io_uring.
        crate::io_uring::read_path();
        let create = opts.create_if_missing && !opts.read_only;
        if !create {
            check_is_state(path)?;
        }
        if !create && !opts.read_only {
            // The metadata is read before RocksDB's read-write open, which writes a new manifest,
            // OPTIONS and LOG file into whatever it opens: a database with this crate's column
            // families but not its metadata is another program's, and is left as it was.
            drop(Self::open(
                path,
                &RocksOptions {
                    read_only: true,
                    statistics: false,
                    pin_metadata: false,
                    direct_io: false,
                    max_open_files: 16,
                    block_cache_bytes: 1 << 20,
                    ..opts.clone()
                },
            )?);
        }
        // Files a commit flushes keep the layout the state was made with.
        let opts = &RocksOptions {
            table_layout: TableLayout::of_state(path).unwrap_or(opts.table_layout),
            ..opts.clone()
        };
        let mut store = Self::from_db(open_db(path, opts, create)?, path, opts, KeyScheme::Plain);
        match store.meta(cf::META_KEY_SCHEME)? {
            Some(name) => {
                store.key_scheme =
                    KeyScheme::from_name(&name).ok_or_else(|| StateError::Corrupt {
                        table: cf::META,
                        key: hex_key(cf::META_KEY_SCHEME),
                        reason: format!("unknown key scheme {:?}", String::from_utf8_lossy(&name)),
                    })?;
            }
            None if create && store.is_empty()? => {
                store.init_meta(KeyScheme::Plain)?;
                return Ok(store);
            }
            None => {
                return Err(StateError::MissingMetadata {
                    path: path.to_path_buf(),
                    key: "key_scheme",
                });
            }
        }
        let version =
            store
                .meta(cf::META_FORMAT_VERSION)?
                .ok_or_else(|| StateError::MissingMetadata {
                    path: path.to_path_buf(),
                    key: "format_version",
                })?;
        let version = <[u8; 4]>::try_from(version.as_slice())
            .map(u32::from_be_bytes)
            .map_err(|_| StateError::Corrupt {
                table: cf::META,
                key: hex_key(cf::META_FORMAT_VERSION),
                reason: format!("format version is {} bytes, expected 4", version.len()),
            })?;
        if version != cf::FORMAT_VERSION {
            return Err(StateError::UnsupportedFormat {
                path: path.to_path_buf(),
                found: version,
                supported: cf::FORMAT_VERSION,
            });
        }
        Ok(store)
    }

    /// Creates a new store at `path` with `key_scheme`. Fails with [`StateError::NotEmpty`] if
    /// `path` is a directory that already holds files, so an existing state is never mixed into.
    /// `opts.read_only` and `opts.create_if_missing` are ignored.
    pub fn create(
        path: impl AsRef<Path>,
        key_scheme: KeyScheme,
        opts: &RocksOptions,
    ) -> Result<Self, StateError> {
        let path = path.as_ref();
        match std::fs::read_dir(path) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(StateError::NotEmpty {
                        path: path.to_path_buf(),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StateError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        let opts = RocksOptions {
            read_only: false,
            create_if_missing: true,
            ..opts.clone()
        };
        let store = Self::from_db(open_db(path, &opts, true)?, path, &opts, key_scheme);
        store.init_meta(key_scheme)?;
        debug!(path = %path.display(), %key_scheme, "created flat state");
        Ok(store)
    }

    fn from_db(
        (db, statistics): (DB, Option<Options>),
        path: &Path,
        opts: &RocksOptions,
        key_scheme: KeyScheme,
    ) -> Self {
        Self {
            db,
            statistics,
            path: path.to_path_buf(),
            key_scheme,
            read_opts: ReadOptions::default(),
            sync_commits: opts.sync_commits,
            write_without_wal: opts.write_without_wal,
            read_only: opts.read_only,
            table_layout: opts.table_layout,
        }
    }

    /// The index and filter layout of the state's files ([`TableLayout`]).
    pub fn table_layout(&self) -> TableLayout {
        self.table_layout
    }

    /// Writes the creation metadata durably (it is tiny and written once).
    fn init_meta(&self, key_scheme: KeyScheme) -> Result<(), StateError> {
        let meta = self.cf(cf::META)?;
        let mut batch = WriteBatch::default();
        batch.put_cf(meta, cf::META_KEY_SCHEME, key_scheme.name());
        batch.put_cf(
            meta,
            cf::META_FORMAT_VERSION,
            cf::FORMAT_VERSION.to_be_bytes(),
        );
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db
            .write_opt(batch, &wo)
            .map_err(|source| StateError::Write {
                table: cf::META,
                key: hex_key(cf::META_KEY_SCHEME),
                source: source.into(),
            })
    }

    /// Whether none of the tables holds an entry.
    fn is_empty(&self) -> Result<bool, StateError> {
        for name in cf::ALL {
            if let Some(first) = self
                .db
                .iterator_cf(self.cf(name)?, IteratorMode::Start)
                .next()
            {
                first.map_err(|source| StateError::Read {
                    table: name,
                    key: String::new(),
                    source: source.into(),
                })?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(crate) fn cf(&self, name: &'static str) -> Result<&ColumnFamily, StateError> {
        self.db
            .cf_handle(name)
            .ok_or(StateError::MissingColumnFamily { name })
    }

    pub(crate) fn get<T>(
        &self,
        table: &'static str,
        key: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T, StateError>,
    ) -> Result<Option<T>, StateError> {
        let value = self
            .db
            .get_pinned_cf_opt(self.cf(table)?, key, &self.read_opts)
            .map_err(|source| StateError::Read {
                table,
                key: hex_key(key),
                source: source.into(),
            })?;
        value.map(|v| decode(&v)).transpose()
    }

    /// The store's key scheme.
    pub fn key_scheme(&self) -> KeyScheme {
        self.key_scheme
    }

    /// Fails with [`StateError::SchemeMismatch`] unless the store uses `expected`.
    pub fn ensure_key_scheme(&self, expected: KeyScheme) -> Result<(), StateError> {
        if self.key_scheme == expected {
            Ok(())
        } else {
            Err(StateError::SchemeMismatch {
                path: self.path.clone(),
                expected,
                found: self.key_scheme,
            })
        }
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying database, for tests that read or write column families directly (see [`cf`]
    /// for their encodings). Writes through it bypass every invariant of this type; tools use the
    /// encoded access of [`RocksStore::encoded_batch`] and [`RocksStore::encoded_snapshot`].
    #[doc(hidden)]
    pub fn raw_db(&self) -> &DB {
        &self.db
    }

    /// The database, for the encoded access (`encoded.rs`).
    pub(crate) fn db(&self) -> &DB {
        &self.db
    }

    /// Write options of a write outside a commit: those of commits (no WAL when bulk loading).
    pub(crate) fn write_options(&self) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync_commits && !self.write_without_wal);
        wo.disable_wal(self.write_without_wal);
        wo
    }

    /// A `meta` entry by raw key.
    pub fn meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.get(cf::META, key, |v| Ok(v.to_vec()))
    }

    /// Writes a `meta` entry by raw key (durably). For tool-specific metadata; the entries in [`cf`]
    /// have typed setters or are written by commits.
    pub fn put_meta(&self, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db
            .put_cf_opt(self.cf(cf::META)?, key, value, &wo)
            .map_err(|source| StateError::Write {
                table: cf::META,
                key: hex_key(key),
                source: source.into(),
            })
    }

    /// Records `key_scheme` as the store's scheme. Keys already stored are not re-encoded: this is
    /// for a migration tool that wrote them in `key_scheme` itself.
    pub fn set_key_scheme(&mut self, key_scheme: KeyScheme) -> Result<(), StateError> {
        self.put_meta(cf::META_KEY_SCHEME, key_scheme.name().as_bytes())?;
        self.key_scheme = key_scheme;
        Ok(())
    }

    /// Records the applied height alone (a commit records it together with its changes), with its
    /// hash and chain where `block` names them, in one durable write. Like a commit, a `None` hash
    /// removes any hash recorded before.
    pub fn set_applied_block(&self, block: impl Into<AppliedBlock>) -> Result<(), StateError> {
        let block = block.into();
        let meta = self.cf(cf::META)?;
        let mut batch = WriteBatch::default();
        batch.put_cf(meta, cf::META_APPLIED_BLOCK, block.number.to_be_bytes());
        match block.hash {
            Some(hash) => batch.put_cf(meta, cf::META_APPLIED_BLOCK_HASH, hash),
            None => batch.delete_cf(meta, cf::META_APPLIED_BLOCK_HASH),
        }
        if let Some(chain_id) = block.chain_id {
            batch.put_cf(meta, cf::META_CHAIN_ID, chain_id.to_be_bytes());
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db
            .write_opt(batch, &wo)
            .map_err(|source| StateError::Write {
                table: cf::META,
                key: hex_key(cf::META_APPLIED_BLOCK),
                source: source.into(),
            })
    }

    /// Hard-links a consistent copy of the store into `dst` (which must not exist). Cheap: SST
    /// files are shared until compaction rewrites them. Memtables are flushed first, so the store
    /// must be open read-write ([`StateError::CheckpointReadOnly`] otherwise: a read-only store's
    /// checkpoint silently lacks the commits still only in its write-ahead log).
    pub fn checkpoint(&self, dst: impl AsRef<Path>) -> Result<(), StateError> {
        let dst = dst.as_ref();
        if self.read_only {
            return Err(StateError::CheckpointReadOnly {
                path: self.path.clone(),
            });
        }
        let err = |source: rocksdb::Error| StateError::Checkpoint {
            path: dst.to_path_buf(),
            source: source.into(),
        };
        Checkpoint::new(&self.db)
            .map_err(err)?
            .create_checkpoint(dst)
            .map_err(err)
    }

    /// Accounts of `addresses`, in order, read in one batched lookup (for prefetching).
    pub fn multi_get_accounts(
        &self,
        addresses: &[Address],
    ) -> Result<Vec<Option<FlatAccount>>, StateError> {
        let keys: Vec<StateKey> = addresses
            .iter()
            .map(|a| self.key_scheme.account_key(*a))
            .collect();
        self.multi_get(cf::ACCOUNTS, &keys, |key, value| {
            value
                .map(|v| codec::decode_account(cf::ACCOUNTS, key, v))
                .transpose()
        })
    }

    /// Values of `(address, slot)` pairs, in order (zero when absent), read in one batched lookup.
    pub fn multi_get_storage(&self, slots: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        let keys: Vec<StateKey> = slots
            .iter()
            .map(|(a, s)| self.key_scheme.storage_key(*a, *s))
            .collect();
        self.multi_get(cf::STORAGE, &keys, |key, value| {
            value.map_or(Ok(U256::ZERO), |v| decode_slot(key, v))
        })
    }

    /// How many of `keys` (the store's own encoded keys, sorted ascending) `table` holds, read in
    /// one multi-get that trusts their order: the sorted, batched read engine `bench-db` compares
    /// with point reads.
    pub fn multi_get_sorted_found<K: AsRef<[u8]>>(
        &self,
        table: &'static str,
        keys: &[K],
    ) -> Result<usize, StateError> {
        let mut found = 0;
        for (value, key) in self
            .db
            .batched_multi_get_cf_opt(self.cf(table)?, keys, true, &self.read_opts)
            .into_iter()
            .zip(keys)
        {
            let value = value.map_err(|source| StateError::Read {
                table,
                key: hex_key(key.as_ref()),
                source: source.into(),
            })?;
            found += usize::from(value.is_some());
        }
        Ok(found)
    }

    /// One batched lookup of `keys` in `table`, each value (or its absence) decoded by `decode`
    /// with its key, in order.
    fn multi_get<T>(
        &self,
        table: &'static str,
        keys: &[StateKey],
        decode: impl Fn(&StateKey, Option<&[u8]>) -> Result<T, StateError>,
    ) -> Result<Vec<T>, StateError> {
        self.db
            .batched_multi_get_cf_opt(self.cf(table)?, keys, false, &self.read_opts)
            .into_iter()
            .zip(keys)
            .map(|(value, key)| {
                let value = value.map_err(|source| StateError::Read {
                    table,
                    key: key.to_hex(),
                    source: source.into(),
                })?;
                decode(key, value.as_deref())
            })
            .collect()
    }

    /// Writes all memtables to SST files (atomically across tables). Needed before a crash can be
    /// survived when commits skip the WAL.
    pub fn flush(&self) -> Result<(), StateError> {
        let cfs = cf::ALL
            .iter()
            .map(|name| self.cf(name))
            .collect::<Result<Vec<_>, _>>()?;
        self.db
            .flush_cfs_opt(&cfs, &FlushOptions::default())
            .map_err(|source| StateError::Flush {
                source: source.into(),
            })
    }

    /// Compacts every table fully (after a bulk load: fewer files, fewer levels per lookup).
    pub fn compact(&self) -> Result<(), StateError> {
        for name in cf::ALL {
            self.db
                .compact_range_cf(self.cf(name)?, None::<&[u8]>, None::<&[u8]>);
        }
        Ok(())
    }

    /// Approximate size of the store: SST files plus memtables of every table, in bytes.
    pub fn approximate_size_bytes(&self) -> Result<u64, StateError> {
        let mut total = 0u64;
        for table in cf::ALL {
            let handle = self.cf(table)?;
            for name in [
                "rocksdb.total-sst-files-size",
                "rocksdb.cur-size-all-mem-tables",
            ] {
                let value = self
                    .db
                    .property_int_value_cf(handle, name)
                    .map_err(|source| StateError::Property {
                        table,
                        name,
                        source: source.into(),
                    })?;
                total = total.saturating_add(value.unwrap_or(0));
            }
        }
        Ok(total)
    }

    /// Every entry, read from one snapshot, in the canonical order of [`FlatContents`]. Keys are
    /// those of the store's scheme (hashed keys for a hashed store).
    pub fn dump_all(&self) -> Result<FlatContents, StateError> {
        let mut out = FlatContents {
            key_scheme: self.key_scheme,
            ..FlatContents::default()
        };
        out.applied_block = self.visit_entries(|entry| {
            match entry {
                FlatEntry::Account { key, account } => out.accounts.push((key.to_vec(), account)),
                FlatEntry::Slot { key, value } => out.storage.push((key.to_vec(), value)),
                FlatEntry::Code { hash, code } => {
                    out.codes.push((hash, Bytes::copy_from_slice(code)))
                }
                FlatEntry::BlockHash { number, hash } => out.block_hashes.push((number, hash)),
            }
            Ok::<(), StateError>(())
        })?;
        Ok(out)
    }

    /// Streams every entry to `visit`, read from one snapshot in the canonical order of
    /// [`FlatContents`] (accounts, storage, codes, block hashes; each sorted by key), and returns
    /// the applied height: [`RocksStore::dump_all`] without holding the state in memory, for
    /// states far larger than it.
    pub fn visit_entries<E: From<StateError>>(
        &self,
        mut visit: impl FnMut(FlatEntry<'_>) -> Result<(), E>,
    ) -> Result<Option<u64>, E> {
        let snapshot = self.db.snapshot();
        let scan = |table: &'static str, f: &mut TableVisitor<'_, E>| -> Result<(), E> {
            for item in snapshot.iterator_cf(self.cf(table)?, IteratorMode::Start) {
                let (key, value) = item.map_err(|source| StateError::Read {
                    table,
                    key: String::new(),
                    source: source.into(),
                })?;
                f(&key, &value)?;
            }
            Ok(())
        };
        let check_len = |table: &'static str, key: &[u8], expected: usize| {
            if key.len() == expected {
                Ok(())
            } else {
                Err(StateError::Corrupt {
                    table,
                    key: hex_key(key),
                    reason: format!("key is {} bytes, expected {expected}", key.len()),
                })
            }
        };

        let account_len = self.key_scheme.account_key_len();
        scan(cf::ACCOUNTS, &mut |k, v| {
            check_len(cf::ACCOUNTS, k, account_len)?;
            let account = codec::decode_account(cf::ACCOUNTS, k, v)?;
            visit(FlatEntry::Account { key: k, account })
        })?;
        let storage_len = self.key_scheme.storage_key_len();
        scan(cf::STORAGE, &mut |k, v| {
            check_len(cf::STORAGE, k, storage_len)?;
            let value = decode_slot(k, v)?;
            visit(FlatEntry::Slot { key: k, value })
        })?;
        scan(cf::CODE, &mut |k, v| {
            let hash = B256::try_from(k).map_err(|_| StateError::Corrupt {
                table: cf::CODE,
                key: hex_key(k),
                reason: format!("key is {} bytes, expected 32", k.len()),
            })?;
            visit(FlatEntry::Code { hash, code: v })
        })?;
        scan(cf::BLOCK_HASHES, &mut |k, v| {
            check_len(cf::BLOCK_HASHES, k, 8)?;
            let number = codec::decode_u64(cf::BLOCK_HASHES, k, k)?;
            let hash = codec::decode_b256(cf::BLOCK_HASHES, k, v)?;
            visit(FlatEntry::BlockHash { number, hash })
        })?;
        let applied = snapshot
            .get_pinned_cf(self.cf(cf::META)?, cf::META_APPLIED_BLOCK)
            .map_err(|source| StateError::Read {
                table: cf::META,
                key: hex_key(cf::META_APPLIED_BLOCK),
                source: source.into(),
            })?
            .map(|v| codec::decode_u64(cf::META, cf::META_APPLIED_BLOCK, &v))
            .transpose()?;
        Ok(applied)
    }

    /// [`FlatContents::digest`] of [`RocksStore::dump_all`].
    pub fn content_digest(&self) -> Result<B256, StateError> {
        Ok(self.dump_all()?.digest())
    }
}

/// Called with each (key, value) of a table by [`RocksStore::visit_entries`].
type TableVisitor<'a, E> = dyn FnMut(&[u8], &[u8]) -> Result<(), E> + 'a;

/// One entry of a flat state, as [`RocksStore::visit_entries`] streams it (keys in the store's
/// scheme).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlatEntry<'a> {
    /// An account by its encoded key.
    Account {
        /// The encoded account key.
        key: &'a [u8],
        /// Its value.
        account: FlatAccount,
    },
    /// A non-zero slot by its encoded storage key.
    Slot {
        /// The encoded storage key (account key ++ slot key).
        key: &'a [u8],
        /// Its value.
        value: U256,
    },
    /// A contract's code by hash.
    Code {
        /// keccak256 of the code.
        hash: B256,
        /// The code.
        code: &'a [u8],
    },
    /// A canonical block hash.
    BlockHash {
        /// The block number.
        number: u64,
        /// Its hash.
        hash: B256,
    },
}

pub(crate) fn decode_slot(key: &[u8], value: &[u8]) -> Result<U256, StateError> {
    codec::decode_storage_value(value).map_err(|reason| StateError::Corrupt {
        table: cf::STORAGE,
        key: hex_key(key),
        reason: reason.to_string(),
    })
}

impl StateReader for RocksStore {
    fn location(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn accounts_many(&self, addresses: &[Address]) -> Result<Vec<Option<FlatAccount>>, StateError> {
        self.multi_get_accounts(addresses)
    }

    fn storage_many(&self, slots: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        self.multi_get_storage(slots)
    }

    fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
        let key = self.key_scheme.account_key(address);
        self.get(cf::ACCOUNTS, &key, |v| {
            codec::decode_account(cf::ACCOUNTS, &key, v)
        })
    }

    fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
        let key = self.key_scheme.storage_key(address, slot);
        Ok(self
            .get(cf::STORAGE, &key, |v| decode_slot(&key, v))?
            .unwrap_or(U256::ZERO))
    }

    fn code(&self, hash: B256) -> Result<Option<Bytes>, StateError> {
        self.get(cf::CODE, hash.as_slice(), |v| Ok(Bytes::copy_from_slice(v)))
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        let key = number.to_be_bytes();
        self.get(cf::BLOCK_HASHES, &key, |v| {
            codec::decode_b256(cf::BLOCK_HASHES, &key, v)
        })
    }

    fn applied_block(&self) -> Result<Option<u64>, StateError> {
        self.get(cf::META, cf::META_APPLIED_BLOCK, |v| {
            codec::decode_u64(cf::META, cf::META_APPLIED_BLOCK, v)
        })
    }

    fn applied_block_hash(&self) -> Result<Option<B256>, StateError> {
        self.get(cf::META, cf::META_APPLIED_BLOCK_HASH, |v| {
            codec::decode_b256(cf::META, cf::META_APPLIED_BLOCK_HASH, v)
        })
    }

    fn chain_id(&self) -> Result<Option<u64>, StateError> {
        self.get(cf::META, cf::META_CHAIN_ID, |v| {
            codec::decode_u64(cf::META, cf::META_CHAIN_ID, v)
        })
    }
}

impl StateWriter for RocksStore {
    /// Builds one `WriteBatch` in the order [`StateChanges`] documents — wipes, accounts, slots,
    /// codes, block hashes, applied height — and writes it at once. Within a batch later operations
    /// win, so a slot written after its account's wipe survives the wipe's range deletion.
    fn commit_block(&self, changes: &StateChanges, block: AppliedBlock) -> Result<(), StateError> {
        let applied_block = block.number;
        let accounts = self.cf(cf::ACCOUNTS)?;
        let storage = self.cf(cf::STORAGE)?;
        let code = self.cf(cf::CODE)?;
        let block_hashes = self.cf(cf::BLOCK_HASHES)?;
        let meta = self.cf(cf::META)?;
        let scheme = self.key_scheme;
        let mut batch = WriteBatch::default();

        for address in &changes.wiped_storage {
            // Every storage key of the account is its prefix plus exactly 32 bytes, so they all lie
            // in [prefix ++ 00*32, prefix ++ ff*32]. The range delete's end is exclusive, hence the
            // point delete of the last possible key.
            let prefix = scheme.storage_prefix(*address);
            let mut first = [0u8; 64];
            let mut last = [0xffu8; 64];
            first[..prefix.len()].copy_from_slice(&prefix);
            last[..prefix.len()].copy_from_slice(&prefix);
            let (first, last) = (&first[..prefix.len() + 32], &last[..prefix.len() + 32]);
            batch.delete_range_cf(storage, first, last);
            batch.delete_cf(storage, last);
        }
        for (address, account) in &changes.accounts {
            let key = scheme.account_key(*address);
            match account {
                Some(account) => batch.put_cf(accounts, key, account.to_bytes()),
                None => batch.delete_cf(accounts, key),
            }
        }
        for (address, slot, value) in &changes.storage {
            let key = scheme.storage_key(*address, *slot);
            if value.is_zero() {
                batch.delete_cf(storage, key);
            } else {
                batch.put_cf(storage, key, codec::encode_storage_value(*value));
            }
        }
        for (hash, bytes) in &changes.codes {
            batch.put_cf(code, hash, bytes);
        }
        for (number, hash) in &changes.block_hashes {
            batch.put_cf(block_hashes, number.to_be_bytes(), hash);
        }
        batch.put_cf(meta, cf::META_APPLIED_BLOCK, applied_block.to_be_bytes());
        match block.hash {
            Some(hash) => batch.put_cf(meta, cf::META_APPLIED_BLOCK_HASH, hash),
            None => batch.delete_cf(meta, cf::META_APPLIED_BLOCK_HASH),
        }
        if let Some(chain_id) = block.chain_id {
            batch.put_cf(meta, cf::META_CHAIN_ID, chain_id.to_be_bytes());
        }

        let wo = self.write_options();
        let ops = batch.len();
        self.db
            .write_opt(batch, &wo)
            .map_err(|source| StateError::Commit {
                path: self.path.clone(),
                applied_block,
                source: source.into(),
            })?;
        debug!(applied_block, ops, "committed flat state changes");
        Ok(())
    }
}

impl Drop for RocksStore {
    fn drop(&mut self) {
        // Commits without the WAL live only in memtables until flushed; RocksDB flushes them on
        // close too, but flushing here surfaces a failure in the log instead of losing it silently.
        if self.write_without_wal
            && !self.read_only
            && let Err(e) = self.flush()
        {
            warn!(path = %self.path.display(), error = %e, "flushing the flat state on close failed");
        }
    }
}
