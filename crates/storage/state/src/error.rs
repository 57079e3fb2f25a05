//! The one error type of the flat state.
//!
//! Messages name the table (column family) and the hex key involved, so a failure deep in a replay
//! points at the exact record. The store's own error (RocksDB's, MDBX's, an I/O error) is kept as
//! the `source()` (not repeated in the message), so error reporters such as `eyre` print it once as
//! the cause. Stores live in other crates, so their errors travel boxed ([`BackendError`]).

use std::path::PathBuf;

use alloy_primitives::B256;

use crate::types::KeyScheme;

/// A store's own error (RocksDB's in `bal-replay-rocks`, MDBX's), kept as a [`StateError`]'s source.
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// An error reading, writing or opening a flat state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// RocksDB refused to open or create the database.
    #[error("cannot open the RocksDB state at {}", path.display())]
    Open {
        /// Database directory.
        path: PathBuf,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// The path given as a state is not one (missing, a file, a directory without a RocksDB
    /// database, another program's database): refused before RocksDB opens it, so nothing is
    /// created or written there.
    #[error("{} is not a flat state: {reason}", path.display())]
    NotAState {
        /// The path given.
        path: PathBuf,
        /// What it is instead.
        reason: String,
    },
    /// A file-system operation on the store's directory failed.
    #[error("cannot access {}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `create` was pointed at a directory that already holds files.
    #[error("refusing to create a state at {}: the directory is not empty", path.display())]
    NotEmpty {
        /// Database directory.
        path: PathBuf,
    },
    /// The database lacks one of the column families this crate declares.
    #[error("the database has no column family `{name}`")]
    MissingColumnFamily {
        /// Column family name.
        name: &'static str,
    },
    /// A required `meta` entry is absent (the directory was not made by `RocksStore::create`).
    #[error("the state at {} has no `{key}` metadata entry; was it created by RocksStore::create?", path.display())]
    MissingMetadata {
        /// Database directory.
        path: PathBuf,
        /// The missing `meta` key.
        key: &'static str,
    },
    /// The store uses another key scheme than the caller expects.
    #[error("the state at {} uses the {found} key scheme, but {expected} was expected", path.display())]
    SchemeMismatch {
        /// Database directory.
        path: PathBuf,
        /// The scheme the caller asked for.
        expected: KeyScheme,
        /// The scheme recorded in the store.
        found: KeyScheme,
    },
    /// The store was written in an on-disk format this build does not read.
    #[error("the state at {} has format version {found}; this build reads version {supported}", path.display())]
    UnsupportedFormat {
        /// Database directory.
        path: PathBuf,
        /// The version recorded in the store.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// A point read or an iteration failed.
    #[error("reading key {key} from table `{table}` failed")]
    Read {
        /// Column family name.
        table: &'static str,
        /// The key, hex-encoded (empty when iterating the whole table).
        key: String,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// A write outside a commit (metadata) failed.
    #[error("writing key {key} to table `{table}` failed")]
    Write {
        /// Column family name.
        table: &'static str,
        /// The key, hex-encoded.
        key: String,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// A batch of encoded entries (`EncodedBatch`) could not be written; none of it was.
    #[error("writing a batch of {entries} entries to table `{table}` failed")]
    WriteBatch {
        /// Column family name.
        table: &'static str,
        /// Entries in the batch.
        entries: usize,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// The atomic write of a commit failed; none of it was applied.
    #[error(
        "committing the changes up to block {applied_block} to {} failed; none of them were applied",
        path.display()
    )]
    Commit {
        /// The store's directory.
        path: PathBuf,
        /// The applied height the commit would have recorded.
        applied_block: u64,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// A stored key or value does not decode.
    #[error("corrupt entry in table `{table}` at key {key}: {reason}")]
    Corrupt {
        /// Column family name.
        table: &'static str,
        /// The key, hex-encoded.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A checkpoint of a store opened read-only was asked for: RocksDB would make one without the
    /// commits still only in the write-ahead log (a read-only store cannot flush them), silently.
    #[error(
        "cannot checkpoint {} opened read-only: the checkpoint would miss the commits still in its write-ahead log; open it read-write (nothing is written but a flush)",
        path.display()
    )]
    CheckpointReadOnly {
        /// The store's directory.
        path: PathBuf,
    },
    /// Taking a checkpoint failed.
    #[error("cannot create a checkpoint at {}", path.display())]
    Checkpoint {
        /// Checkpoint directory.
        path: PathBuf,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// Flushing memtables to disk failed.
    #[error("flushing the memtables to disk failed")]
    Flush {
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// A RocksDB property could not be read.
    #[error("reading property `{name}` of table `{table}` failed")]
    Property {
        /// Column family name.
        table: &'static str,
        /// Property name.
        name: &'static str,
        /// RocksDB's error.
        #[source]
        source: BackendError,
    },
    /// An account refers to code the state does not hold; the flat state is incomplete.
    #[error("the state has no code with hash {hash}")]
    MissingCode {
        /// The code hash.
        hash: B256,
    },
    /// The state holds code revm cannot load under `hash`: the state is corrupt.
    #[error("the state's code {hash}: {defect}")]
    MalformedCode {
        /// The code hash.
        hash: B256,
        /// What is wrong with it.
        #[source]
        defect: bal_replay_dump::MalformedCode,
    },
    /// EVM execution asked for a block hash the state does not hold.
    #[error("the state has no hash for block {number}")]
    MissingBlockHash {
        /// The block number.
        number: u64,
    },
    /// A read from a store other than RocksDB (for example reth's MDBX, read in place) failed.
    #[error("reading key {key} from table `{table}` failed")]
    Backend {
        /// The store's table.
        table: &'static str,
        /// The key, hex-encoded.
        key: String,
        /// The store's error.
        #[source]
        source: BackendError,
    },
    /// The store cannot answer this kind of read at all (for example block hashes from a reth
    /// database whose headers live in static files).
    #[error("{reason}")]
    Unavailable {
        /// What is missing and why.
        reason: String,
    },
    /// A thread panicked while holding the in-memory store's lock, possibly mid-commit, so its
    /// contents can no longer be trusted.
    #[error("the in-memory state's lock was poisoned by a panic in another thread")]
    Poisoned,
}

impl StateError {
    /// Whether RocksDB refused to open the store only because another handle holds it open
    /// read-write: its `LOCK` file is taken, by another process or elsewhere in this one. RocksDB
    /// fails such an open at once rather than waiting, and says so only in its message.
    pub fn is_held_elsewhere(&self) -> bool {
        let Self::Open { source, .. } = self else {
            return false;
        };
        let message = source.to_string();
        // RocksDB's two wordings (`PosixFileSystem::LockFile`): the lock taken by another
        // process, and by another handle of this one.
        message.contains("While lock file") || message.contains("lock hold by current process")
    }
}

// Lets `StateError` be the error of revm's `Database` / `DatabaseRef` (see `StateDatabase`).
impl revm::database_interface::DBErrorMarker for StateError {}
