//! The copy: partitions of each source table, taken by workers, written to RocksDB in WAL-less
//! batches, with per-partition progress recorded only once the data before it is flushed.

use std::{
    borrow::Cow,
    path::Path,
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use alloy_primitives::hex;
use bal_replay_reth_db::{
    Layout, RethDb, RethDbError, Snapshot, TableKind, decode_account_flat, decode_bytecode,
    decode_storage,
};
use bal_replay_rocks::{EncodedBatch, RocksOptions, RocksStore};
use bal_replay_state::{StateError, StateReader, cf, encode_storage_value};

use libmdbx::{Cursor, RO};

use crate::{Identity, MigrateError, MigrateOptions, MigrateSummary, Progress, TableSummary};

/// Key space partitions per table, by the key's first byte. Fixed (not derived from the thread
/// count) so that a resumed run finds the same partitions whatever `--threads` it is given.
pub const PARTITIONS: usize = 16;

/// Destination meta keys written by the migration.
pub mod meta {
    /// `incomplete` while a migration runs or after it stopped; `complete` once it finished.
    pub const STATUS: &[u8] = b"migrate.status";
    /// The source layout (`v1` / `v2`), so a resume cannot mix two sources.
    pub const LAYOUT: &[u8] = b"migrate.layout";
    /// The source's Execution stage height, recorded up front; `applied_block` is only set at the
    /// end, so an incomplete destination cannot be replayed over.
    pub const SOURCE_HEIGHT: &[u8] = b"migrate.source_height";
    /// The MDBX transaction id of the source snapshot the migration reads (u64 big-endian): a
    /// resume must read the very same snapshot.
    pub const SOURCE_TXN_ID: &[u8] = b"migrate.source_txn_id";
    /// Status values.
    pub const INCOMPLETE: &[u8] = b"incomplete";
    /// Status values.
    pub const COMPLETE: &[u8] = b"complete";
    /// Value of a finished partition's progress key.
    pub const DONE: &[u8] = b"done";

    /// Progress key of one partition: value is [`DONE`] or the last source key copied (for
    /// storage, key ++ sub-key).
    pub fn progress_key(table: super::TableKind, partition: usize) -> Vec<u8> {
        format!("migrate.progress.{}.{partition:02}", table.name()).into_bytes()
    }
}

/// The first key byte of partition `p` (inclusive), and of the next one (exclusive; `None` for the
/// last partition).
fn partition_bounds(p: usize) -> (u8, Option<u8>) {
    let width = 256 / PARTITIONS;
    let lo = (p * width) as u8;
    let hi = (p + 1 < PARTITIONS).then(|| ((p + 1) * width) as u8);
    (lo, hi)
}

/// The destination column family of a kind of state.
pub(crate) const fn destination_table(kind: TableKind) -> &'static str {
    match kind {
        TableKind::Accounts => cf::ACCOUNTS,
        TableKind::Storage => cf::STORAGE,
        TableKind::Bytecodes => cf::CODE,
    }
}

/// A flat-state key and value.
pub(crate) type FlatEntry = (Vec<u8>, Vec<u8>);

/// A source entry as MDBX hands it out (borrowed from the map in a read transaction).
type SourceEntry<'txn> = (Cow<'txn, [u8]>, Cow<'txn, [u8]>);

