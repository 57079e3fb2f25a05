//! Property tests of the engine's BAL handling over untrusted indices: whatever a dump's BALs say,
//! preparing a batch (checking, shifting and merging them, splitting the merged BAL by index)
//! never panics. It fails with a typed error naming the first bad block exactly when its BAL is not
//! of EIP-7928's shape (a change list leaves its block's indices or is out of order, an account or
//! a slot is listed twice), and otherwise gives each task exactly its block's writes at its index.
//!
//! `PROPTEST_CASES` overrides the number of cases (CI runs the default; see fuzz/README.md for the
//! long run).

use alloy_consensus::{Block, BlockBody, Header, SignableTransaction, TxEnvelope, TxLegacy};
use alloy_eip7928::{
    AccountChanges, BalanceChange, BlockAccessIndex, BlockAccessList, CodeChange, NonceChange,
    SlotChanges, StorageChange,
};
use alloy_primitives::{Address, Bytes, Signature, U256};
use bal_replay_dump::BlockRecord;
use bal_replay_engine::{BatchPlan, EngineError, IoDesign, merge_bals};
use bal_replay_executor::{ExecError, tx_writes_from_bal};
use bal_replay_test_utils::proptest_config as cases;
use proptest::prelude::*;
use revm::bytecode::Bytecode;
use std::collections::BTreeMap;

/// Mostly indices near a small block's range, sometimes anything a u64 holds.
fn index() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..6,
        1 => any::<u64>(),
        1 => Just(u64::MAX),
    ]
}

fn changes() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec((index(), any::<u64>()), 0..4)
}

/// The code a change sets: mostly arbitrary bytes, sometimes an EIP-7702 delegation, whole or
/// cut short (code that starts with the delegation marker must be a whole designation).
fn code_of(v: u64) -> Bytes {
    match v % 32 {
        0 => [&[0xef, 0x01, 0x00][..], &[0xab; 20]].concat().into(),
        1 => [&[0xef, 0x01][..], &v.to_be_bytes()].concat().into(),
        _ => Bytes::from(v.to_be_bytes().to_vec()),
    }
}

/// How tidy a generated BAL is: `indices` makes every change list strictly increasing, `keys`
/// every account and slot list (as EIP-7928 requires both), so valid BALs are common, not a rare
/// accident. Untidy keys name an account or a slot twice, or a slot both read and changed.
#[derive(Debug, Clone, Copy)]
struct Tidy {
    indices: bool,
    keys: bool,
}

/// One account's changes.
fn account(address: Address, tidy: Tidy) -> impl Strategy<Value = AccountChanges> {
    (
        changes(),
        changes(),
        changes(),
        proptest::collection::vec((0u8..4, changes()), 0..3),
        proptest::collection::vec(0u8..6, 0..3),
    )
        .prop_map(move |(balance, nonce, code, mut slots, mut reads)| {
            let tidy_indices = |mut list: Vec<(u64, u64)>| {
                if tidy.indices {
                    list.sort_unstable_by_key(|(i, _)| *i);
                    list.dedup_by_key(|(i, _)| *i);
                }
                list
            };
            if tidy.keys {
                slots.sort_by_key(|(slot, _)| *slot);
                slots.dedup_by_key(|(slot, _)| *slot);
                reads.sort_unstable();
                reads.dedup();
                reads.retain(|r| !slots.iter().any(|(slot, _)| slot == r));
            }
            let mut out = AccountChanges::new(address);
            out.balance_changes = tidy_indices(balance)
                .into_iter()
                .map(|(i, v)| BalanceChange::new(BlockAccessIndex::new(i), U256::from(v)))
                .collect();
            out.nonce_changes = tidy_indices(nonce)
                .into_iter()
                .map(|(i, v)| NonceChange::new(BlockAccessIndex::new(i), v))
                .collect();
            out.code_changes = tidy_indices(code)
                .into_iter()
                .map(|(i, v)| CodeChange::new(BlockAccessIndex::new(i), code_of(v)))
                .collect();
            out.storage_changes = slots
                .into_iter()
                .map(|(slot, list)| {
                    SlotChanges::new(
                        U256::from(slot),
                        tidy_indices(list)
                            .into_iter()
                            .map(|(i, v)| {
                                StorageChange::new(BlockAccessIndex::new(i), U256::from(v))
                            })
                            .collect(),
                    )
                })
                .collect();
            out.storage_reads = reads.into_iter().map(U256::from).collect();
            out
        })
}

