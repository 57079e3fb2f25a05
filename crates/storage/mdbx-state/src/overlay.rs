//! Replaying over reth's MDBX without writing it: the database opened read-only under a
//! [`MemOverlay`] that keeps every commit in memory.

use crate::{MdbxStore, RethDb, RethDbError};
use alloy_primitives::B256;
use bal_replay_state::{MemOverlay, StateError};
use std::path::{Path, PathBuf};

/// Why reth's MDBX could not be read under an overlay.
#[derive(Debug, thiserror::Error)]
pub enum MdbxOverlayError {
    /// reth's MDBX database could not be opened or its state read.
    #[error("opening reth's MDBX state at {path}")]
    Open {
        /// The directory given.
        path: PathBuf,
        /// The cause.
        source: RethDbError,
    },
    /// The overlay refused the block hashes.
    #[error(transparent)]
    State(#[from] StateError),
}

/// Runs `f` over reth's MDBX at `dir`, opened read-only and read in place under a fresh
/// [`MemOverlay`] that keeps every commit in memory, so the database is never written. The overlay
/// starts with `block_hashes`, (number, hash) pairs (those of a dump's first record: reth keeps
/// headers in static files, not in MDBX).
pub fn with_mdbx_overlay<R>(
    dir: &Path,
    block_hashes: impl IntoIterator<Item = (u64, B256)>,
    f: impl FnOnce(&MemOverlay<&MdbxStore<'_>>) -> R,
) -> Result<R, MdbxOverlayError> {
    let open_err = |source| MdbxOverlayError::Open {
        path: dir.to_path_buf(),
        source,
    };
    let db = RethDb::open_for_random_reads(dir).map_err(open_err)?;
    let mdbx = MdbxStore::new(&db).map_err(open_err)?;
    let store = MemOverlay::new(&mdbx);
    store.insert_block_hashes(block_hashes)?;
    Ok(f(&store))
}