/// Converts one source entry to its flat-state key and value; `None` for entries the flat state
/// does not store (zero slots).
pub(crate) fn convert(
    layout: Layout,
    kind: TableKind,
    key: &[u8],
    value: &[u8],
) -> Result<Option<FlatEntry>, RethDbError> {
    let table = layout.table(kind);
    let bad_key = |expected: usize| RethDbError::Decode {
        table,
        key: hex::encode_prefixed(key),
        reason: format!("key of {} bytes, expected {expected}", key.len()),
    };
    match kind {
        TableKind::Accounts => {
            if key.len() != layout.account_key_len() {
                return Err(bad_key(layout.account_key_len()));
            }
            let account = decode_account_flat(table, key, value)?;
            Ok(Some((key.to_vec(), account.to_bytes().to_vec())))
        }
        TableKind::Storage => {
            if key.len() != layout.account_key_len() {
                return Err(bad_key(layout.account_key_len()));
            }
            let entry = decode_storage(table, key, value)?;
            // Zero slots are not stored: reth drops them too, but the flat state relies on it.
            Ok((!entry.value.is_zero()).then(|| {
                let mut k = Vec::with_capacity(key.len() + 32);
                k.extend_from_slice(key);
                k.extend_from_slice(entry.key.as_slice());
                (k, encode_storage_value(entry.value).as_ref().to_vec())
            }))
        }
        TableKind::Bytecodes => {
            if key.len() != 32 {
                return Err(bad_key(32));
            }
            let code = decode_bytecode(table, key, value)?;
            Ok(Some((key.to_vec(), code.original_bytes().to_vec())))
        }
    }
}

/// The file a migration writes first into a new (or empty) destination and removes once the
/// migration's meta is durable. A destination holding it is one whose creation was cut short: it
/// holds no copied data (copying begins only after the marker is gone), only what this tool made.
pub const CREATING_MARKER: &str = "BAL_MIGRATE_CREATING";

/// The marker's content: says what the file is to whoever finds it.
const MARKER_CONTENT: &[u8] =
    b"bal-migrate is creating this flat state; a run of bal-migrate with the same --dst takes it over\n";

/// Test hook: a process with this variable set to a point's name aborts there (like `kill -9`:
/// no destructor, no flush), so tests can cut a migration short exactly between two steps of
/// creating its destination. Points: `after-create` (directory and marker exist), `after-open`
/// (RocksDB created, no migration meta), `after-meta` (meta written, marker still there).
pub const TEST_ABORT_ENV: &str = "BAL_MIGRATE_TEST_ABORT_AT";

fn test_abort_at(point: &str) {
    if std::env::var_os(TEST_ABORT_ENV).is_some_and(|v| v == point) {
        std::process::abort();
    }
}

/// The snapshot (MDBX transaction id) and height a migration recorded in its destination, where
/// it recorded them (destinations made before they were recorded hold neither).
pub(crate) fn recorded_snapshot(store: &RocksStore) -> Result<Option<(u64, u64)>, MigrateError> {
    let read = |key: &[u8]| -> Result<Option<u64>, MigrateError> {
        let v = store
            .meta(key)
            .map_err(|e| MigrateError::state(store.path(), e))?;
        Ok(v.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
            .map(u64::from_be_bytes))
    };
    Ok(read(meta::SOURCE_TXN_ID)?.zip(read(meta::SOURCE_HEIGHT)?))
}

/// What is at the destination path before a run.
enum Found {
    /// Nothing, or an empty directory: a fresh migration goes there.
    Fresh,
    /// A creation of ours that was cut short (the marker is there).
    CutShort,
    /// Anything else: an earlier migration (to resume), or not ours at all.
    Occupied,
}

fn inspect(dst: &Path) -> Result<Found, MigrateError> {
    let io = |source| MigrateError::CreateDestination {
        path: dst.to_path_buf(),
        source,
    };
    match std::fs::read_dir(dst) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Found::Fresh),
        Err(e) => Err(io(e)),
        Ok(mut entries) => {
            if entries.next().is_none() {
                Ok(Found::Fresh)
            } else if std::fs::read(dst.join(CREATING_MARKER))
                .is_ok_and(|content| content == MARKER_CONTENT)
            {
                // Its content, not just its name: a file by that name is not proof it is ours.
                Ok(Found::CutShort)
            } else {
                Ok(Found::Occupied)
            }
        }
    }
}

