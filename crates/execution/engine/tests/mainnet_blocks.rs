//! Real mainnet blocks through the engine: every mode and I/O design must reproduce the header's gas
//! and receipts root, write exactly the BAL, and leave the same state as sequential execution.

use bal_replay_dump::{BlockRecord, DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_engine::{ExecMode, IoDesign, ReplayOptions, replay};
use bal_replay_executor::{BlockOutput, ChainConfig};
use bal_replay_fixtures::{Fixture, default_mainnet_dir, fixture_dirs};
use bal_replay_import::{import_fixture, seed_rocks_state};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::FlatContents;
use std::{num::NonZeroUsize, path::Path};

/// A mode a block is replayed in: how it executes, its I/O design and its worker count.
type Mode = (ExecMode, IoDesign, usize);

/// Every mode each block is replayed in; the first, sequential, is the truth.
fn modes() -> Vec<Mode> {
    vec![
        (ExecMode::Sequential, IoDesign::Parallel, 1),
        (ExecMode::Sequential, IoDesign::Full, 1),
        (ExecMode::Parallel, IoDesign::Full, 2),
        (ExecMode::Parallel, IoDesign::Batched, 2),
        (ExecMode::Parallel, IoDesign::Parallel, 3),
        (ExecMode::Parallel, IoDesign::Hybrid, 2),
    ]
}

/// Whether the block wipes the storage of an account that existed before it (asserting that such
/// a block comes before Cancun).
///
/// Before Cancun (EIP-6780), SELFDESTRUCT wiped the whole storage of an existing contract. A BAL
/// lists only the slots a block touched, so it cannot express such a wipe: a later read of an
/// untouched slot of the re-created account would see the old storage. Such blocks replay
/// only sequentially; EIP-7928 BALs come after Cancun, where this cannot happen.
fn wipes_existing_storage(record: &BlockRecord, output: &BlockOutput) -> bool {
    let wipes_existing = output
        .changes
        .wiped_storage
        .iter()
        .any(|a| record.pre_state.accounts.iter().any(|p| p.address == *a));
    if wipes_existing {
        assert!(
            record.block.header.timestamp < 1_710_338_135,
            "block {}: a wipe after Cancun",
            record.number()
        );
    }
    wipes_existing
}

/// One block is a chain of one: a dump of `record` alone at `dump_dir`.
fn single_block_dump(dump_dir: &Path, record: &BlockRecord) -> DumpReader {
    let mut writer = DumpWriter::create(
        dump_dir,
        DumpMeta {
            chain_id: 1,
            chained: true,
            source: "fixture".into(),
            schedule: None,
        },
        WriterOptions::default(),
    )
    .unwrap();
    writer.append(record).unwrap();
    writer.finish().unwrap();
    DumpReader::open(dump_dir).unwrap()
}

/// Replays the one-block `dump` in each of `modes` (the parallel ones left out where the block
/// wipes existing storage) over a state holding its pre-state, checking the gas and transactions;
/// the state each left, in the order of `modes`.
fn replay_in_each_mode(
    config: &ChainConfig,
    record: &BlockRecord,
    dump: &DumpReader,
    tmp: &Path,
    modes: &[Mode],
    wipes_existing: bool,
) -> Vec<FlatContents> {
    let number = record.number();
    let mut contents = Vec::new();
    for (i, (mode, design, threads)) in modes.iter().enumerate() {
        if wipes_existing && *mode == ExecMode::Parallel {
            continue;
        }
        let state_dir = tmp.join(format!("state-{number}-{i}"));
        let store = seed_rocks_state(&state_dir, record, 1, &RocksOptions::default()).unwrap();
        let options = ReplayOptions {
            mode: *mode,
            threads: NonZeroUsize::new(*threads).unwrap(),
            design: *design,
            batch: NonZeroUsize::new(1).unwrap(),
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let report = replay(config, dump, &store, &options, |_| {})
            .unwrap_or_else(|e| panic!("block {number}, {mode:?}/{design}: {e}"));
        assert_eq!(report.gas, record.gas_used());
        assert_eq!(report.txs as usize, record.tx_count());
        contents.push(RocksStore::dump_all(&store).unwrap());
        drop(store);
        std::fs::remove_dir_all(&state_dir).unwrap();
    }
    contents
}

/// Checks every mode's state against sequential execution's (`contents[0]`), returning how many
/// touched-empty accounts the BAL-derived states kept.
///
/// Sequential execution is the truth. The one thing a BAL cannot carry is EIP-161's deletion
/// of an empty account that a block touches without changing it (0-value calls to empty
/// precompiles around Spurious Dragon); BAL-derived states keep such accounts. Every other
/// difference fails the test, and so does this one where the pre-state had no empty account.
fn check_against_sequential(record: &BlockRecord, contents: &[FlatContents]) -> usize {
    let number = record.number();
    let mut kept_empty = 0;
    let truth = &contents[0];
    let empty_before: Vec<Vec<u8>> = record
        .pre_state
        .accounts
        .iter()
        .filter(|a| {
            a.nonce == 0 && a.balance.is_zero() && a.code_hash == alloy_primitives::KECCAK256_EMPTY
        })
        .map(|a| a.address.to_vec())
        .collect();
    for (i, got) in contents.iter().enumerate() {
        assert_eq!(
            got.storage, truth.storage,
            "block {number}, mode {i}: storage differs"
        );
        assert_eq!(
            got.codes, truth.codes,
            "block {number}, mode {i}: code differs"
        );
        assert_eq!(
            got.block_hashes, truth.block_hashes,
            "block {number}, mode {i}: block hashes differ"
        );
        for entry in &got.accounts {
            if !truth.accounts.contains(entry) {
                assert!(
                    empty_before.contains(&entry.0)
                        && truth.accounts.iter().all(|t| t.0 != entry.0),
                    "block {number}, mode {i}: account {} = {:?} is not what sequential execution left",
                    alloy_primitives::hex::encode(&entry.0),
                    entry.1
                );
                kept_empty += 1;
            }
        }
        for entry in &truth.accounts {
            assert!(
                got.accounts.contains(entry),
                "block {number}, mode {i}: account {} missing or different",
                alloy_primitives::hex::encode(&entry.0)
            );
        }
    }
    kept_empty
}

#[test]
fn every_mode_and_design_reproduces_mainnet_blocks() {
    let root =
        default_mainnet_dir().expect("../shared/fixtures/mainnet must exist next to the workspace");
    let config = ChainConfig::mainnet();
    let modes = modes();
    let dirs = fixture_dirs(&root).expect("listing");
    assert!(dirs.len() >= 50);
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut kept_empty = 0;
    let mut wipe_blocks = 0;
    for dir in &dirs {
        let fixture = Fixture::read(dir).unwrap();
        let (record, output) = import_fixture(&config, &fixture).unwrap();
        let wipes_existing = wipes_existing_storage(&record, &output);
        if wipes_existing {
            wipe_blocks += 1;
        }
        let dump = single_block_dump(
            &tmp.path().join(format!("dump-{}", record.number())),
            &record,
        );
        let contents =
            replay_in_each_mode(&config, &record, &dump, tmp.path(), &modes, wipes_existing);
        kept_empty += check_against_sequential(&record, &contents);
        checked += 1;
    }
    assert_eq!(checked, dirs.len());
    // GasToken-era blocks (2018-2022) self-destruct many pre-existing contracts: 11 of the 50.
    assert!(
        wipe_blocks <= 11,
        "{wipe_blocks} blocks wipe existing storage"
    );
    // Only the Spurious Dragon block's touched empty precompile (in each BAL-parallel mode).
    assert!(
        kept_empty <= 4 * 2,
        "{kept_empty} touched-empty accounts kept"
    );
}
