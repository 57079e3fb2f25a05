//! reth's MDBX state, copied into the RocksDB flat state (`bal-replay-state`).
//!
//! The source is read through `bal-replay-reth-db` ([`RethDb`]), which knows reth's two layouts
//! (v1 plain, v2 hashed) and decodes reth's `Compact` values with reth's own code. Each source table
//! becomes a column family of the flat state: accounts and storage under the layout's key scheme
//! ([`Layout::key_scheme`]: a v2 source gives a hashed flat state, its keys copied as they are),
//! bytecodes by code hash. The source's height (its `Execution` stage checkpoint) becomes the flat
//! state's applied block, recorded with its hash and the chain id, so that a replay can check a
//! dump against it.
//!
//! # The state's identity
//!
//! reth keeps no chain id in MDBX, so the chain is the one whose genesis hash the source holds
//! ([`KNOWN_CHAINS`]: `CanonicalHeaders` for block 0, else `HeaderNumbers`). Where the genesis is
//! not a known chain's, or the source holds none, [`MigrateOptions::chain_id`] must name the chain
//! ([`MigrateError::ChainUnknown`]); where the source names one, a different one given is refused
//! ([`MigrateError::ChainMismatch`]). The block's hash comes from `CanonicalHeaders`, else from
//! `HeaderNumbers` (reth v2 keeps headers in static files but this index in MDBX); where the
//! source holds none, [`MigrateOptions::block_hash`] must give it
//! ([`MigrateError::BlockHashUnknown`]), and one that disagrees with the source's is refused
//! ([`MigrateError::BlockHashMismatch`]). A hash is never made up. All of it is settled before the
//! destination is touched. A resume of a migration an older `bal-migrate` finished without them
//! records them.
//!
//! # What a migration guarantees
//!
//! - **Incomplete is visible.** The destination is marked `migrate.status = incomplete` (meta column
//!   family) before any data goes in, and gets its `applied_block` only when everything is copied,
//!   so a half-copied state can never be replayed over (the engine requires an applied height).
//! - **Resumable after any crash.** Each table is split into [`PARTITIONS`] key ranges. Data goes
//!   into RocksDB without the write-ahead log (bulk loading); a partition's progress (the last source
//!   key copied) is written only after a flush has made that data durable. After `kill -9`, a run
//!   with [`MigrateOptions::resume`] re-copies from each partition's last durable key; copying is
//!   idempotent (puts of the same values), so the result is identical to an uninterrupted run.
//! - **One snapshot.** Every worker reads through one MDBX read transaction (a `bal_replay_reth_db::Snapshot`), and
//!   the height recorded is the one in that same transaction, so a node that keeps writing during
//!   the copy cannot leave a mix of heights marked complete. Its transaction id is recorded in the
//!   destination; a resume refuses a source whose snapshot is no longer that one
//!   ([`MigrateError::SourceChanged`]), and so does a later [`verify`].
//! - **A non-empty destination is never mixed into** unless resuming a migration of the same
//!   source snapshot, and never deleted: a directory that is not a migration of ours is refused.
//! - **Creation has no gap.** A marker file ([`CREATING_MARKER`]) is written into the (new or
//!   empty) destination before anything else and removed only once the migration meta is durable;
//!   a destination holding it is a creation of ours that was cut short and holds no data, so a
//!   plain run and a resume both take it over.
//!
//! Partitions are taken by [`MigrateOptions::threads`] workers. Each begins a read transaction of
//! its own and uses it if its id is the snapshot's (the source has not committed since: the same
//! MVCC snapshot, read without contention); otherwise it reads through the snapshot's transaction,
//! which libmdbx lets threads share (calls on it are serialized by a mutex; a cursor step is
//! short next to the decoding and the RocksDB write that follow it).
//!
//! ```no_run
//! use bal_replay_migrate::{MigrateOptions, NoProgress, migrate};
//! let summary = migrate("/data/reth", "/data/flat", &MigrateOptions::default(), &NoProgress)?;
//! println!("{} entries at block {}", summary.entries(), summary.height);
//! # Ok::<(), bal_replay_migrate::MigrateError>(())
//! ```
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