/// Opens or creates the destination. A fresh one is created and marked incomplete; an existing
/// one is only accepted with `resume`, and only if it is a migration of this very snapshot. A
/// destination whose creation was cut short is taken over by a plain run and a resume alike.
/// Nothing at the destination is ever deleted.
pub(crate) fn open_destination(
    dst: &Path,
    layout: Layout,
    snapshot: &Snapshot<'_>,
    resume: bool,
    table_layout: bal_replay_rocks::TableLayout,
) -> Result<(RocksStore, bool), MigrateError> {
    let opts = RocksOptions {
        write_without_wal: true,
        table_layout,
        ..RocksOptions::default()
    };
    match inspect(dst)? {
        Found::Occupied if !resume => Err(MigrateError::DestinationNotEmpty {
            path: dst.to_path_buf(),
        }),
        Found::Occupied => open_to_resume(dst, layout, snapshot, &opts),
        Found::Fresh => create_destination(dst, layout, snapshot, &opts, false),
        Found::CutShort => {
            tracing::info!(
                dst = %dst.display(),
                "taking over a destination whose creation was cut short (it holds no data yet)"
            );
            create_destination(dst, layout, snapshot, &opts, true)
        }
    }
}

fn open_to_resume(
    dst: &Path,
    layout: Layout,
    snapshot: &Snapshot<'_>,
    opts: &RocksOptions,
) -> Result<(RocksStore, bool), MigrateError> {
    let mismatch = |reason: String| MigrateError::ResumeMismatch {
        path: dst.to_path_buf(),
        reason,
    };
    // Opening a directory that is not a RocksDB would leave RocksDB's LOG and LOCK files in it.
    if !dst.join("CURRENT").is_file() {
        return Err(mismatch(
            "it is not a flat state (no RocksDB CURRENT file); it was left as it is".into(),
        ));
    }
    let store = RocksStore::open(dst, opts).map_err(|e| MigrateError::state(dst, e))?;
    let status = store
        .meta(meta::STATUS)
        .map_err(|e| MigrateError::state(dst, e))?;
    let recorded = store
        .meta(meta::LAYOUT)
        .map_err(|e| MigrateError::state(dst, e))?;
    if status.is_none() || recorded.as_deref() != Some(layout.name().as_bytes()) {
        return Err(mismatch(format!(
            "it holds {} (the source is {})",
            recorded
                .map(|r| String::from_utf8_lossy(&r).into_owned())
                .unwrap_or_else(|| "no migration".into()),
            layout.name()
        )));
    }
    store
        .ensure_key_scheme(layout.key_scheme())
        .map_err(|e| MigrateError::state(dst, e))?;
    match recorded_snapshot(&store)? {
        Some((id, height)) if id == snapshot.id() && height == snapshot.height() => {}
        Some((recorded_id, recorded_height)) => {
            return Err(MigrateError::SourceChanged {
                path: dst.to_path_buf(),
                recorded_id,
                recorded_height,
                id: snapshot.id(),
                height: snapshot.height(),
            });
        }
        None => {
            return Err(mismatch(
                "an older bal-migrate began it without recording the source's snapshot, so \
                 whether the source changed since cannot be checked; start over into a fresh \
                 destination"
                    .into(),
            ));
        }
    }
    let complete = status.as_deref() == Some(meta::COMPLETE);
    Ok((store, complete))
}

