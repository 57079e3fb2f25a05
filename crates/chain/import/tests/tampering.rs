//! The checks can fail: a tampered BAL, pre-state or header is caught and named.

use alloy_primitives::U256;
use bal_replay_executor::{ChainConfig, ExecError, HeaderMismatch, replay_bal_per_tx};
use bal_replay_fixtures::{Fixture, default_mainnet_dir};
use bal_replay_import::{ImportError, import_fixture};
use bal_replay_state::{MemStore, StateChanges, StateDatabase};

fn fixture(number: u64) -> Fixture {
    let root =
        default_mainnet_dir().expect("../shared/fixtures/mainnet must exist next to the workspace");
    Fixture::read(root.join(number.to_string())).expect("fixture parses")
}

#[test]
fn a_changed_bal_write_is_named() {
    let config = ChainConfig::mainnet();
    let (mut record, _) = import_fixture(&config, &fixture(19934116)).unwrap();
    // Bump the first storage write of the first account that has one.
    let (address, slot, index) = {
        let account = record
            .bal
            .iter_mut()
            .find(|a| !a.storage_changes.is_empty())
            .unwrap();
        let slot = &mut account.storage_changes[0];
        let change = &mut slot.changes[0];
        change.new_value += U256::from(1);
        (account.address, slot.slot, change.block_access_index.0)
    };
    let store = MemStore::from_changes(
        &StateChanges::from_pre_state(&record.pre_state, &record.block_hashes),
        record.number() - 1,
    );
    let err = replay_bal_per_tx(
        &config,
        StateDatabase::new(&store),
        &record.block,
        &record.senders,
        &record.bal,
    )
    .expect_err("a tampered BAL must not verify");
    match err {
        // A write at index 0 or n+1 (system calls, rewards) is not replayed per transaction; a later
        // transaction reading the changed value diverges instead, which also fails.
        ExecError::BalMismatch {
            block,
            address: a,
            slot: s,
            bal_index,
            ..
        } => {
            assert_eq!(block, record.number());
            if bal_index == index {
                assert_eq!((a, s), (address, Some(slot)));
            }
        }
        other => panic!("expected a BAL mismatch, got {other}"),
    }
}

#[test]
fn a_changed_pre_state_value_breaks_the_header_check() {
    let config = ChainConfig::mainnet();
    let mut f = fixture(19934116);
    // The sender of the first transaction loses its balance: the block cannot execute as mined.
    let sender = f.senders[0];
    let account = f
        .pre_state
        .accounts
        .iter_mut()
        .find(|a| a.address == sender)
        .unwrap();
    account.balance = U256::ZERO;
    let err = import_fixture(&config, &f).expect_err("a wrong pre-state must not import");
    assert!(
        matches!(err, ImportError::Exec(ExecError::Execution { .. })),
        "got {err}"
    );
}

#[test]
fn a_wrong_header_gas_is_named() {
    let config = ChainConfig::mainnet();
    let mut f = fixture(12244000 - 1);
    f.block.header.gas_used += 1;
    match import_fixture(&config, &f) {
        Err(ImportError::HeaderMismatch(HeaderMismatch { field, block, .. })) => {
            assert_eq!(field, "gasUsed");
            assert_eq!(block, 12243999);
        }
        other => panic!("expected a gasUsed mismatch, got {other:?}"),
    }
}

#[test]
fn a_wrong_receipts_root_is_named() {
    let config = ChainConfig::mainnet();
    let mut f = fixture(19934116);
    f.block.header.receipts_root = Default::default();
    match import_fixture(&config, &f) {
        Err(ImportError::HeaderMismatch(HeaderMismatch { field, .. })) => {
            assert_eq!(field, "receiptsRoot")
        }
        other => panic!("expected a receiptsRoot mismatch, got {other:?}"),
    }
}