#[cfg(feature = "clap")]
mod cli;
mod copy;
mod verify;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use alloy_primitives::B256;
use bal_replay_reth_db::{KNOWN_CHAINS, Layout, RethDb, RethDbError, Snapshot, TableKind};
use bal_replay_rocks::RocksStore;
use bal_replay_state::{AppliedBlock, StateError};

#[cfg(feature = "clap")]
pub use cli::CopyArgs;
pub use copy::{CREATING_MARKER, PARTITIONS, TEST_ABORT_ENV, meta};
pub use verify::{Mismatch, TableCounts, VerifyReport};

/// Why a migration failed. Each names the table (and key) it was at where there is one. An
/// underlying MDBX, RocksDB or store error is the `source()`, not repeated in the message, so
/// reporters that walk the chain (`eyre`) print it once.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Reading the source failed (it is missing, not reth's, or a value does not decode).
    #[error(transparent)]
    Source(#[from] RethDbError),
    /// The destination already holds files and `resume` was not asked for.
    #[error(
        "destination {} is not empty; pass --resume to finish an interrupted migration into it",
        path.display()
    )]
    DestinationNotEmpty {
        /// The destination.
        path: PathBuf,
    },
    /// `resume` was asked for, but the destination is not a migration of this source.
    #[error("cannot resume into {}: {reason}", path.display())]
    ResumeMismatch {
        /// The destination.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The destination store failed.
    #[error("destination {}", path.display())]
    State {
        /// The destination.
        path: PathBuf,
        /// The store's error.
        #[source]
        source: StateError,
    },
    /// `resume` was asked for, but the source is no longer the snapshot the migration began with:
    /// finishing would mix two states.
    #[error(
        "cannot resume into {}: the source changed since the migration began (it read MDBX \
         snapshot {recorded_id} at block {recorded_height}; the source is now at snapshot {id}, \
         block {height}); a migration reads one snapshot, so start over into a fresh destination",
        path.display()
    )]
    SourceChanged {
        /// The destination.
        path: PathBuf,
        /// Snapshot (MDBX transaction id) recorded by the first run.
        recorded_id: u64,
        /// Height recorded by the first run.
        recorded_height: u64,
        /// The source's snapshot now.
        id: u64,
        /// The source's height now.
        height: u64,
    },
    /// [`verify`] was asked to compare a destination with a source that has been written since
    /// the migration read it: every new write would show up as a mismatch.
    #[error(
        "cannot verify {}: it was migrated from MDBX snapshot {recorded_id} (block \
         {recorded_height}), and the source has moved to snapshot {id} (block {height}) since; \
         verify with the migration itself (bal-migrate --verify compares within the snapshot it \
         copied)",
        path.display()
    )]
    VerifySourceChanged {
        /// The destination.
        path: PathBuf,
        /// Snapshot recorded by the migration.
        recorded_id: u64,
        /// Height recorded by the migration.
        recorded_height: u64,
        /// The source's snapshot now.
        id: u64,
        /// The source's height now.
        height: u64,
    },
    /// A worker found itself reading another MDBX snapshot than the migration's. Cannot happen
    /// while the workers share one transaction; checked so that it never passes silently.
    #[error("a worker read MDBX snapshot {found}, not the migration's snapshot {expected}")]
    SnapshotMismatch {
        /// The migration's snapshot.
        expected: u64,
        /// The one the worker saw.
        found: u64,
    },
    /// Creating the destination directory or its creation marker failed.
    #[error("cannot create destination {}", path.display())]
    CreateDestination {
        /// The path that could not be created or written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The run stopped at [`MigrateOptions::stop_after`]; the destination is resumable.
    #[error("migration interrupted on request; finish it with --resume")]
    Interrupted,
    /// The source does not say which chain it holds, and [`MigrateOptions::chain_id`] names none.
    #[error(
        "source {} does not say which chain it holds: {}; pass --chain <id>",
        path.display(),
        unknown_chain(genesis_hash)
    )]
    ChainUnknown {
        /// The source's `db` directory.
        path: PathBuf,
        /// Its genesis hash, where it holds one (of no chain this tool knows).
        genesis_hash: Option<B256>,
    },
    /// [`MigrateOptions::chain_id`] is not the chain the source's genesis hash names.
    #[error(
        "source {} holds chain {chain} ({name}, by its genesis hash {genesis_hash}), but --chain \
         says {given}",
        path.display()
    )]
    ChainMismatch {
        /// The source's `db` directory.
        path: PathBuf,
        /// The chain the source holds.
        chain: u64,
        /// Its name.
        name: &'static str,
        /// The source's genesis hash.
        genesis_hash: B256,
        /// The chain given.
        given: u64,
    },
    /// The source holds no hash for the block its state is at, and [`MigrateOptions::block_hash`]
    /// gives none.
    #[error(
        "source {} does not say which block its state is at: {}; pass --block-hash <the hash of \
         block {height}>",
        path.display(),
        unknown_block_hash(*height, found)
    )]
    BlockHashUnknown {
        /// The source's `db` directory.
        path: PathBuf,
        /// The state's height.
        height: u64,
        /// The hashes `HeaderNumbers` holds for the block, where it holds several.
        found: Vec<B256>,
    },
    /// [`MigrateOptions::block_hash`] is not the hash the source holds for its block.
    #[error(
        "source {} holds {} for block {height}, the block its state is at, but --block-hash says \
         {given}",
        path.display(),
        hash_list(found)
    )]
    BlockHashMismatch {
        /// The source's `db` directory.
        path: PathBuf,
        /// The state's height.
        height: u64,
        /// The hash (or hashes) the source holds for it.
        found: Vec<B256>,
        /// The hash given.
        given: B256,
    },
}