/// Creates the destination: marker first, then the store, then the meta (durably), then the
/// marker goes. A kill between any two steps leaves the marker in place, so the next run knows the
/// directory is ours and empty of data, and redoes the steps (each is idempotent).
fn create_destination(
    dst: &Path,
    layout: Layout,
    snapshot: &Snapshot<'_>,
    opts: &RocksOptions,
    cut_short: bool,
) -> Result<(RocksStore, bool), MigrateError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source: std::io::Error| MigrateError::CreateDestination { path, source }
    };
    let marker = dst.join(CREATING_MARKER);
    if !cut_short {
        std::fs::create_dir_all(dst).map_err(io(dst))?;
        // create_new: if anything appeared in between, it is not ours to write over.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .map_err(io(&marker))?;
        std::io::Write::write_all(&mut file, MARKER_CONTENT).map_err(io(&marker))?;
        file.sync_all().map_err(io(&marker))?;
        sync_dir(dst)?;
    }
    test_abort_at("after-create");
    // `open` with create_if_missing creates the database, or opens one an earlier cut-short run
    // created (initialised plain); the key scheme is then set to the layout's either way.
    let mut store = RocksStore::open(
        dst,
        &RocksOptions {
            create_if_missing: true,
            ..opts.clone()
        },
    )
    .map_err(|e| MigrateError::state(dst, e))?;
    if store.key_scheme() != layout.key_scheme() {
        store
            .set_key_scheme(layout.key_scheme())
            .map_err(|e| MigrateError::state(dst, e))?;
    }
    test_abort_at("after-open");
    // Marked before any data goes in, durably: whatever happens next, the destination says what it
    // is, and which snapshot of which source it is a copy of.
    for (k, v) in [
        (meta::STATUS, meta::INCOMPLETE.to_vec()),
        (meta::LAYOUT, layout.name().as_bytes().to_vec()),
        (
            meta::SOURCE_HEIGHT,
            snapshot.height().to_be_bytes().to_vec(),
        ),
        (meta::SOURCE_TXN_ID, snapshot.id().to_be_bytes().to_vec()),
    ] {
        store
            .put_meta(k, &v)
            .map_err(|e| MigrateError::state(dst, e))?;
    }
    test_abort_at("after-meta");
    // The marker is ours: written by this run, or by the cut-short run of ours it takes over
    // (`inspect` checked its content).
    std::fs::remove_file(&marker).map_err(io(&marker))?;
    sync_dir(dst)?;
    Ok((store, false))
}

/// Makes a directory's entries (a created or removed file) durable.
fn sync_dir(dir: &Path) -> Result<(), MigrateError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| MigrateError::CreateDestination {
            path: dir.to_path_buf(),
            source,
        })
}

/// Shared state of one run.
pub(crate) struct Run<'a> {
    pub src: &'a RethDb,
    /// The one read transaction every worker reads through.
    pub snapshot: &'a Snapshot<'a>,
    pub store: &'a RocksStore,
    pub opts: &'a MigrateOptions,
    pub progress: &'a dyn Progress,
    pub stop: AtomicBool,
    pub written: AtomicU64,
    pub counts: [AtomicU64; 3],
    pub bytes: [AtomicU64; 3],
    pub first_error: Mutex<Option<MigrateError>>,
    /// Serializes flush + progress writes: one flush covers every worker's data so far.
    pub flush_lock: Mutex<()>,
}

fn kind_index(kind: TableKind) -> usize {
    match kind {
        TableKind::Accounts => 0,
        TableKind::Storage => 1,
        TableKind::Bytecodes => 2,
    }
}

impl<'a> Run<'a> {
    fn dst_err(&self, e: StateError) -> MigrateError {
        MigrateError::state(self.store.path(), e)
    }

    fn progress_of(&self, kind: TableKind, p: usize) -> Result<Option<Vec<u8>>, MigrateError> {
        self.store
            .meta(&meta::progress_key(kind, p))
            .map_err(|e| self.dst_err(e))
    }

    /// Makes everything written so far durable, then records `progress` for the partition. The
    /// order is the whole resume guarantee: progress never runs ahead of flushed data.
    fn checkpoint(&self, kind: TableKind, p: usize, progress: &[u8]) -> Result<(), MigrateError> {
        let _guard = self.flush_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.store.flush().map_err(|e| self.dst_err(e))?;
        self.store
            .put_meta(&meta::progress_key(kind, p), progress)
            .map_err(|e| self.dst_err(e))
    }

