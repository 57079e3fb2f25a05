//! Turns mainnet fixtures into dump records, and proves each one exact.
//!
//! Importing a fixture executes its block once, over its own pre-state, with the BAL builder and the
//! pre-value recorder on: the result is a [`BlockRecord`] whose BAL and pre-state come from execution,
//! not from the fixture. Verifying a fixture goes further: the header's gas used (and, from Byzantium on,
//! receipts root and logs bloom) must match; the block re-executed over a RocksDB state seeded only from
//! the record's recorded pre-state must give an identical output; and every transaction replayed alone
//! over the BAL must write exactly the BAL's values for its index.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Errors carry the block, index, account, slot and both values of a mismatch: they are built once,
// on the path that stops a run, so their size costs nothing where it matters.
#![allow(clippy::result_large_err)]

use alloy_primitives::B256;
use bal_replay_dump::BlockRecord;
use bal_replay_exec::{
    BlockCheck, BlockOutput, ChainConfig, ExecError, ExecOptions, execute_block, replay_bal_per_tx,
};
use bal_replay_fixtures::Fixture;
use bal_replay_state::{
    AppliedBlock, MemStore, RocksOptions, RocksStore, StateChanges, StateDatabase, StateError,
    StateWriter,
};
use std::path::Path;

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
    #[error("block {block}: {field} mismatch: header has {expected}, execution gives {got}")]
    HeaderMismatch {
        /// Block number.
        block: u64,
        /// Which header field.
        field: &'static str,
        /// The header's value.
        expected: String,
        /// The executed value.
        got: String,
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

/// Checks an execution output against the block header (see [`bal_replay_exec::check_header`]).
/// Returns whether the receipts root was checked.
pub fn check_header(
    config: &ChainConfig,
    header: &alloy_consensus::Header,
    output: &BlockOutput,
) -> Result<bool, ImportError> {
    Ok(bal_replay_exec::check_header(
        config,
        header,
        output.gas_used,
        output.receipts_root,
        output.logs_bloom,
    )?)
}

/// Executes a fixture's block over its own pre-state with the BAL builder and the recorder on, checks
/// the header, and returns the dump record with the execution output.
pub fn import_fixture(
    config: &ChainConfig,
    fixture: &Fixture,
) -> Result<(BlockRecord, BlockOutput), ImportError> {
    let number = fixture.number();
    let store = MemStore::from_changes(
        &StateChanges::from_pre_state(&fixture.pre_state, &fixture.block_hashes),
        number.saturating_sub(1),
    );
    let output = execute_block(
        config,
        StateDatabase::new(&store),
        &fixture.block,
        &fixture.senders,
        ExecOptions::for_dump(),
    )?;
    check_header(config, &fixture.block.header, &output)?;
    let record = BlockRecord {
        block: fixture.block.clone(),
        senders: fixture.senders.clone(),
        bal: output.bal.clone().unwrap_or_default(),
        pre_state: output.pre_state.clone().unwrap_or_default(),
        block_hashes: fixture.block_hashes.clone(),
    };
    Ok((record, output))
}

/// Creates a RocksDB state at `path` holding exactly a record's pre-state (applied height: the parent).
pub fn seed_rocks_state(
    path: &Path,
    record: &BlockRecord,
    options: &RocksOptions,
) -> Result<RocksStore, ImportError> {
    let store = RocksStore::create(path, Default::default(), options)?;
    // The parent's hash is the record's to give; its chain is not (fixtures carry no chain id).
    store.commit_block(
        &StateChanges::from_pre_state(&record.pre_state, &record.block_hashes),
        AppliedBlock {
            number: record.number().saturating_sub(1),
            hash: Some(record.block.header.parent_hash),
            chain_id: None,
        },
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
    let rocks = seed_rocks_state(scratch, &record, &RocksOptions::default())?;
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
    if rocks_output.bal != mem_output.bal {
        return Err(diverged("BAL"));
    }
    if rocks_output.pre_state != mem_output.pre_state {
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

/// The hash of a record's header, for display.
pub fn header_hash(record: &BlockRecord) -> B256 {
    record.block.header.hash_slow()
}

impl From<bal_replay_exec::HeaderMismatch> for ImportError {
    fn from(m: bal_replay_exec::HeaderMismatch) -> Self {
        Self::HeaderMismatch {
            block: m.block,
            field: m.field,
            expected: m.expected,
            got: m.got,
        }
    }
}

/// The flat state before a chained dump's first block, rebuilt from its records' pre-values alone,
/// and the first block's number (`None` for an empty dump).
///
/// Each key takes the value of the first record that names it. That is its value before the dump:
/// execution reads every key before it writes it (an SSTORE reads the original value, a balance
/// change loads the account), so no earlier block of the dump changed it. One exception: the
/// storage of an account the dump creates is never read from the database (revm knows a new
/// account's storage is empty), so a later record can name such a slot with a value the dump
/// itself wrote; slots of accounts whose first appearance is "absent" are therefore left out:
/// before the dump they did not exist. Block hashes are the union of all records' windows.
pub fn pre_chain_state<E>(
    records: impl IntoIterator<Item = Result<BlockRecord, E>>,
) -> Result<(StateChanges, Option<u64>), E> {
    use std::collections::{BTreeMap, HashMap, HashSet};
    let mut first_block = None;
    let mut accounts: HashMap<alloy_primitives::Address, Option<bal_replay_state::AccountFlat>> =
        HashMap::new();
    let mut storage = HashMap::new();
    let mut codes = HashMap::new();
    let mut hashes = BTreeMap::new();
    for record in records {
        let record = record?;
        first_block.get_or_insert(record.number());
        let pre = &record.pre_state;
        for a in &pre.accounts {
            accounts
                .entry(a.address)
                .or_insert(Some(bal_replay_state::AccountFlat {
                    nonce: a.nonce,
                    balance: a.balance,
                    code_hash: a.code_hash,
                }));
        }
        for address in &pre.absent {
            accounts.entry(*address).or_insert(None);
        }
        for s in &pre.storage {
            storage.entry((s.address, s.slot)).or_insert(s.value);
        }
        for c in &pre.codes {
            codes.entry(c.hash).or_insert_with(|| c.code.clone());
        }
        hashes.extend(record.block_hashes.iter().map(|h| (h.number, h.hash)));
    }
    let created: HashSet<_> = accounts
        .iter()
        .filter(|(_, account)| account.is_none())
        .map(|(address, _)| *address)
        .collect();
    let mut changes = StateChanges {
        accounts: accounts.into_iter().filter(|(_, a)| a.is_some()).collect(),
        storage: storage
            .into_iter()
            .filter(|((address, _), value)| !created.contains(address) && !value.is_zero())
            .map(|((address, slot), value)| (address, slot, value))
            .collect(),
        codes: codes.into_iter().collect(),
        block_hashes: hashes.into_iter().collect(),
        ..StateChanges::default()
    };
    changes.accounts.sort_unstable_by_key(|(a, _)| *a);
    changes.storage.sort_unstable_by_key(|(a, s, _)| (*a, *s));
    changes.codes.sort_unstable_by_key(|(h, _)| *h);
    Ok((changes, first_block))
}
