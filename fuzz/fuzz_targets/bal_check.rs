//! Feeds a block access list, as RLP bytes from a dump would carry it, to the check every BAL
//! passes where it enters ([`bal_replay_dump::check_bal`]). The first byte is the block's
//! transaction count.
//!
//! The check must never panic, and must accept exactly the BALs of EIP-7928's shape: the oracle
//! below restates the rules independently (accounts, slots and reads strictly ascending, reads and
//! changed slots disjoint, every change list strictly ascending within `0..=n + 1`, and every code
//! a change sets loadable by revm, which refuses code that starts with EIP-7702's delegation
//! marker and is not a whole designation). Seed the
//! corpus with real BALs (`shared/fixtures/amsterdam-dev/blocks/*/bal.rlp.hex`, decoded, behind a
//! transaction-count byte): `fuzz/run.sh` does.

#![no_main]

use alloy_eip7928::BlockAccessList;
use alloy_primitives::U256;
use libfuzzer_sys::fuzz_target;
use revm::bytecode::Bytecode;

fn well_formed(tx_count: usize, bal: &BlockAccessList) -> bool {
    let last = tx_count as u64 + 1;
    let ascending = |keys: &[U256]| keys.windows(2).all(|w| w[0] < w[1]);
    let indices_ok = |indices: &[u64]| {
        indices.iter().all(|i| *i <= last) && indices.windows(2).all(|w| w[0] < w[1])
    };
    bal.windows(2).all(|w| w[0].address < w[1].address)
        && bal.iter().all(|a| {
            let slots: Vec<U256> = a.storage_changes.iter().map(|s| s.slot).collect();
            ascending(&slots)
                && ascending(&a.storage_reads)
                && a.storage_reads.iter().all(|r| !slots.contains(r))
                && a.storage_changes.iter().all(|s| {
                    indices_ok(
                        &s.changes
                            .iter()
                            .map(|c| c.block_access_index.0)
                            .collect::<Vec<_>>(),
                    )
                })
                && indices_ok(
                    &a.balance_changes
                        .iter()
                        .map(|c| c.block_access_index.0)
                        .collect::<Vec<_>>(),
                )
                && indices_ok(
                    &a.nonce_changes
                        .iter()
                        .map(|c| c.block_access_index.0)
                        .collect::<Vec<_>>(),
                )
                && a.code_changes
                    .iter()
                    .all(|c| Bytecode::new_raw_checked(c.new_code.clone()).is_ok())
                && indices_ok(
                    &a.code_changes
                        .iter()
                        .map(|c| c.block_access_index.0)
                        .collect::<Vec<_>>(),
                )
        })
}

fuzz_target!(|data: &[u8]| {
    let Some((&tx_count, mut rlp)) = data.split_first() else {
        return;
    };
    let Ok(bal) = <BlockAccessList as alloy_rlp::Decodable>::decode(&mut rlp) else {
        return;
    };
    let checked = bal_replay_dump::check_bal(tx_count as usize, &bal);
    assert_eq!(
        checked.is_ok(),
        well_formed(tx_count as usize, &bal),
        "check_bal and the oracle disagree: {checked:?}"
    );
    if let Err(defect) = checked {
        // The defect names an account the BAL lists.
        assert!(bal.iter().any(|a| a.address == defect.address()));
    }
});