    /// An empty batch for `kind`'s destination table.
    fn batch(&self, kind: TableKind) -> Result<EncodedBatch<'a>, MigrateError> {
        self.store
            .encoded_batch(destination_table(kind))
            .map_err(|e| self.dst_err(e))
    }

    /// Runs the work items (table x partition) on `threads` workers.
    pub fn run_all(&self, kinds: &[TableKind]) -> Result<(), MigrateError> {
        let items: Vec<(TableKind, usize)> = kinds
            .iter()
            .flat_map(|k| (0..PARTITIONS).map(move |p| (*k, p)))
            .collect();
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..self.opts.threads.max(1) {
                s.spawn(|| {
                    while !self.stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(kind, p)) = items.get(i) else {
                            break;
                        };
                        if let Err(e) = self.copy_partition(kind, p) {
                            self.stop.store(true, Ordering::Relaxed);
                            let mut first =
                                self.first_error.lock().unwrap_or_else(|e| e.into_inner());
                            first.get_or_insert(e);
                        }
                    }
                });
            }
        });
        match self
            .first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn copy_partition(&self, kind: TableKind, p: usize) -> Result<(), MigrateError> {
        let resume_from = match self.progress_of(kind, p)? {
            Some(v) if v == meta::DONE => return Ok(()),
            other => other,
        };
        let table_name = self.src.layout().table(kind);
        // A transaction of the worker's own reads the same state, without sharing the snapshot's
        // mutex, when the source has not committed since the snapshot: the same transaction id is
        // the same MVCC snapshot. Once it has (a live node), the worker reads through the shared
        // snapshot instead, so what it copies is still of that one height.
        let own = self.src.begin_read()?;
        let txn = if own.id() == self.snapshot.id() {
            &own
        } else {
            tracing::trace!(
                table = kind.name(),
                partition = p,
                snapshot = self.snapshot.id(),
                source_now = own.id(),
                "the source moved since the snapshot; reading through the shared transaction"
            );
            self.snapshot.txn()
        };
        if txn.id() != self.snapshot.id() {
            return Err(MigrateError::SnapshotMismatch {
                expected: self.snapshot.id(),
                found: txn.id(),
            });
        }
        let table = self.src.open_table(txn, table_name)?;
        let mut cursor = txn.cursor(&table).map_err(mdbx_error(table_name))?;
        let first = self.seek_partition(&mut cursor, kind, p, resume_from.as_deref())?;
        self.copy_entries(&mut cursor, first, kind, p)
    }

    /// Positions `cursor` after the last entry of partition `p` a previous run made durable
    /// (`resume_from`), or at the partition's start; returns the entry there.
    fn seek_partition<'txn>(
        &self,
        cursor: &mut Cursor<'txn, RO>,
        kind: TableKind,
        p: usize,
        resume_from: Option<&[u8]>,
    ) -> Result<Option<SourceEntry<'txn>>, MigrateError> {
        let layout = self.src.layout();
        let mdbx = mdbx_error(layout.table(kind));
        let Some(last) = resume_from else {
            return cursor.set_range(&[partition_bounds(p).0]).map_err(mdbx);
        };
        let key_len = if kind == TableKind::Bytecodes {
            32
        } else {
            layout.account_key_len()
        };
        let (k, sub) = last.split_at(key_len.min(last.len()));
        let mut cur: Option<SourceEntry<'_>> = cursor.set_range(k).map_err(mdbx)?;
        // Skip every entry at or before the recorded one (for storage: same key, sub-key <=).
        while let Some((ck, cv)) = &cur {
            let at_or_before = if kind == TableKind::Storage {
                ck.as_ref() == k && cv.get(..32).is_some_and(|s| s <= sub)
            } else {
                ck.as_ref() == k
            };
            if !at_or_before {
                break;
            }
            cur = cursor.next().map_err(mdbx)?;
        }
        Ok(cur)
    }

    /// Writes one batch of `n` source entries (`bytes` of key and value) and counts it; stops the
    /// run at [`MigrateOptions::stop_after`].
    fn write_batch(
        &self,
        kind: TableKind,
        batch: EncodedBatch<'_>,
        n: usize,
        bytes: u64,
    ) -> Result<(), MigrateError> {
        self.store
            .write_encoded(batch)
            .map_err(|e| self.dst_err(e))?;
        let k_idx = kind_index(kind);
        self.counts[k_idx].fetch_add(n as u64, Ordering::Relaxed);
        self.bytes[k_idx].fetch_add(bytes, Ordering::Relaxed);
        self.progress.entries(kind, n as u64, bytes);
        let total = self.written.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if self.opts.stop_after.is_some_and(|limit| total >= limit) {
            self.stop.store(true, Ordering::Relaxed);
            return Err(MigrateError::Interrupted);
        }
        Ok(())
    }

    /// Copies partition `p` from `current` on, in batches, checkpointing progress as it goes.
    fn copy_entries<'txn>(
        &self,
        cursor: &mut Cursor<'txn, RO>,
        mut current: Option<SourceEntry<'txn>>,
        kind: TableKind,
        p: usize,
    ) -> Result<(), MigrateError> {
        let layout = self.src.layout();
        let mdbx = mdbx_error(layout.table(kind));
        let hi = partition_bounds(p).1;
        let mut batch = self.batch(kind)?;
        let (mut in_batch, mut since_checkpoint, mut batch_bytes) = (0usize, 0usize, 0u64);
        let mut last_key: Vec<u8> = Vec::new();
        while let Some((k, v)) = current {
            if hi.is_some_and(|hi| k.first().is_some_and(|b| *b >= hi)) {
                break;
            }
            if let Some((dk, dv)) = convert(layout, kind, &k, &v)? {
                batch_bytes += (dk.len() + dv.len()) as u64;
                batch.put(dk, dv);
            }
            last_key.clear();
            last_key.extend_from_slice(&k);
            if kind == TableKind::Storage {
                last_key.extend_from_slice(&v[..32.min(v.len())]);
            }
            in_batch += 1;
            if in_batch >= self.opts.batch_entries {
                let full = std::mem::replace(&mut batch, self.batch(kind)?);
                self.write_batch(kind, full, in_batch, batch_bytes)?;
                since_checkpoint += in_batch;
                in_batch = 0;
                batch_bytes = 0;
                if since_checkpoint >= self.opts.checkpoint_entries {
                    self.checkpoint(kind, p, &last_key)?;
                    since_checkpoint = 0;
                }
                if self.stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            current = cursor.next().map_err(mdbx)?;
        }
        if in_batch > 0 {
            self.write_batch(kind, batch, in_batch, batch_bytes)?;
        }
        self.checkpoint(kind, p, meta::DONE)
    }
}