fn unknown_chain(genesis_hash: &Option<B256>) -> String {
    let known = KNOWN_CHAINS
        .iter()
        .map(|c| format!("{} ({})", c.name, c.id))
        .collect::<Vec<_>>()
        .join(", ");
    match genesis_hash {
        Some(hash) => format!(
            "its genesis hash {hash} is not one of a chain this tool knows ({known}), and reth \
             keeps no chain id in its database"
        ),
        None => "it holds no genesis hash (CanonicalHeaders and HeaderNumbers have none for \
                 block 0), and reth keeps no chain id in its database"
            .into(),
    }
}

fn unknown_block_hash(height: u64, found: &[B256]) -> String {
    if found.is_empty() {
        format!("neither CanonicalHeaders nor HeaderNumbers holds a hash for block {height}")
    } else {
        format!(
            "HeaderNumbers holds {} for block {height}, so it names no one hash",
            hash_list(found)
        )
    }
}

fn hash_list(hashes: &[B256]) -> String {
    hashes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" and ")
}

impl MigrateError {
    fn state(path: &Path, source: StateError) -> Self {
        Self::State {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// How a migration runs.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrateOptions {
    /// Worker threads (each with its own MDBX read transaction).
    pub threads: usize,
    /// Continue a migration an earlier run left incomplete in the destination.
    pub resume: bool,
    /// Entries per RocksDB write batch.
    pub batch_entries: usize,
    /// Entries a worker copies between durable progress checkpoints (a flush each). Larger is
    /// faster; smaller loses less work to a crash.
    pub checkpoint_entries: usize,
    /// Stop with [`MigrateError::Interrupted`] after about this many entries (tests of resume).
    pub stop_after: Option<u64>,
    /// Afterwards, compare the destination with the source within the migration's own snapshot
    /// (this fraction of entries value by value; counts always in full).
    pub verify: Option<f64>,
    /// The source's chain id: needed where the source's genesis is not a known chain's, refused
    /// where it is another chain's (see the crate doc).
    pub chain_id: Option<u64>,
    /// The hash of the block the source's state is at: needed where the source holds none,
    /// refused where it holds another.
    pub block_hash: Option<B256>,
    /// The index and filter layout of a new destination's files (one resumed keeps its own).
    pub table_layout: bal_replay_rocks::TableLayout,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            resume: false,
            batch_entries: 16 * 1024,
            checkpoint_entries: 4 << 20,
            stop_after: None,
            verify: None,
            chain_id: None,
            block_hash: None,
            table_layout: bal_replay_rocks::TableLayout::Partitioned,
        }
    }
}

