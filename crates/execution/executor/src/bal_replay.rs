//! Replaying each transaction alone over the BAL, the check that a BAL is exact.

use crate::{ChainConfig, ExecError};
use alloy_consensus::{Block, TxEnvelope};
use alloy_eip7928::{AccountChanges, BlockAccessList};
use alloy_evm::{
    EvmFactory,
    block::{BalIndexedDatabase, BlockExecutor},
    eth::{EthBlockExecutor, EthEvmFactory, receipt_builder::AlloyReceiptBuilder},
};
use alloy_primitives::Address;
use revm::{
    DatabaseRef,
    database::{State, WrapDatabaseRef},
    database_interface::DBErrorMarker,
    state::bal::Bal,
};
use std::sync::Arc;

/// The writes of one BAL index: every account with a change at that index, with only those changes,
/// and no reads. Two `TxWrites` are equal exactly when the index wrote the same values.
pub type TxWrites = BlockAccessList;

/// The writes the BAL records for `index` (0 = pre-block system calls, `i + 1` = transaction `i`).
pub fn tx_writes_from_bal(bal: &BlockAccessList, index: u64) -> TxWrites {
    let index = alloy_eip7928::BlockAccessIndex::new(index);
    bal.iter()
        .filter_map(|account| {
            let mut out = AccountChanges::new(account.address);
            out.storage_changes = account
                .storage_changes
                .iter()
                .filter_map(|slot| {
                    let changes: Vec<_> = slot
                        .changes
                        .iter()
                        .filter(|c| c.block_access_index == index)
                        .cloned()
                        .collect();
                    (!changes.is_empty())
                        .then(|| alloy_eip7928::SlotChanges::new(slot.slot, changes))
                })
                .collect();
            out.balance_changes = account
                .balance_changes
                .iter()
                .filter(|c| c.block_access_index == index)
                .cloned()
                .collect();
            out.nonce_changes = account
                .nonce_changes
                .iter()
                .filter(|c| c.block_access_index == index)
                .cloned()
                .collect();
            out.code_changes = account
                .code_changes
                .iter()
                .filter(|c| c.block_access_index == index)
                .cloned()
                .collect();
            let empty = out.storage_changes.is_empty()
                && out.balance_changes.is_empty()
                && out.nonce_changes.is_empty()
                && out.code_changes.is_empty();
            (!empty).then_some(out)
        })
        .collect()
}

/// Checks that a block's BAL has the shape EIP-7928 requires ([`bal_replay_dump::check_bal`]:
/// accounts, slots and indices strictly ascending, each index within `0..=tx_count + 1`). The dump's
/// reader and writer check every record already; this is the same check for a BAL that reaches
/// execution another way (a record built in memory). An index past the block would otherwise be
/// dropped silently or, shifted into a batch's index space, land in another block; a list out of
/// order or naming a key twice would make its last entry, which a batch commits as the final value,
/// not the last write.
pub fn check_bal(block: u64, tx_count: usize, bal: &BlockAccessList) -> Result<(), ExecError> {
    bal_replay_dump::check_bal(tx_count, bal)
        .map_err(|defect| ExecError::MalformedBal { block, defect })
}