/// A block's BAL: accounts from a small set (so blocks of a batch share accounts), in address order
/// when its keys are tidy.
fn bal() -> impl Strategy<Value = BlockAccessList> {
    (
        proptest::collection::vec(1u8..6, 0..4),
        any::<bool>(),
        prop_oneof![4 => Just(true), 1 => Just(false)],
    )
        .prop_flat_map(|(mut bytes, indices, keys)| {
            if keys {
                bytes.sort_unstable();
                bytes.dedup();
            }
            let tidy = Tidy { indices, keys };
            bytes
                .into_iter()
                .map(|b| account(Address::repeat_byte(b), tidy))
                .collect::<Vec<_>>()
        })
}

fn tx(nonce: u64) -> TxEnvelope {
    let tx = TxLegacy {
        nonce,
        gas_limit: 21_000,
        ..TxLegacy::default()
    };
    TxEnvelope::Legacy(tx.into_signed(Signature::new(U256::from(1), U256::from(1), false)))
}

fn record(number: u64, txs: usize, bal: BlockAccessList) -> BlockRecord {
    BlockRecord {
        block: Block {
            header: Header {
                number,
                ..Header::default()
            },
            body: BlockBody {
                transactions: (0..txs as u64).map(tx).collect(),
                ommers: vec![],
                withdrawals: None,
            },
        },
        senders: vec![Address::repeat_byte(0xaa); txs],
        bal,
        pre_state: Default::default(),
        block_hashes: vec![],
    }
}

fn records() -> impl Strategy<Value = Vec<BlockRecord>> {
    proptest::collection::vec((0usize..4, bal()), 1..4).prop_map(|blocks| {
        blocks
            .into_iter()
            .enumerate()
            .map(|(k, (txs, bal))| record(100 + k as u64, txs, bal))
            .collect()
    })
}

/// The oracle: whether `record`'s BAL has EIP-7928's shape. Accounts strictly ascending; in each,
/// changed slots and read slots strictly ascending and disjoint; every change list in
/// `0..=n + 1`, strictly increasing; every code set one revm loads.
fn well_formed(record: &BlockRecord) -> bool {
    let last = record.tx_count() as u64 + 1;
    let ascending = |keys: Vec<U256>| keys.windows(2).all(|w| w[0] < w[1]);
    let ok = |indices: Vec<u64>| {
        indices.iter().all(|i| *i <= last) && indices.windows(2).all(|w| w[0] < w[1])
    };
    record.bal.windows(2).all(|w| w[0].address < w[1].address)
        && record.bal.iter().all(|a| {
            ascending(a.storage_changes.iter().map(|s| s.slot).collect())
                && ascending(a.storage_reads.clone())
                && !a
                    .storage_reads
                    .iter()
                    .any(|r| a.storage_changes.iter().any(|s| s.slot == *r))
                && a.storage_changes
                    .iter()
                    .all(|s| ok(s.changes.iter().map(|c| c.block_access_index.0).collect()))
                && ok(a
                    .balance_changes
                    .iter()
                    .map(|c| c.block_access_index.0)
                    .collect())
                && ok(a
                    .nonce_changes
                    .iter()
                    .map(|c| c.block_access_index.0)
                    .collect())
                && ok(a
                    .code_changes
                    .iter()
                    .map(|c| c.block_access_index.0)
                    .collect())
                && a.code_changes
                    .iter()
                    .all(|c| Bytecode::new_raw_checked(c.new_code.clone()).is_ok())
        })
}