/// Receives progress from the workers (a progress bar in the binary). Called concurrently.
pub trait Progress: Sync {
    /// A table is about to be copied; `source_entries` is its size in the source.
    fn table_started(&self, _table: TableKind, _source_entries: u64) {}
    /// `entries` more entries (`bytes` of key and value) were written.
    fn entries(&self, _table: TableKind, _entries: u64, _bytes: u64) {}
    /// No more entries of `table` will be reported.
    fn table_finished(&self, _table: TableKind) {}
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;
impl Progress for NoProgress {}

/// What one table's copy wrote in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// The table.
    pub table: TableKind,
    /// Source entries processed (zero slots included, though not stored).
    pub entries: u64,
    /// Bytes of key and value written.
    pub bytes: u64,
}

/// The result of [`migrate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateSummary {
    /// Source layout.
    pub layout: Layout,
    /// Applied height recorded in the destination.
    pub height: u64,
    /// The hash of that block, recorded with it.
    pub block_hash: B256,
    /// The chain id recorded.
    pub chain_id: u64,
    /// Per table, this run only (a resumed run reports what it copied itself).
    pub tables: Vec<TableSummary>,
    /// Wall time of the copy (compaction included).
    pub elapsed: Duration,
    /// The destination was already complete; nothing was copied.
    pub already_complete: bool,
    /// The MDBX snapshot (transaction id) every worker read.
    pub snapshot_id: u64,
    /// The comparison asked for with [`MigrateOptions::verify`], made in the same snapshot.
    pub verify: Option<VerifyReport>,
}

impl MigrateSummary {
    /// Entries processed in this run.
    pub fn entries(&self) -> u64 {
        self.tables.iter().map(|t| t.entries).sum()
    }
    /// Bytes written in this run.
    pub fn bytes(&self) -> u64 {
        self.tables.iter().map(|t| t.bytes).sum()
    }
}

impl MigrateSummary {
    /// What the run did, for people: one line (a rate, or that `dst` was already complete), then
    /// the verification's lines where one was asked for.
    pub fn describe(&self, dst: &Path) -> String {
        let mut out = if self.already_complete {
            format!(
                "{} is already a complete migration (chain {}, block {} {}, source snapshot {})",
                dst.display(),
                self.chain_id,
                self.height,
                self.block_hash,
                self.snapshot_id
            )
        } else {
            let secs = self.elapsed.as_secs_f64().max(1e-9);
            format!(
                "migrated {} entries ({:.1} MiB) from a {} source of chain {} at block {} {} \
                 (MDBX snapshot {}) in {:.2} s: {:.0} entries/s",
                self.entries(),
                self.bytes() as f64 / (1 << 20) as f64,
                self.layout.name(),
                self.chain_id,
                self.height,
                self.block_hash,
                self.snapshot_id,
                secs,
                self.entries() as f64 / secs
            )
        };
        if let Some(report) = &self.verify {
            out.push('\n');
            out.push_str(&report.describe(self.height));
        }
        out
    }
}

/// Whether `s` is a fraction in (0, 1]: the share of entries [`verify`] compares value by value.
/// A `clap` value parser.
pub fn parse_sample_fraction(s: &str) -> Result<f64, String> {
    let fraction: f64 = s.parse().map_err(|e| format!("{s} is not a number: {e}"))?;
    if fraction > 0.0 && fraction <= 1.0 {
        Ok(fraction)
    } else {
        Err(format!("must be in (0, 1], not {s}"))
    }
}