/// The writes of every index `0..indices` in one pass over the BAL: `result[i]` equals
/// [`tx_writes_from_bal`]`(bal, i)`. Filtering the whole BAL once per index is quadratic in the BAL's
/// size; a batch of many blocks has tens of thousands of indices.
///
/// `bal` is one block's BAL with `indices = tx_count + 2`, or a batch's merged BAL with one index per
/// task. A change at an index `>= indices` is an error naming `block` (the block, or the batch's
/// first block) and that index with `tx_count = indices - 2`, never dropped: a dropped change would
/// be a write nobody checks.
pub fn writes_by_index(
    block: u64,
    bal: &BlockAccessList,
    indices: usize,
) -> Result<Vec<TxWrites>, ExecError> {
    let mut out: Vec<TxWrites> = vec![Vec::new(); indices];
    // Accounts come in address order, so each index's list stays sorted by pushing in order.
    fn entry(list: &mut TxWrites, address: alloy_primitives::Address) -> &mut AccountChanges {
        if list.last().is_none_or(|a| a.address != address) {
            list.push(AccountChanges::new(address));
        }
        let last = list.len() - 1;
        &mut list[last]
    }
    let out_of_range =
        |address, index: alloy_eip7928::BlockAccessIndex| ExecError::BalIndexOutOfRange {
            block,
            address,
            index: index.0,
            tx_count: indices.saturating_sub(2),
        };
    for account in bal {
        let address = account.address;
        let list_at = |index: alloy_eip7928::BlockAccessIndex| {
            usize::try_from(index.0)
                .ok()
                .filter(|i| *i < indices)
                .ok_or_else(|| out_of_range(address, index))
        };
        for slot in &account.storage_changes {
            for change in &slot.changes {
                let a = entry(&mut out[list_at(change.block_access_index)?], address);
                match a.storage_changes.last_mut() {
                    Some(s) if s.slot == slot.slot => s.changes.push(change.clone()),
                    _ => a.storage_changes.push(alloy_eip7928::SlotChanges::new(
                        slot.slot,
                        vec![change.clone()],
                    )),
                }
            }
        }
        for change in &account.balance_changes {
            let list = &mut out[list_at(change.block_access_index)?];
            entry(list, address).balance_changes.push(change.clone());
        }
        for change in &account.nonce_changes {
            let list = &mut out[list_at(change.block_access_index)?];
            entry(list, address).nonce_changes.push(change.clone());
        }
        for change in &account.code_changes {
            let list = &mut out[list_at(change.block_access_index)?];
            entry(list, address).code_changes.push(change.clone());
        }
    }
    Ok(out)
}

/// Executes every transaction of `block` alone, over `pre_block_db` overlaid with the BAL's writes of
/// all earlier indices (revm's BAL-indexed reads), and checks that each writes exactly what the BAL
/// records for its index. A read outside the BAL fails: a BAL that verifies is complete for its reads.
///
/// This is the per-transaction view the BAL-parallel engine relies on; here the transactions run one
/// after another, as the reference.
pub fn replay_bal_per_tx<D>(
    config: &ChainConfig,
    pre_block_db: D,
    block: &Block<TxEnvelope>,
    senders: &[Address],
    bal: &BlockAccessList,
) -> Result<(), ExecError>
where
    D: DatabaseRef + Clone + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let number = block.header.number;
    check_bal(number, block.body.transactions.len(), bal)?;
    let revm_bal = Arc::new(Bal::try_from(bal.clone()).map_err(|e| ExecError::BalCode {
        block: number,
        code_hash: Default::default(),
        message: e.to_string(),
    })?);
    let env = config.evm_env(&block.header);
    for (tx_index, (tx, sender)) in block.body.transactions.iter().zip(senders).enumerate() {
        let mut state = State::builder()
            .with_database(WrapDatabaseRef(pre_block_db.clone()))
            .with_bal(revm_bal.clone())
            .with_bal_builder()
            .build();
        BalIndexedDatabase::set_bal_index(&mut state, tx_index as u64 + 1);
        let evm = EthEvmFactory::default().create_evm(state, env.clone());
        // Withdrawals and ommers only matter to `finish`, which a single transaction never runs.
        let ctx = crate::step_execution_ctx(block);
        let mut executor =
            EthBlockExecutor::new(evm, ctx, &config.spec, AlloyReceiptBuilder::default());
        let recovered = alloy_consensus::transaction::Recovered::new_unchecked(tx, *sender);
        executor
            .execute_transaction_with_index(recovered, tx_index)
            .map_err(|e| {
                // A failed read keeps its typed error; anything else is this replay's failure.
                match ExecError::from_execution::<D::Error>(
                    number,
                    tx_index as u64 + 1,
                    block.body.transactions.len(),
                    e,
                ) {
                    ExecError::Execution { message, .. } => ExecError::BalReplay {
                        block: number,
                        tx_index,
                        message,
                    },
                    typed => typed,
                }
            })?;
        let mut state = alloy_evm::Evm::into_db(executor.evm);
        let built = state.take_built_alloy_bal().unwrap_or_default();
        let index = tx_index as u64 + 1;
        check_writes(
            number,
            index,
            block.body.transactions.len(),
            &tx_writes_from_bal(bal, index),
            &tx_writes_from_bal(&built, index),
        )?;
    }
    Ok(())
}

