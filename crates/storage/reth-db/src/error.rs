//! [`RethDbError`]: why reading (or generating) a reth database failed.

use std::path::PathBuf;

/// Why reading a reth database failed. Each names the table (and key) it was at where there is one;
/// an underlying MDBX error is the `source()`, not repeated in the message, so reporters that walk
/// the chain (`eyre`) print it once.
#[derive(Debug, thiserror::Error)]
pub enum RethDbError {
    /// The source path does not exist or is not a directory.
    #[error("source {} does not exist or is not a directory", path.display())]
    SourceMissing {
        /// The path given.
        path: PathBuf,
    },
    /// The source is not an MDBX database MDBX can open.
    #[error("source {} is not a readable MDBX database: {reason}", path.display())]
    NotMdbx {
        /// The path tried.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// MDBX refused to open the source (busy, permissions, ...).
    #[error(
        "cannot open the MDBX database at {} read-only (where its mdbx.lck is not writable, MDBX \
         allows one opener at a time)",
        path.display()
    )]
    Open {
        /// The database directory.
        path: PathBuf,
        /// MDBX's error.
        #[source]
        source: libmdbx::Error,
    },
    /// The source's `Metadata` does not name a layout this tool knows.
    #[error("source {} has a state layout this tool does not know: {reason}", path.display())]
    UnknownLayout {
        /// The database directory.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// A table the layout needs does not exist.
    #[error("source {} has no table {table}", path.display())]
    MissingTable {
        /// The table.
        table: &'static str,
        /// The database directory.
        path: PathBuf,
    },
    /// The stage checkpoint that gives the state's height is missing.
    #[error("source has no {stage} stage checkpoint, so the state's height is unknown")]
    MissingCheckpoint {
        /// The stage.
        stage: &'static str,
    },
    /// MDBX failed while reading (or, generating, writing) a table.
    #[error("failed to read table {table} from MDBX")]
    Mdbx {
        /// The table.
        table: &'static str,
        /// MDBX's error.
        #[source]
        source: libmdbx::Error,
    },
    /// A value does not decode as the table's type.
    #[error("table {table}, key {key}: value does not decode: {reason}")]
    Decode {
        /// The table.
        table: &'static str,
        /// The key, hex.
        key: String,
        /// Why.
        reason: String,
    },
    /// A database is generated only into a new directory, and this one exists.
    #[error("{} already exists; a reth database is generated only into a new directory", path.display())]
    AlreadyExists {
        /// The `db` directory.
        path: PathBuf,
    },
    /// A test writer was pointed at a database [`crate::generate_source`] did not write (its marker
    /// file is missing), so it may be a node's: refused before opening it.
    #[error(
        "{} does not exist: test writes go only to a database generate_source wrote, never to a \
         node's",
        marker.display()
    )]
    NotGenerated {
        /// The marker file looked for.
        marker: PathBuf,
    },
    /// Creating the directory of a generated database (or its marker file) failed.
    #[error("cannot create {}", path.display())]
    Create {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The flat state whose contents were to be written as a reth database could not be read.
    #[error("reading the flat state at {}", path.display())]
    FlatState {
        /// The state's directory.
        path: PathBuf,
        /// The store's error.
        #[source]
        source: bal_replay_state::StateError,
    },
}