/// An MDBX error while reading `table`, as the migration's error.
fn mdbx_error(table: &'static str) -> impl Fn(libmdbx::Error) -> MigrateError + Copy {
    move |source| RethDbError::Mdbx { table, source }.into()
}

/// Copies everything, then marks the destination complete with `identity` (the source's height,
/// its hash and the chain) as its applied block, flushes and compacts.
pub(crate) fn migrate_into(
    src: &RethDb,
    snapshot: &Snapshot<'_>,
    store: &RocksStore,
    opts: &MigrateOptions,
    identity: Identity,
    progress: &dyn Progress,
) -> Result<MigrateSummary, MigrateError> {
    let started = Instant::now();
    let height = snapshot.height();
    let run = Run {
        src,
        snapshot,
        store,
        opts,
        progress,
        stop: AtomicBool::new(false),
        written: AtomicU64::new(0),
        counts: Default::default(),
        bytes: Default::default(),
        first_error: Mutex::new(None),
        flush_lock: Mutex::new(()),
    };
    for kind in TableKind::ALL {
        progress.table_started(
            kind,
            src.entries_in(snapshot.txn(), src.layout().table(kind))?,
        );
    }
    // All tables at once: a worker that finishes accounts goes on with storage partitions, so the
    // few large storage partitions do not leave threads idle at a table boundary.
    let result = run.run_all(&TableKind::ALL);
    for kind in TableKind::ALL {
        progress.table_finished(kind);
    }
    result?;
    store
        .flush()
        .map_err(|e| MigrateError::state(store.path(), e))?;
    store
        .set_applied_block(identity.applied_block())
        .map_err(|e| MigrateError::state(store.path(), e))?;
    store
        .put_meta(meta::STATUS, meta::COMPLETE)
        .map_err(|e| MigrateError::state(store.path(), e))?;
    store
        .compact()
        .map_err(|e| MigrateError::state(store.path(), e))?;
    let elapsed = started.elapsed();
    tracing::debug!(
        layout = src.layout().name(),
        height,
        ?elapsed,
        "migration complete"
    );
    let tables = TableKind::ALL
        .iter()
        .map(|k| TableSummary {
            table: *k,
            entries: run.counts[kind_index(*k)].load(Ordering::Relaxed),
            bytes: run.bytes[kind_index(*k)].load(Ordering::Relaxed),
        })
        .collect();
    Ok(MigrateSummary {
        layout: src.layout(),
        height,
        block_hash: identity.hash,
        chain_id: identity.chain_id,
        tables,
        elapsed,
        already_complete: false,
        snapshot_id: snapshot.id(),
        verify: None,
    })
}

