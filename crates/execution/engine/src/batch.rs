//! A mega-block: consecutive blocks executed as one unit, with one BAL index space.

use crate::{EngineError, IoDesign, design::diffs_only_bal};
use alloy_eip7928::{
    AccountChanges, BlockAccessIndex, BlockAccessList, SlotChanges, StorageChange,
};
use alloy_primitives::{Address, U256};
use bal_replay_dump::BlockRecord;
use bal_replay_executor::{ExecError, check_bal, writes_by_index};
use revm::state::bal::Bal;
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

/// What one task of a batch executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// The block's pre-execution system calls (BAL index 0 of the block).
    PreBlock,
    /// Transaction `i` of the block (BAL index `i + 1`).
    Tx(usize),
    /// The block's post-execution changes: withdrawals, rewards, system calls (BAL index `n + 1`).
    PostBlock,
}

/// One unit of parallel work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Position of the block in the batch.
    pub block: usize,
    /// What runs.
    pub kind: TaskKind,
    /// BAL index within the block.
    pub local_index: u64,
    /// BAL index in the batch's merged index space.
    pub global_index: u64,
}

/// A batch of consecutive blocks prepared for execution.
///
/// Every block `k` gets the global BAL indices `offsets[k] ..= offsets[k] + n_k + 1`, and all the
/// blocks' BALs are merged into one list over that index space. A task at global index `g` then reads,
/// through revm's BAL-indexed reads, the pre-batch state overlaid with every write of an index below
/// `g`: the final writes of the earlier blocks and the earlier writes of its own block. That is exactly
/// the state sequential execution would show it, so all tasks of a batch can run at once.
#[derive(Debug)]
pub struct BatchPlan {
    /// The blocks, in order.
    pub records: Vec<BlockRecord>,
    /// Global index of each block's index 0.
    pub offsets: Vec<u64>,
    /// The merged BAL in alloy form (global indices), as the design ships it.
    pub merged: BlockAccessList,
    /// The merged BAL in revm form, for BAL-indexed reads.
    pub bal: Arc<Bal>,
    /// Every task of the batch, in block order.
    pub tasks: Vec<Task>,
    /// The writes the BAL records for each global index (what each task must write).
    pub expected_writes: Vec<bal_replay_executor::TxWrites>,
    /// The headers' gas used, summed once here: the dump is untrusted and its sum may overflow.
    gas_used: u64,
}

impl BatchPlan {
    /// Prepares `records` (consecutive blocks) for execution in `design`.
    pub fn new(records: Vec<BlockRecord>, design: IoDesign) -> Result<Self, EngineError> {
        let gas_used = header_gas_used(&records)?;
        let mut offsets = Vec::with_capacity(records.len());
        let mut tasks = Vec::new();
        let mut next = 0u64;
        for (k, record) in records.iter().enumerate() {
            offsets.push(next);
            let n = record.tx_count();
            tasks.push(Task {
                block: k,
                kind: TaskKind::PreBlock,
                local_index: 0,
                global_index: next,
            });
            for i in 0..n {
                let local = i as u64 + 1;
                tasks.push(Task {
                    block: k,
                    kind: TaskKind::Tx(i),
                    local_index: local,
                    global_index: next + local,
                });
            }
            let post = n as u64 + 1;
            tasks.push(Task {
                block: k,
                kind: TaskKind::PostBlock,
                local_index: post,
                global_index: next + post,
            });
            next += post + 1;
        }
        // The dump is untrusted: an index past its block would shift into the next block's indices
        // (or overflow), so every record's indices are checked before they are merged.
        // The senders are indexed by transaction below (parallel tasks), so their count is checked
        // here too, not only by `execute_block`.
        for record in &records {
            if record.senders.len() != record.tx_count() {
                return Err(ExecError::SenderCount {
                    block: record.number(),
                    senders: record.senders.len(),
                    txs: record.tx_count(),
                }
                .into());
            }
            check_bal(record.number(), record.tx_count(), &record.bal)?;
        }
        let first_block = records.first().map(|r| r.number()).unwrap_or_default();
        let merged = merge_bals(records.iter().zip(&offsets).map(|(r, off)| {
            if design.diffs_only() {
                (diffs_only_bal(&r.bal), *off)
            } else {
                (r.bal.clone(), *off)
            }
        }))
        .map_err(|e| EngineError::InvalidBal {
            block: first_block,
            message: e.to_string(),
        })?;
        let bal = Bal::try_from(merged.clone()).map_err(|e| EngineError::InvalidBal {
            block: first_block,
            message: e.to_string(),
        })?;
        let expected_writes = writes_by_index(first_block, &merged, tasks.len())?;
        Ok(Self {
            records,
            offsets,
            merged,
            bal: Arc::new(bal),
            tasks,
            expected_writes,
            gas_used,
        })
    }

    /// Total gas used by the batch per the headers (checked not to overflow by [`Self::new`]).
    pub fn gas_used(&self) -> u64 {
        self.gas_used
    }

    /// Transactions in the batch.
    pub fn tx_count(&self) -> usize {
        self.records.iter().map(|r| r.tx_count()).sum()
    }

    /// Number of the first block.
    pub fn first_block(&self) -> u64 {
        self.records.first().map(|r| r.number()).unwrap_or_default()
    }

    /// Number of the last block.
    pub fn last_block(&self) -> u64 {
        self.records.last().map(|r| r.number()).unwrap_or_default()
    }
}

