//! The state a chained dump starts from, seeded from its records alone.

use crate::ImportError;
use bal_replay_dump::{DumpReader, pre_chain_state};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{AppliedBlock, StateChanges, StateWriter};
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
/// before it, with that block's hash (the first record's parent hash) and the dump's chain id.
pub fn seed_chain_state(reader: &DumpReader, path: &Path) -> Result<SeededChainState, ImportError> {
    let dir = reader.dir().to_path_buf();
    if !reader.manifest().chained {
        return Err(ImportError::NotChained { dir });
    }
    // The first record's parent: the block the state is at, so that a replay can check the
    // dump builds on it by the state's own record of its hash.
    let mut parent_hash = None;
    let chain = pre_chain_state(reader.records().inspect(|record| {
        if let (None, Ok(record)) = (parent_hash, record) {
            parent_hash = Some(record.block.header.parent_hash);
        }
    }))?;
    let (Some(first), Some(parent_hash)) = (chain.first_block, parent_hash) else {
        return Err(ImportError::EmptyDump { dir });
    };
    let changes = StateChanges::from_pre_state(&chain.pre_state, &chain.block_hashes);
    let height = first.saturating_sub(1);
    let store = RocksStore::create(path, Default::default(), &RocksOptions::default())?;
    store.commit_block(
        &changes,
        AppliedBlock::new(height, parent_hash, reader.chain_id()),
    )?;
    Ok(SeededChainState { changes, height })
}