/// Records `identity` in a destination an earlier run finished, where that run (an older
/// `bal-migrate`) recorded no chain id or hash; one it recorded must be `identity`'s.
pub(crate) fn record_identity_of_complete(
    store: &RocksStore,
    identity: Identity,
) -> Result<(), MigrateError> {
    let dst = store.path();
    let chain_id = store.chain_id().map_err(|e| MigrateError::state(dst, e))?;
    let hash = store
        .applied_block_hash()
        .map_err(|e| MigrateError::state(dst, e))?;
    let differs = |recorded: String, now: String| MigrateError::ResumeMismatch {
        path: dst.to_path_buf(),
        reason: format!(
            "it records {recorded} for block {}, where this run takes {now}",
            identity.height
        ),
    };
    if let Some(recorded) = chain_id
        && recorded != identity.chain_id
    {
        return Err(differs(
            format!("chain {recorded}"),
            format!("chain {}", identity.chain_id),
        ));
    }
    if let Some(recorded) = hash
        && recorded != identity.hash
    {
        return Err(differs(
            format!("hash {recorded}"),
            format!("hash {}", identity.hash),
        ));
    }
    if chain_id.is_some() && hash.is_some() {
        return Ok(());
    }
    store
        .set_applied_block(identity.applied_block())
        .map_err(|e| MigrateError::state(dst, e))
}

/// A summary for a destination that an earlier run already finished.
pub(crate) fn already_complete(
    src: &RethDb,
    snapshot: &Snapshot<'_>,
    identity: Identity,
) -> MigrateSummary {
    MigrateSummary {
        layout: src.layout(),
        height: snapshot.height(),
        block_hash: identity.hash,
        chain_id: identity.chain_id,
        tables: Vec::new(),
        elapsed: Duration::ZERO,
        already_complete: true,
        snapshot_id: snapshot.id(),
        verify: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_convert_to_trimmed_values_and_zero_slots_are_skipped() {
        let (account, slot) = ([1u8; 20], [2u8; 32]);
        let entry = |value: &[u8]| [&slot[..], value].concat();
        assert_eq!(
            convert(Layout::V1, TableKind::Storage, &account, &entry(&[])).unwrap(),
            None
        );
        assert_eq!(
            convert(
                Layout::V1,
                TableKind::Storage,
                &account,
                &entry(&[0x0f, 0x01])
            )
            .unwrap(),
            Some(([&account[..], &slot[..]].concat(), vec![0x0f, 0x01]))
        );
        assert!(convert(Layout::V2, TableKind::Storage, &account, &entry(&[1])).is_err());
    }
}
