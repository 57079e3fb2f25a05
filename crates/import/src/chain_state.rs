//! The state a chained dump starts from, seeded from its records alone.

use crate::ImportError;
use bal_replay_dump::{DumpReader, pre_chain_state};
use bal_replay_state::{RocksOptions, RocksStore, StateChanges, StateWriter};
use std::path::Path;

/// What [`seed_chain_state`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeededChainState {
    /// The changes committed.
    pub changes: StateChanges,
    /// The state's applied height: the block before the dump's first.
    pub height: u64,
}

/// Creates a RocksDB state at `path` holding the state before the chained dump `reader`'s first
/// block, rebuilt from the records' pre-values ([`pre_chain_state`]), at the height of the block
/// before it.
pub fn seed_chain_state(reader: &DumpReader, path: &Path) -> Result<SeededChainState, ImportError> {
    let dir = reader.dir().to_path_buf();
    if !reader.manifest().chained {
        return Err(ImportError::NotChained { dir });
    }
    let chain = pre_chain_state(reader.records())?;
    let Some(first) = chain.first_block else {
        return Err(ImportError::EmptyDump { dir });
    };
    let changes = StateChanges::from_pre_state(&chain.pre_state, &chain.block_hashes);
    let height = first.saturating_sub(1);
    let store = RocksStore::create(path, Default::default(), &RocksOptions::default())?;
    store.commit(&changes, height)?;
    Ok(SeededChainState { changes, height })
}