/// Checks that execution wrote exactly what the BAL records for one index, and names the first
/// difference (account, slot, expected and got) when it did not.
pub fn check_writes(
    block: u64,
    bal_index: u64,
    tx_count: usize,
    expected: &TxWrites,
    got: &TxWrites,
) -> Result<(), ExecError> {
    if expected == got {
        return Ok(());
    }
    let mismatch = |address, slot, expected: String, got: String| ExecError::BalMismatch {
        block,
        bal_index,
        tx_count,
        address,
        slot,
        expected,
        got,
    };
    let mut e_iter = expected.iter().peekable();
    let mut g_iter = got.iter().peekable();
    loop {
        match (e_iter.peek(), g_iter.peek()) {
            (None, None) => break,
            (Some(e), g) if g.is_none_or(|g| e.address < g.address) => {
                return Err(mismatch(
                    e.address,
                    None,
                    format!("{e:?}"),
                    "no write".into(),
                ));
            }
            (e, Some(g)) if e.is_none_or(|e| g.address < e.address) => {
                return Err(mismatch(
                    g.address,
                    None,
                    "no write".into(),
                    format!("{g:?}"),
                ));
            }
            (Some(e), Some(g)) => {
                if let Some((slot, expected, got)) = account_difference(e, g) {
                    return Err(mismatch(e.address, slot, expected, got));
                }
                e_iter.next();
                g_iter.next();
            }
            _ => unreachable!("peek arms above cover every case"),
        }
    }
    Ok(())
}