/// Migrates the reth database at `src` (datadir or its `db/`) into a RocksDB flat state at `dst`.
pub fn migrate(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    opts: &MigrateOptions,
    progress: &dyn Progress,
) -> Result<MigrateSummary, MigrateError> {
    let src = RethDb::open(src)?;
    // Everything below reads this one snapshot: the height, the counts, every worker's entries.
    let snapshot = src.snapshot()?;
    // Fail on a missing state table, or a state of unknown identity, before touching the
    // destination.
    for kind in TableKind::ALL {
        src.entries_in(snapshot.txn(), src.layout().table(kind))?;
    }
    let identity = source_identity(&src, &snapshot, opts)?;
    let (store, complete) = copy::open_destination(
        dst.as_ref(),
        src.layout(),
        &snapshot,
        opts.resume,
        opts.table_layout,
    )?;
    let mut summary = if complete {
        copy::record_identity_of_complete(&store, identity)?;
        copy::already_complete(&src, &snapshot, identity)
    } else {
        copy::migrate_into(&src, &snapshot, &store, opts, identity, progress)?
    };
    if let Some(sample) = opts.verify {
        summary.verify = Some(verify::verify_store(&src, &snapshot, &store, sample)?);
    }
    Ok(summary)
}

/// The block a migrated state is at, its hash and its chain: what a replay checks a dump against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    height: u64,
    hash: B256,
    chain_id: u64,
}

impl Identity {
    fn applied_block(self) -> AppliedBlock {
        AppliedBlock::new(self.height, self.hash, self.chain_id)
    }
}

/// The block the destination will be at, with its hash and chain: what the source says of them,
/// completed (never contradicted) by [`MigrateOptions::chain_id`] and
/// [`MigrateOptions::block_hash`]; an error where neither tells.
fn source_identity(
    src: &RethDb,
    snapshot: &Snapshot<'_>,
    opts: &MigrateOptions,
) -> Result<Identity, MigrateError> {
    let path = src.path().to_path_buf();
    let height = snapshot.height();
    let identity = src.identity_in(snapshot.txn(), height)?;
    let chain_id = match (identity.chain(), opts.chain_id) {
        (Some(chain), Some(given)) if chain.id != given => {
            return Err(MigrateError::ChainMismatch {
                path,
                chain: chain.id,
                name: chain.name,
                genesis_hash: chain.genesis_hash,
                given,
            });
        }
        (Some(chain), _) => chain.id,
        (None, Some(given)) => given,
        (None, None) => {
            return Err(MigrateError::ChainUnknown {
                path,
                genesis_hash: identity.genesis_hash,
            });
        }
    };
    let found = identity.block_hashes;
    let block_hash = match (found.as_slice(), opts.block_hash) {
        ([], Some(given)) => given,
        (found, Some(given)) if found.contains(&given) => given,
        (_, Some(given)) => {
            return Err(MigrateError::BlockHashMismatch {
                path,
                height,
                found,
                given,
            });
        }
        ([hash], None) => *hash,
        (_, None) => {
            return Err(MigrateError::BlockHashUnknown {
                path,
                height,
                found,
            });
        }
    };
    Ok(Identity {
        height,
        hash: block_hash,
        chain_id,
    })
}

/// Compares the destination with the source: counts per table, and every entry (or a `sample`
/// fraction of them, chosen by key hash) value by value; also the applied height. All of it in one
/// snapshot of the source, which must be the one the migration recorded (where it recorded one):
/// otherwise [`MigrateError::VerifySourceChanged`].
pub fn verify(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    sample: f64,
) -> Result<VerifyReport, MigrateError> {
    let src = RethDb::open(src)?;
    let snapshot = src.snapshot()?;
    let dst = dst.as_ref();
    let store = RocksStore::open_read_only(dst).map_err(|e| MigrateError::state(dst, e))?;
    store
        .ensure_key_scheme(src.layout().key_scheme())
        .map_err(|e| MigrateError::state(dst, e))?;
    if let Some((recorded_id, recorded_height)) = copy::recorded_snapshot(&store)?
        && recorded_id != snapshot.id()
    {
        return Err(MigrateError::VerifySourceChanged {
            path: dst.to_path_buf(),
            recorded_id,
            recorded_height,
            id: snapshot.id(),
            height: snapshot.height(),
        });
    }
    verify::verify_store(&src, &snapshot, &store, sample)
}
