//! `check_record`: a dumped block checked on its own, from its record alone. Real mainnet blocks and
//! a generated chain pass; a record whose BAL, pre-values or senders were altered fails, naming
//! the block and the account or slot.

use alloy_primitives::U256;
use bal_replay_dump::{BlockRecord, DumpReader};
use bal_replay_engine::{EngineError, check_record};
use bal_replay_executor::{ChainConfig, ExecError};
use bal_replay_fixtures::{Fixture, default_mainnet_dir, fixture_dirs};
use bal_replay_import::import_fixture;
use bal_replay_synth::{GeneratorConfig, generate};

fn generated_records(dir: &std::path::Path) -> Vec<BlockRecord> {
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 3,
        gas_per_block: 6_000_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dir.join("dump"), &dir.join("state"), None).unwrap();
    DumpReader::open(dir.join("dump"))
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn mainnet_fixture_records_check_against_their_headers() {
    let root = default_mainnet_dir().expect("../shared/fixtures/mainnet");
    let config = ChainConfig::mainnet();
    let mut checked = 0;
    for dir in fixture_dirs(&root).unwrap() {
        let fixture = Fixture::read(&dir).unwrap();
        let (record, _) = import_fixture(&config, &fixture).unwrap();
        let check = check_record(&config, &record)
            .unwrap_or_else(|e| panic!("block {}: {e}", record.number()));
        assert_eq!(check.number, fixture.number());
        assert_eq!(check.gas_used, fixture.block.header.gas_used);
        assert_eq!(check.txs, fixture.block.body.transactions.len());
        assert_eq!(check.bal_accounts, record.bal.len());
        checked += 1;
    }
    assert!(checked >= 50, "{checked} fixtures");
}

/// A balance the BAL records after some transaction, off by one.
fn a_wrong_balance_is_named(config: &ChainConfig, good: &BlockRecord) {
    let number = good.number();
    let mut bad = good.clone();
    let account = bad
        .bal
        .iter_mut()
        .find(|a| !a.balance_changes.is_empty())
        .unwrap();
    account.balance_changes[0].post_balance += U256::from(1);
    let address = account.address;
    match check_record(config, &bad).unwrap_err() {
        EngineError::Exec(ExecError::BalMismatch {
            block, address: a, ..
        }) => assert_eq!((block, a), (number, address)),
        other => panic!("unexpected error {other}"),
    }
}

/// Pre-state code revm cannot load (EIP-7702's marker, no designation): an error naming the
/// block and the code, not revm's panic.
fn unloadable_pre_code_is_named(config: &ChainConfig, good: &BlockRecord) {
    let number = good.number();
    let mut bad = good.clone();
    let code = alloy_primitives::Bytes::from_static(&[0xef, 0x01, 0x07]);
    let hash = alloy_primitives::keccak256(&code);
    bad.pre_state
        .codes
        .push(bal_replay_dump::CodePre { hash, code });
    match check_record(config, &bad).unwrap_err() {
        EngineError::Exec(ExecError::MalformedPreCode {
            block,
            hash: h,
            defect,
        }) => assert_eq!(
            (block, h, defect.len, defect.version),
            (number, hash, 3, Some(7))
        ),
        other => panic!("unexpected error {other}"),
    }
}

/// A slot the block reads, without its pre-block value: the dump is incomplete.
fn a_missing_pre_value_is_named(config: &ChainConfig, good: &BlockRecord) {
    let number = good.number();
    let mut bad = good.clone();
    let removed = bad.pre_state.storage.remove(0);
    let err = check_record(config, &bad).unwrap_err().to_string();
    assert!(
        err.contains(&format!("block {number}"))
            && err.contains("the dump is incomplete")
            && err.contains(&format!("{:#x}", removed.slot)),
        "{err}"
    );
}

/// A read the block never makes, listed in the BAL.
fn a_read_not_made_is_named(config: &ChainConfig, good: &BlockRecord) {
    let number = good.number();
    let mut bad = good.clone();
    let first = bad.bal[0].address;
    bad.bal[0]
        .storage_reads
        .insert(0, U256::from(0xdead_beef_u64));
    let err = check_record(config, &bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "block {number}: the BAL lists slot 0xdeadbeef of {first}, which execution does not access"
        )
    );
}

/// A read the block makes, left out of the BAL.
fn a_read_left_out_is_named(config: &ChainConfig, good: &BlockRecord) {
    let number = good.number();
    let mut bad = good.clone();
    let (index, slot) = bad
        .bal
        .iter()
        .enumerate()
        .find_map(|(i, a)| a.storage_reads.first().map(|s| (i, *s)))
        .expect("a block with a read-only slot");
    let reader = bad.bal[index].address;
    bad.bal[index].storage_reads.remove(0);
    let err = check_record(config, &bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "block {number}: execution reads slot {slot:#x} of {reader}, which the BAL does not list"
        )
    );
}

/// One sender short.
fn a_missing_sender_is_named(config: &ChainConfig, good: &BlockRecord) {
    let number = good.number();
    let mut bad = good.clone();
    bad.senders.pop();
    let err = check_record(config, &bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "block {number}: {} senders for {} transactions",
            good.senders.len() - 1,
            good.senders.len()
        )
    );
}

#[test]
fn altered_records_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let records = generated_records(tmp.path());
    let config = ChainConfig::mainnet();
    for record in &records {
        let check = check_record(&config, record).unwrap();
        assert_eq!(check.gas_used, record.block.header.gas_used);
        assert!(check.receipts_root_checked);
    }
    let good = &records[1];
    a_wrong_balance_is_named(&config, good);
    unloadable_pre_code_is_named(&config, good);
    a_missing_pre_value_is_named(&config, good);
    a_read_not_made_is_named(&config, good);
    a_read_left_out_is_named(&config, good);
    a_missing_sender_is_named(&config, good);
}
