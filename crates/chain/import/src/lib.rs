//! Turns mainnet fixtures into dump records, and proves each one exact.
//!
//! Importing a fixture executes its block once, over its own pre-state, with the BAL builder and the
//! pre-value recorder on: the result is a [`BlockRecord`] whose BAL and pre-state come from execution,
//! not from the fixture. Verifying a fixture goes further: the header's gas used (and, from Byzantium on,
//! receipts root and logs bloom) must match; the block re-executed over a RocksDB state seeded only from
//! the record's recorded pre-state must give an identical output; and every transaction replayed alone
//! over the BAL must write exactly the BAL's values for its index.
//!
//! A chain fixture (genesis, blocks, the network's receipts and BALs): [`import_chain`] executes
//! it from genesis, checks every block against the network (header, receipts, the BAL byte for
//! byte) and writes a chained dump with the genesis state it replays from.
//!
//! Over many fixtures: [`read_fixtures`], [`import_fixtures`] and [`write_fixture_dump`] make a dump of
//! independent blocks with a seeded state per block; [`FixtureChecks`] verifies a directory of them.
//! [`seed_chain_state`] seeds the state a chained dump starts from, from its records alone.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Errors carry the block, index, account, slot and both values of a mismatch: they are built once,
// on the path that stops a run, so their size costs nothing where it matters.
#![allow(clippy::result_large_err)]

mod chain_import;
mod chain_state;
mod fixture_dump;

pub use bal_replay_fixtures::ChainFixture;
pub use chain_import::{ChainImport, ReceiptMismatch, import_chain};
pub use chain_state::{SeededChainState, seed_chain_state};
pub use fixture_dump::{
    FixtureChecks, import_fixtures, read_fixtures, wipes_existing_storage, write_fixture_dump,
};

use bal_replay_dump::{BlockRecord, DumpError};
use bal_replay_executor::{
    BlockCheck, BlockOutput, ChainConfig, ExecError, ExecOptions, HeaderFields, HeaderMismatch,
    execute_block, execute_for_dump, replay_bal_per_tx,
};
use bal_replay_fixtures::{Fixture, FixtureError};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{
    AppliedBlock, MemStore, StateChanges, StateDatabase, StateError, StateWriter,
};
use std::path::{Path, PathBuf};

