//! Feeds up to four blocks' access lists, as RLP a dump would carry, to the batch planner: the
//! check, the shift of each block's indices into the batch's index space, the merge
//! (`merge_bals`), revm's `Bal` and the split by index.
//!
//! Input: a design byte (even: full BAL, odd: parallel, which plans over the diffs-only BAL), then
//! per block a transaction count byte, a little-endian `u16` length `L` and `L` bytes of BAL RLP
//! (real BALs run to a few kilobytes). Whatever the BALs say, planning must fail with
//! `MalformedBal` naming the first block whose BAL fails `check_bal` (the `bal_check` target
//! holds that check to an independent oracle), or give a plan whose merged BAL is itself of
//! EIP-7928's shape over the batch's indices (a batch commits each list's last entry as the final
//! value) and whose expected writes at each global index are exactly its block's BAL writes at the
//! local index, shifted.

#![no_main]

use std::sync::LazyLock;

use alloy_consensus::{Block, BlockBody, Header, SignableTransaction, TxEnvelope, TxLegacy};
use alloy_eip7928::{BlockAccessIndex, BlockAccessList};
use alloy_primitives::{Address, Signature, U256};
use bal_replay_dump::BlockRecord;
use bal_replay_engine::{BatchPlan, EngineError, IoDesign, diffs_only_bal};
use bal_replay_executor::{ExecError, tx_writes_from_bal};
use libfuzzer_sys::fuzz_target;

/// One transaction, hashed once: a block of up to 255 is cloned from it, not re-signed per input.
static TX: LazyLock<TxEnvelope> = LazyLock::new(|| {
    let tx = TxLegacy {
        gas_limit: 21_000,
        ..TxLegacy::default()
    };
    TxEnvelope::Legacy(tx.into_signed(Signature::new(U256::from(1), U256::from(1), false)))
});

fn record(number: u64, txs: usize, bal: BlockAccessList) -> BlockRecord {
    BlockRecord {
        block: Block {
            header: Header {
                number,
                ..Header::default()
            },
            body: BlockBody {
                transactions: vec![TX.clone(); txs],
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

/// `writes` with every index shifted by `offset` (in range: the plan's indices fit).
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

fuzz_target!(|data: &[u8]| {
    let Some((&design, mut rest)) = data.split_first() else {
        return;
    };
    let mut records = Vec::new();
    while records.len() < 4 {
        let [txs, len_lo, len_hi, tail @ ..] = rest else {
            break;
        };
        let len = (u16::from_le_bytes([*len_lo, *len_hi]) as usize).min(tail.len());
        let mut rlp = &tail[..len];
        let Ok(bal) = <BlockAccessList as alloy_rlp::Decodable>::decode(&mut rlp) else {
            return;
        };
        records.push(record(100 + records.len() as u64, *txs as usize, bal));
        rest = &tail[len..];
    }
    if records.is_empty() {
        return;
    }
    let diffs_only = design % 2 == 1;
    let design = if diffs_only {
        IoDesign::Parallel
    } else {
        IoDesign::Full
    };
    let first_bad = records
        .iter()
        .find(|r| bal_replay_dump::check_bal(r.tx_count(), &r.bal).is_err())
        .map(|r| r.number());
    let plan = match (BatchPlan::new(records.clone(), design), first_bad) {
        (Ok(plan), None) => plan,
        (Err(EngineError::Exec(ExecError::MalformedBal { block, .. })), Some(bad)) => {
            assert_eq!(block, bad, "the error names the first malformed block");
            return;
        }
        (result, bad) => panic!("first malformed block {bad:?}, but planning gave {result:?}"),
    };
    assert_eq!(plan.expected_writes.len(), plan.tasks.len());
    // The merged BAL is one well-formed BAL over the batch's indices 0..tasks.
    let merged_check = bal_replay_dump::check_bal(plan.tasks.len() - 2, &plan.merged);
    assert!(merged_check.is_ok(), "merged BAL: {merged_check:?}");
    for (k, record) in records.iter().enumerate() {
        let bal = if diffs_only {
            diffs_only_bal(&record.bal)
        } else {
            record.bal.clone()
        };
        for local in 0..=record.tx_count() as u64 + 1 {
            let global = plan.offsets[k] + local;
            assert_eq!(
                plan.expected_writes[global as usize],
                shifted(tx_writes_from_bal(&bal, local), plan.offsets[k]),
                "block {} index {local}",
                record.number()
            );
        }
    }
});
