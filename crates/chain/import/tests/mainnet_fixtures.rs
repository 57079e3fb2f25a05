//! Every real mainnet block in `../shared/fixtures/mainnet`, executed and checked against its header,
//! over RocksDB and in memory, with its BAL replayed per transaction.

use bal_replay_executor::ChainConfig;
use bal_replay_fixtures::{Fixture, default_mainnet_dir, fixture_dirs};
use bal_replay_import::verify_fixture;

#[test]
fn every_mainnet_fixture_matches_its_header() {
    let root =
        default_mainnet_dir().expect("../shared/fixtures/mainnet must exist next to the workspace");
    let dirs = fixture_dirs(&root).expect("fixture directory listing");
    assert!(
        dirs.len() >= 50,
        "expected the 51 mainnet fixtures, found {}",
        dirs.len()
    );
    let config = ChainConfig::mainnet();
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut receipts_checked = 0;
    for dir in &dirs {
        let fixture = Fixture::read(dir).expect("fixture parses");
        let block_scratch = scratch.path().join(fixture.number().to_string());
        match verify_fixture(&config, &fixture, &block_scratch) {
            Ok((record, report)) => {
                assert_eq!(report.gas_used, fixture.block.header.gas_used);
                assert_eq!(record.senders.len(), record.tx_count());
                // Every non-empty block touches at least the beneficiary.
                if report.txs > 0 {
                    assert!(
                        report.bal_accounts > 0,
                        "block {} has an empty BAL",
                        report.number
                    );
                }
                receipts_checked += report.receipts_root_checked as usize;
                // The one-pass split of a BAL by index equals filtering it index by index.
                let n = record.tx_count() + 2;
                let split = bal_replay_executor::writes_by_index(record.number(), &record.bal, n)
                    .expect("a fixture's BAL indices lie within its block");
                for (i, writes) in split.iter().enumerate() {
                    assert_eq!(
                        writes,
                        &bal_replay_executor::tx_writes_from_bal(&record.bal, i as u64)
                    );
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
    // Byzantium (4,370,000) on: the fixtures from 4,864,590 up.
    assert!(
        receipts_checked >= 30,
        "receipts root checked on only {receipts_checked} blocks"
    );
}

/// The import says which blocks wipe an existing contract's storage (a BAL cannot express it):
/// 11114732 (October 2020) does, 46147 and 19934116 (Cancun, after EIP-6780) do not.
#[test]
fn import_flags_the_blocks_that_wipe_existing_storage() {
    let root =
        default_mainnet_dir().expect("../shared/fixtures/mainnet must exist next to the workspace");
    let dirs: Vec<_> = [46147u64, 11114732, 19934116]
        .iter()
        .map(|b| root.join(b.to_string()))
        .collect();
    let fixtures = bal_replay_import::read_fixtures(&dirs).unwrap();
    let mut flags = Vec::new();
    let records =
        bal_replay_import::import_fixtures(&ChainConfig::mainnet(), &fixtures, |record, wipes| {
            flags.push((record.number(), wipes));
        })
        .unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(
        flags,
        vec![(46147, false), (11114732, true), (19934116, false)]
    );
}