/// Why a fixture did not import or verify.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Execution failed or a BAL replay did not match.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// A state store failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// The executed block disagrees with its header.
    #[error(transparent)]
    HeaderMismatch(#[from] HeaderMismatch),
    /// A fixture directory could not be read.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// Reading or writing a dump failed.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// Two fixture directories hold the same block.
    #[error("block {block} given twice ({} and {})", first.display(), second.display())]
    DuplicateBlock {
        /// Block number.
        block: u64,
        /// One directory.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A directory holds no fixture directories.
    #[error("no fixture directories (named by block number, with block.json) under {}", dir.display())]
    NoFixtures {
        /// The directory.
        dir: PathBuf,
    },
    /// The scratch directory for verification could not be created.
    #[error("cannot create a scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    /// A dump's blocks are independent, so no one state comes before them all.
    #[error(
        "dump {} is not chained: its blocks are independent, each with its own pre-state \
         (seed one state per block with import-fixture instead)",
        dir.display()
    )]
    NotChained {
        /// The dump directory.
        dir: PathBuf,
    },
    /// A dump holds no records.
    #[error("dump {} is empty", dir.display())]
    EmptyDump {
        /// The dump directory.
        dir: PathBuf,
    },
    /// Creating, renaming or removing an import's output failed.
    #[error("{}: {source}", path.display())]
    Output {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A dump just written does not read back with every record: nothing is placed.
    #[error("the dump written at {} reads back with {found} records, not {expected}", dir.display())]
    Incomplete {
        /// Where it was written.
        dir: PathBuf,
        /// Records written.
        expected: u64,
        /// Records read back.
        found: u64,
    },
    /// An import would overwrite a dump or state.
    #[error("{} already exists; an import writes a new dump and state", path.display())]
    AlreadyExists {
        /// The path.
        path: PathBuf,
    },
    /// A receipt differs from the network's.
    #[error(transparent)]
    Receipt(#[from] ReceiptMismatch),
    /// A chain fixture's BAL bytes are not a BAL.
    #[error("block {block}: {path} does not decode as a BAL: {reason}")]
    NetworkBal {
        /// Block number.
        block: u64,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Two executions that must agree do not.
    #[error("block {block}: {what} differs between the in-memory and the RocksDB execution")]
    StoreDivergence {
        /// Block number.
        block: u64,
        /// Which part of the output.
        what: &'static str,
    },
}

/// Executes a fixture's block over its own pre-state with the BAL builder and the recorder on, checks
/// the header, and returns the dump record with the execution output (see
/// [`execute_for_dump`]: the output's BAL and pre-state are in the record).
pub fn import_fixture(
    config: &ChainConfig,
    fixture: &Fixture,
) -> Result<(BlockRecord, BlockOutput), ImportError> {
    let store = MemStore::from_changes(
        &StateChanges::from_pre_state(&fixture.pre_state, &fixture.block_hashes),
        fixture.number().saturating_sub(1),
    );
    let recorded = execute_for_dump::<_, ImportError>(
        config,
        StateDatabase::new(&store),
        fixture.block.clone(),
        fixture.senders.clone(),
        fixture.block_hashes.clone(),
        HeaderFields::Check,
    )?;
    Ok((recorded.record, recorded.output))
}

/// Creates a RocksDB state at `path` holding exactly a record's pre-state (applied height: the
/// parent, recorded with its hash and `chain_id`, the chain the record's dump names).
pub fn seed_rocks_state(
    path: &Path,
    record: &BlockRecord,
    chain_id: u64,
    options: &RocksOptions,
) -> Result<RocksStore, ImportError> {
    let store = RocksStore::create(path, Default::default(), options)?;
    store.commit_block(
        &StateChanges::from_pre_state(&record.pre_state, &record.block_hashes),
        AppliedBlock::new(
            record.number().saturating_sub(1),
            record.block.header.parent_hash,
            chain_id,
        ),
    )?;
    Ok(store)
}

/// Imports and fully verifies one fixture (see the crate doc). `scratch` is an empty directory for the
/// RocksDB state of this block.
pub fn verify_fixture(
    config: &ChainConfig,
    fixture: &Fixture,
    scratch: &Path,
) -> Result<(BlockRecord, BlockCheck), ImportError> {
    let (record, mem_output) = import_fixture(config, fixture)?;
    let number = record.number();

    // The recorded pre-state alone must suffice, over the on-disk store, for an identical result.
    let rocks = seed_rocks_state(scratch, &record, config.chain_id, &RocksOptions::default())?;
    let rocks_output = execute_block(
        config,
        StateDatabase::new(&rocks),
        &record.block,
        &record.senders,
        ExecOptions::for_dump(),
    )?;
    let diverged = |what| ImportError::StoreDivergence {
        block: number,
        what,
    };
    if rocks_output.gas_used != mem_output.gas_used || rocks_output.receipts != mem_output.receipts
    {
        return Err(diverged("receipts"));
    }
    if rocks_output.changes != mem_output.changes {
        return Err(diverged("state changes"));
    }
    if rocks_output.bal.as_ref() != Some(&record.bal) {
        return Err(diverged("BAL"));
    }
    if rocks_output.pre_state.as_ref() != Some(&record.pre_state) {
        return Err(diverged("recorded pre-state"));
    }

    replay_bal_per_tx(
        config,
        StateDatabase::new(&rocks),
        &record.block,
        &record.senders,
        &record.bal,
    )?;

    let check = BlockCheck::new(config, &record, mem_output.gas_used);
    Ok((record, check))
}
