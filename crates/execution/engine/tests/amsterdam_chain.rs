//! The Amsterdam dev chain (reth v2.5.1, `../shared/fixtures/amsterdam-dev`): imported from its
//! genesis with every block checked against the network (header, receipts, the BAL byte for byte),
//! then replayed in every mode and I/O design, with the BAL hash checked against every header.
//! All 80 blocks must be exact everywhere, and every replay must leave sequential execution's state.

use bal_replay_dump::DumpReader;
use bal_replay_engine::{ExecMode, IoDesign, ReplayOptions, check_record, replay};
use bal_replay_executor::{ChainConfig, ExecError};
use bal_replay_fixtures::default_amsterdam_dev_dir;
use bal_replay_import::{ChainFixture, import_chain};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::StateReader;
use std::num::NonZeroUsize;

#[test]
fn the_amsterdam_dev_chain_imports_and_replays_exactly_in_every_design() {
    let dir = default_amsterdam_dev_dir()
        .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
    let fixture = ChainFixture::read(&dir).unwrap();
    assert_eq!(fixture.blocks.len(), 80);
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, genesis_dir) = (tmp.path().join("dump"), tmp.path().join("genesis"));
    let imported = import_chain(&fixture, &dump_dir, &genesis_dir, |_, _| {}).unwrap();
    for (number, outcome) in &imported.blocks {
        if let Err(e) = outcome {
            panic!("block {number}: {e}");
        }
    }
    assert_eq!((imported.passed(), imported.failed()), (80, 0));

    let dump = DumpReader::open(&dump_dir).unwrap();
    // The dump carries its schedule: replay does not guess from chain id 1337.
    let config = ChainConfig::for_dump(&dump).unwrap();
    assert!(dump.manifest().schedule.is_some());
    let records: Vec<_> = dump.records().collect::<Result<_, _>>().unwrap();
    assert_eq!(records.len(), 80);
    let txs: usize = records.iter().map(|r| r.tx_count()).sum();
    assert_eq!(txs, 185);
    // Block 60: the gas the Osaka-rules replay got wrong (1,932,108).
    assert_eq!(records[59].gas_used(), 6_849_108);
    for (record, block) in records.iter().zip(&fixture.blocks) {
        // The record's BAL is the network's, byte for byte.
        assert_eq!(alloy_rlp::encode(&record.bal), block.bal_rlp.to_vec());
        check_record(&config, record).unwrap_or_else(|e| panic!("block {}: {e}", record.number()));
    }
    let gas: u64 = records.iter().map(|r| r.gas_used()).sum();

    let genesis = RocksStore::open(&genesis_dir, &RocksOptions::default()).unwrap();
    let mut contents = Vec::new();
    let mut runs = Vec::new();
    for design in IoDesign::ALL {
        runs.push((ExecMode::Sequential, design, 1, 7));
        runs.push((ExecMode::Parallel, design, 3, 80));
        runs.push((ExecMode::Parallel, design, 2, 1));
    }
    for (i, (mode, design, threads, batch)) in runs.iter().enumerate() {
        let state_dir = tmp.path().join(format!("state-{i}"));
        genesis.checkpoint(&state_dir).unwrap();
        let store = RocksStore::open(&state_dir, &RocksOptions::default()).unwrap();
        let options = ReplayOptions {
            mode: *mode,
            threads: NonZeroUsize::new(*threads).unwrap(),
            design: *design,
            batch: NonZeroUsize::new(*batch).unwrap(),
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let report = replay(&config, &dump, &store, &options, |_| {})
            .unwrap_or_else(|e| panic!("{mode:?}/{design}, batch {batch}: {e}"));
        assert_eq!(
            (report.blocks, report.txs, report.gas),
            (80, 185, gas),
            "{mode:?}/{design}"
        );
        assert_eq!(store.applied_block().unwrap(), Some(80));
        contents.push(store.dump_all().unwrap());
    }
    for (got, (mode, design, _, batch)) in contents.iter().zip(&runs) {
        assert!(
            got == &contents[0],
            "{mode:?}/{design}, batch {batch}: the state differs from sequential execution's"
        );
    }
}

#[test]
fn a_record_whose_bal_is_not_the_headers_fails_with_the_block() {
    let dir = default_amsterdam_dev_dir()
        .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
    let fixture = ChainFixture::read(&dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let imported = import_chain(
        &fixture,
        &tmp.path().join("dump"),
        &tmp.path().join("state"),
        |_, _| {},
    )
    .unwrap();
    assert_eq!(imported.failed(), 0);
    let dump = DumpReader::open(tmp.path().join("dump")).unwrap();
    let config = ChainConfig::for_dump(&dump).unwrap();
    let mut record = dump.records().nth(59).unwrap().unwrap();
    // A header that commits to another BAL: the record's BAL (and the one execution builds) is
    // no longer the network's.
    record.block.header.block_access_list_hash = Some(alloy_primitives::B256::repeat_byte(7));
    let e = check_record(&config, &record).unwrap_err();
    match e {
        bal_replay_engine::EngineError::Exec(ExecError::BalHash(m)) => {
            assert_eq!(m.block, 60);
            assert_eq!(m.expected, alloy_primitives::B256::repeat_byte(7));
            assert_eq!(
                m.got,
                alloy_eip7928::compute_block_access_list_hash(&record.bal)
            );
        }
        other => panic!("unexpected error: {other}"),
    }
}