/// The first difference between what the BAL says one account wrote (`e`) and what execution
/// wrote (`g`): the slot for a storage difference, and both sides. `None` when they are equal.
fn account_difference(
    e: &AccountChanges,
    g: &AccountChanges,
) -> Option<(Option<alloy_primitives::U256>, String, String)> {
    if e == g {
        return None;
    }
    if e.balance_changes != g.balance_changes {
        return Some((
            None,
            format!("balance {:?}", e.balance_changes),
            format!("balance {:?}", g.balance_changes),
        ));
    }
    if e.nonce_changes != g.nonce_changes {
        return Some((
            None,
            format!("nonce {:?}", e.nonce_changes),
            format!("nonce {:?}", g.nonce_changes),
        ));
    }
    if e.code_changes != g.code_changes {
        return Some((None, "code change".into(), "other code change".into()));
    }
    for slot in e.storage_changes.iter() {
        let other = g.storage_changes.iter().find(|s| s.slot == slot.slot);
        if other != Some(slot) {
            return Some((
                Some(slot.slot),
                format!("{:?}", slot.changes),
                format!("{:?}", other.map(|o| &o.changes)),
            ));
        }
    }
    g.storage_changes
        .iter()
        .find(|slot| !e.storage_changes.iter().any(|s| s.slot == slot.slot))
        .map(|slot| {
            (
                Some(slot.slot),
                "no write".into(),
                format!("{:?}", slot.changes),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BalanceChange, BlockAccessIndex, SlotChanges, StorageChange};
    use alloy_primitives::U256;

    fn account(byte: u8) -> AccountChanges {
        AccountChanges::new(Address::repeat_byte(byte))
    }

    fn balance(index: u64) -> BalanceChange {
        BalanceChange::new(BlockAccessIndex::new(index), U256::from(index))
    }

    #[test]
    fn an_index_past_the_block_is_an_error_naming_block_account_and_index() {
        // Two transactions: indices 0..=3.
        let bal = vec![
            account(1).with_balance_change(balance(3)),
            account(2).with_balance_change(balance(4)),
        ];
        let expected = ExecError::BalIndexOutOfRange {
            block: 17,
            address: Address::repeat_byte(2),
            index: 4,
            tx_count: 2,
        };
        let err = writes_by_index(17, &bal, 4).unwrap_err();
        assert_eq!(err.to_string(), expected.to_string());
        assert!(matches!(
            err,
            ExecError::BalIndexOutOfRange { block: 17, address, index: 4, tx_count: 2 }
                if address == Address::repeat_byte(2)
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "block 17: account {} has a BAL change at index 4, outside the block's indices 0..=3 (2 transactions)",
                Address::repeat_byte(2)
            )
        );
        let err = check_bal(17, 2, &bal).unwrap_err();
        assert!(
            matches!(
                err,
                ExecError::MalformedBal {
                    block: 17,
                    defect: bal_replay_dump::BalDefect::IndexOutOfRange {
                        index: 4,
                        last: 3,
                        ..
                    }
                }
            ),
            "{err:?}"
        );
        // The largest index a u64 holds does not wrap into range on 32 or 64 bits.
        let huge = vec![account(1).with_storage_change(SlotChanges::new(
            U256::from(5),
            vec![StorageChange::new(
                BlockAccessIndex::new(u64::MAX),
                U256::ONE,
            )],
        ))];
        assert!(matches!(
            writes_by_index(1, &huge, 4),
            Err(ExecError::BalIndexOutOfRange {
                index: u64::MAX,
                ..
            })
        ));
        assert!(matches!(
            check_bal(1, 2, &huge),
            Err(ExecError::MalformedBal {
                defect: bal_replay_dump::BalDefect::IndexOutOfRange {
                    index: u64::MAX,
                    ..
                },
                ..
            })
        ));
    }

    #[test]
    fn change_lists_must_be_strictly_increasing() {
        let slot = U256::from(9);
        let bal = vec![account(1).with_storage_change(SlotChanges::new(
            slot,
            vec![
                StorageChange::new(BlockAccessIndex::new(2), U256::ONE),
                StorageChange::new(BlockAccessIndex::new(2), U256::from(2)),
            ],
        ))];
        match check_bal(5, 3, &bal).unwrap_err() {
            ExecError::MalformedBal {
                block: 5,
                defect:
                    bal_replay_dump::BalDefect::IndexOrder {
                        address,
                        slot: Some(s),
                        index: 2,
                        previous: 2,
                        ..
                    },
            } => assert_eq!((address, s), (Address::repeat_byte(1), slot)),
            other => panic!("unexpected {other}"),
        }
        let bal = vec![
            account(3)
                .with_balance_change(balance(2))
                .with_balance_change(balance(1)),
        ];
        assert!(matches!(
            check_bal(5, 3, &bal),
            Err(ExecError::MalformedBal {
                defect: bal_replay_dump::BalDefect::IndexOrder {
                    index: 1,
                    previous: 2,
                    slot: None,
                    ..
                },
                ..
            })
        ));
    }

    #[test]
    fn a_valid_bal_splits_by_index() {
        let bal = vec![
            account(1)
                .with_balance_change(balance(0))
                .with_balance_change(balance(3)),
            account(2).with_storage_change(SlotChanges::new(
                U256::from(1),
                vec![StorageChange::new(BlockAccessIndex::new(1), U256::ONE)],
            )),
        ];
        check_bal(1, 2, &bal).unwrap();
        let split = writes_by_index(1, &bal, 4).unwrap();
        assert_eq!(split.len(), 4);
        for (i, writes) in split.iter().enumerate() {
            assert_eq!(writes, &tx_writes_from_bal(&bal, i as u64));
        }
        assert_eq!(split[3][0].address, Address::repeat_byte(1));
        assert!(split[2].is_empty());
    }
}