/// The sum of `records`' header gas used, or [`EngineError::GasOverflow`] naming the blocks whose
/// sum does not fit in a `u64`.
fn header_gas_used(records: &[BlockRecord]) -> Result<u64, EngineError> {
    let first = records.first().map(|r| r.number()).unwrap_or_default();
    records.iter().try_fold(0u64, |sum, record| {
        sum.checked_add(record.gas_used())
            .ok_or(EngineError::GasOverflow {
                first,
                last: record.number(),
            })
    })
}

#[derive(Default)]
struct MergedAccount {
    balance: Vec<alloy_eip7928::BalanceChange>,
    nonce: Vec<alloy_eip7928::NonceChange>,
    code: Vec<alloy_eip7928::CodeChange>,
    slots: BTreeMap<U256, Vec<StorageChange>>,
    reads: BTreeSet<U256>,
}

/// A BAL index that does not fit in the batch's index space once shifted by its block's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "account {address} has a BAL change at index {index}, which overflows the batch's index space at offset {offset}"
)]
pub struct IndexOverflow {
    /// The account whose change names the index.
    pub address: Address,
    /// The block-local index.
    pub index: u64,
    /// The block's offset in the batch.
    pub offset: u64,
}

/// Merges per-block BALs into one, shifting each block's indices by its offset. Offsets must be
/// ascending, so each change list stays sorted by index. A slot written anywhere in the batch is a
/// change, never also a read (revm's BAL treats a listed read as a slot without writes).
///
/// The indices are not trusted: one whose shifted value overflows is an error, never a panic or a
/// wrapped index. Whether each index lies within its block is [`check_bal`]'s job, which
/// [`BatchPlan::new`] runs first.
pub fn merge_bals(
    bals: impl IntoIterator<Item = (BlockAccessList, u64)>,
) -> Result<BlockAccessList, IndexOverflow> {
    let mut accounts: BTreeMap<Address, MergedAccount> = BTreeMap::new();
    for (bal, offset) in bals {
        for account in bal {
            let address = account.address;
            let shift = |index: BlockAccessIndex| {
                index
                    .0
                    .checked_add(offset)
                    .map(BlockAccessIndex::new)
                    .ok_or(IndexOverflow {
                        address,
                        index: index.0,
                        offset,
                    })
            };
            let merged = accounts.entry(address).or_default();
            for mut c in account.balance_changes {
                c.block_access_index = shift(c.block_access_index)?;
                merged.balance.push(c);
            }
            for mut c in account.nonce_changes {
                c.block_access_index = shift(c.block_access_index)?;
                merged.nonce.push(c);
            }
            for mut c in account.code_changes {
                c.block_access_index = shift(c.block_access_index)?;
                merged.code.push(c);
            }
            for slot in account.storage_changes {
                let changes = merged.slots.entry(slot.slot).or_default();
                for mut c in slot.changes {
                    c.block_access_index = shift(c.block_access_index)?;
                    changes.push(c);
                }
            }
            merged.reads.extend(account.storage_reads);
        }
    }
    Ok(accounts
        .into_iter()
        .map(|(address, m)| {
            let mut out = AccountChanges::new(address);
            out.storage_reads = m
                .reads
                .into_iter()
                .filter(|s| !m.slots.contains_key(s))
                .collect();
            out.storage_changes = m
                .slots
                .into_iter()
                .map(|(slot, changes)| SlotChanges::new(slot, changes))
                .collect();
            out.balance_changes = m.balance;
            out.nonce_changes = m.nonce;
            out.code_changes = m.code;
            out
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::BalanceChange;

    #[test]
    fn merge_shifts_indices_and_turns_reads_into_changes() {
        let a = Address::with_last_byte(1);
        let block0 = vec![
            AccountChanges::new(a)
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(1), U256::from(10)))
                .with_storage_read(U256::from(7)),
        ];
        let block1 = vec![
            AccountChanges::new(a)
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(2), U256::from(20)))
                .with_storage_change(SlotChanges::new(
                    U256::from(7),
                    vec![StorageChange::new(BlockAccessIndex::new(1), U256::from(3))],
                )),
        ];
        let merged = merge_bals([(block0, 0), (block1, 5)]).unwrap();
        assert_eq!(merged.len(), 1);
        let m = &merged[0];
        assert_eq!(
            m.balance_changes
                .iter()
                .map(|c| c.block_access_index.0)
                .collect::<Vec<_>>(),
            vec![1, 7]
        );
        assert!(m.storage_reads.is_empty(), "slot 7 is written in block 1");
        assert_eq!(m.storage_changes[0].changes[0].block_access_index.0, 6);
    }

    fn empty_block(number: u64, gas_used: u64) -> BlockRecord {
        BlockRecord {
            block: alloy_consensus::Block {
                header: alloy_consensus::Header {
                    number,
                    gas_used,
                    ..Default::default()
                },
                body: Default::default(),
            },
            senders: vec![],
            bal: vec![],
            pre_state: Default::default(),
            block_hashes: vec![],
        }
    }

    #[test]
    fn header_gas_that_overflows_is_refused_when_the_batch_is_planned() {
        let half = 1u64 << 63;
        let err = BatchPlan::new(
            vec![empty_block(7, half), empty_block(8, half)],
            IoDesign::Parallel,
        )
        .unwrap_err();
        assert!(
            matches!(err, EngineError::GasOverflow { first: 7, last: 8 }),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "the header gas used of blocks 7..=8 sums past 18446744073709551615"
        );
        // Up to u64::MAX itself the sum is fine.
        let plan = BatchPlan::new(
            vec![empty_block(7, half), empty_block(8, half - 1)],
            IoDesign::Parallel,
        )
        .unwrap();
        assert_eq!(plan.gas_used(), u64::MAX);
    }
}
