//! Checking a dumped block on its own, with no state: the record must replay from what it carries.

use crate::{EngineError, PreValueDb, check_output};
use alloy_eip7928::BlockAccessList;
use alloy_primitives::{Address, U256};
use bal_replay_dump::BlockRecord;
use bal_replay_executor::{BlockCheck, ChainConfig, ExecOptions, check_bal, execute_block};
use std::collections::BTreeSet;

/// Checks one record on its own. Its block is executed over the record's pre-block values alone, so
/// a read they do not answer is an error naming the key (the dump is incomplete). Gas used, logs bloom
/// and (from Byzantium on) receipts root must equal the header's. The BAL execution builds must equal
/// the record's: the writes of every index (the first difference is named by index, account and slot),
/// then the accounts and slots read.
///
/// This is what the full-BAL design needs of a dump, block by block. Whether consecutive records
/// chain (each block's pre-values are its parent's post-state) is what a replay checks.
pub fn check_record(config: &ChainConfig, record: &BlockRecord) -> Result<BlockCheck, EngineError> {
    // `execute_block` checks the sender count (`ExecError::SenderCount`) before it reads anything.
    // The BAL's indices are checked first: the dump is untrusted, and the comparison with the
    // executed BAL below must not be the first to meet an index outside the block.
    check_bal(record.number(), record.tx_count(), &record.bal)?;
    let db = PreValueDb::from_records(std::slice::from_ref(record))?;
    let output = execute_block(
        config,
        &db,
        &record.block,
        &record.senders,
        ExecOptions::for_verify(),
    )?;
    check_output(config, record, &output)?;
    let built = output.bal.unwrap_or_default();
    if let Some(what) = first_read_difference(&record.bal, &built) {
        return Err(EngineError::InvalidRecord {
            block: record.number(),
            what,
        });
    }
    Ok(BlockCheck::new(config, record, output.gas_used))
}

/// The accounts a BAL names, and the slots it lists as read.
fn read_set(bal: &BlockAccessList) -> BTreeSet<(Address, Option<U256>)> {
    bal.iter()
        .flat_map(|a| {
            std::iter::once((a.address, None))
                .chain(a.storage_reads.iter().map(move |s| (a.address, Some(*s))))
        })
        .collect()
}

/// With equal writes, the first account or read slot one BAL names and the other does not.
fn first_read_difference(recorded: &BlockAccessList, built: &BlockAccessList) -> Option<String> {
    let (recorded, built) = (read_set(recorded), read_set(built));
    let describe = |(address, slot): &(Address, Option<U256>), listed: bool| {
        let key = match slot {
            Some(slot) => format!("slot {slot:#x} of {address}"),
            None => format!("account {address}"),
        };
        if listed {
            format!("the BAL lists {key}, which execution does not access")
        } else {
            format!("execution reads {key}, which the BAL does not list")
        }
    };
    let extra = recorded.difference(&built).next();
    let missing = built.difference(&recorded).next();
    match (extra, missing) {
        (Some(e), Some(m)) if m < e => Some(describe(m, false)),
        (Some(e), _) => Some(describe(e, true)),
        (None, Some(m)) => Some(describe(m, false)),
        (None, None) => None,
    }
}