/// `writes` with every index shifted by `offset`.
fn shifted(mut writes: BlockAccessList, offset: u64) -> BlockAccessList {
    let shift = |i: &mut BlockAccessIndex| *i = BlockAccessIndex::new(i.0 + offset);
    for a in &mut writes {
        a.balance_changes
            .iter_mut()
            .for_each(|c| shift(&mut c.block_access_index));
        a.nonce_changes
            .iter_mut()
            .for_each(|c| shift(&mut c.block_access_index));
        a.code_changes
            .iter_mut()
            .for_each(|c| shift(&mut c.block_access_index));
        for s in &mut a.storage_changes {
            s.changes
                .iter_mut()
                .for_each(|c| shift(&mut c.block_access_index));
        }
    }
    writes
}

proptest! {
    #![proptest_config(cases(2_000))]

    #[test]
    fn batch_plans_over_untrusted_indices_are_typed_errors_or_exact(
        records in records(),
        diffs_only in any::<bool>(),
    ) {
        let design = if diffs_only { IoDesign::Parallel } else { IoDesign::Full };
        let first_bad = records.iter().find(|r| !well_formed(r)).map(|r| r.number());
        match (BatchPlan::new(records.clone(), design), first_bad) {
            (Ok(plan), None) => {
                prop_assert_eq!(plan.expected_writes.len(), plan.tasks.len());
                for (k, record) in records.iter().enumerate() {
                    let bal = if diffs_only {
                        bal_replay_engine::diffs_only_bal(&record.bal)
                    } else {
                        record.bal.clone()
                    };
                    for local in 0..=record.tx_count() as u64 + 1 {
                        let global = plan.offsets[k] + local;
                        prop_assert_eq!(
                            &plan.expected_writes[global as usize],
                            &shifted(tx_writes_from_bal(&bal, local), plan.offsets[k]),
                            "block {} index {}", record.number(), local
                        );
                    }
                }
            }
            (
                Err(EngineError::Exec(
                    ExecError::MalformedBal { block, .. },
                )),
                Some(bad),
            ) => prop_assert_eq!(block, bad),
            (result, bad) => prop_assert!(false, "first bad block {bad:?}, got {result:?}"),
        }
    }

    #[test]
    fn merging_at_any_offset_never_panics(
        bals in proptest::collection::vec((bal(), any::<u64>()), 0..4),
    ) {
        let overflows = bals.iter().any(|(bal, offset)| {
            bal.iter().any(|a| {
                a.balance_changes.iter().map(|c| c.block_access_index.0)
                    .chain(a.nonce_changes.iter().map(|c| c.block_access_index.0))
                    .chain(a.code_changes.iter().map(|c| c.block_access_index.0))
                    .chain(a.storage_changes.iter().flat_map(|s| s.changes.iter().map(|c| c.block_access_index.0)))
                    .any(|i| i.checked_add(*offset).is_none())
            })
        });
        let total: usize = bals.iter().map(|(bal, _)| {
            bal.iter().map(|a| a.balance_changes.len() + a.nonce_changes.len() + a.code_changes.len()
                + a.storage_changes.iter().map(|s| s.changes.len()).sum::<usize>()).sum::<usize>()
        }).sum();
        match merge_bals(bals) {
            Ok(merged) => {
                prop_assert!(!overflows);
                // No change is lost or invented by the merge.
                let merged_total: usize = merged.iter().map(|a| a.balance_changes.len() + a.nonce_changes.len() + a.code_changes.len()
                    + a.storage_changes.iter().map(|s| s.changes.len()).sum::<usize>()).sum();
                prop_assert_eq!(merged_total, total);
                let accounts: BTreeMap<Address, ()> = merged.iter().map(|a| (a.address, ())).collect();
                prop_assert_eq!(accounts.len(), merged.len(), "one entry per account");
            }
            Err(e) => {
                prop_assert!(overflows, "{e}");
                prop_assert!(e.index.checked_add(e.offset).is_none());
            }
        }
    }
}
