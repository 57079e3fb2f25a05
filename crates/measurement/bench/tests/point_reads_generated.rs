//! Generated reth-layout sources (both layouts, `bal-migrate gen-source`): the MDBX store read in
//! place and the RocksDB state migrated from it give identical reads for keys bench-db samples (from
//! either store) and by address; block hashes come from `CanonicalHeaders` when it holds them.

use alloy_primitives::{B256, U256, keccak256};
use bal_replay_bench::point_reads::{PointReads, SampledKey, sample_mdbx, sample_rocks};
use bal_replay_mdbx_state::MdbxStore;
use bal_replay_migrate::{MigrateOptions, NoProgress, migrate};
use bal_replay_reth_db::{
    GenerateOptions, GenerateSummary, Layout, RethDb, generate_source, generated_address,
    table::CANONICAL_HEADERS,
};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;
use libmdbx::{
    Database, DatabaseOptions, Mode, NoWriteMap, ReadWriteOptions, TableFlags, WriteFlags,
};
use std::path::Path;

/// Adds reth's `CanonicalHeaders` (number -> hash) for blocks `0..n` to a generated database.
fn add_canonical_headers(db_dir: &std::path::Path, n: u64) {
    let db = Database::<NoWriteMap>::open_with_options(
        db_dir,
        DatabaseOptions {
            max_tables: Some(64),
            mode: Mode::ReadWrite(ReadWriteOptions::default()),
            ..DatabaseOptions::default()
        },
    )
    .unwrap();
    let txn = db.begin_rw_txn().unwrap();
    let table = txn
        .create_table(Some(CANONICAL_HEADERS), TableFlags::empty())
        .unwrap();
    for number in 0..n {
        txn.put(
            &table,
            number.to_be_bytes(),
            keccak256(number.to_be_bytes()),
            WriteFlags::empty(),
        )
        .unwrap();
    }
    txn.commit().unwrap();
}

/// A generated reth source in `layout` at `src` (with `CanonicalHeaders` in v2) and the RocksDB
/// state migrated from it at `flat`.
fn migrated_source(layout: Layout, src: &Path, flat: &Path) -> GenerateSummary {
    let generated = generate_source(
        src,
        &GenerateOptions {
            layout,
            entries: 20_000,
            height: 777,
        },
    )
    .unwrap();
    if layout == Layout::V2 {
        add_canonical_headers(&generated.db, 300);
    }
    migrate(
        src,
        flat,
        &MigrateOptions {
            threads: 2,
            // A generated source holds no genesis, nor (here) a header of its block.
            chain_id: Some(1),
            block_hash: Some(B256::repeat_byte(0x77)),
            ..MigrateOptions::default()
        },
        &NoProgress,
    )
    .unwrap();
    generated
}

/// Sampled keys, from each store, read through both.
fn assert_sampled_keys_read_the_same(
    mdbx: &MdbxStore<'_>,
    rocks: &RocksStore,
    generated: &GenerateSummary,
) {
    let points = rocks;
    let from_mdbx = sample_mdbx(mdbx, 1000, 3).unwrap();
    let from_rocks = sample_rocks(rocks, 1000, 3).unwrap();
    assert_eq!(from_mdbx.total_accounts, generated.accounts);
    assert_eq!(from_mdbx.total_slots, generated.slots);
    assert_eq!(
        (from_rocks.total_accounts, from_rocks.total_slots),
        (generated.accounts, generated.slots)
    );
    assert_eq!(from_mdbx.keys.len(), 2000);
    for key in from_mdbx.keys.iter().chain(&from_rocks.keys) {
        match key {
            SampledKey::Account(k) => {
                let a = mdbx.read_account(k).unwrap();
                assert!(a.is_some());
                assert_eq!(a, points.read_account(k).unwrap());
            }
            SampledKey::Slot(a, s) => {
                let v = mdbx.read_slot(a, s.as_slice()).unwrap();
                assert!(!v.is_zero());
                assert_eq!(v, points.read_slot(a, s.as_slice()).unwrap());
            }
        }
    }
}

/// By address and slot, through StateReader (hashed for v2, as the RocksDB scheme does).
fn assert_reads_by_address_agree(
    mdbx: &MdbxStore<'_>,
    rocks: &RocksStore,
    generated: &GenerateSummary,
    layout: Layout,
) {
    for i in (0..generated.accounts).step_by(37) {
        let address = generated_address(i);
        let account = mdbx.account(address).unwrap();
        assert!(account.is_some(), "{layout:?} account {i}");
        assert_eq!(account, rocks.account(address).unwrap());
        let code_hash = account.unwrap().code_hash;
        assert_eq!(
            mdbx.code(code_hash).unwrap(),
            rocks.code(code_hash).unwrap()
        );
        for slot in [0u64, 1, 5, 100_000] {
            assert_eq!(
                mdbx.storage(address, U256::from(slot)).unwrap(),
                rocks.storage(address, U256::from(slot)).unwrap(),
                "{layout:?} account {i} slot {slot}"
            );
        }
    }
    // The first contract's slots: value (s + 1) * (c + 1) with c = 0.
    let contract = generated_address(0);
    let slots: Vec<_> = (0..10u64).map(|s| (contract, U256::from(s))).collect();
    assert_eq!(
        mdbx.storage_many(&slots).unwrap(),
        (1..=10u64).map(U256::from).collect::<Vec<_>>()
    );
    assert_eq!(
        mdbx.storage_many(&slots).unwrap(),
        rocks.storage_many(&slots).unwrap()
    );
}

/// Block hashes come from `CanonicalHeaders` when it holds them (v2 here), and v1's empty table
/// is named.
fn assert_block_hashes(mdbx: &MdbxStore<'_>, layout: Layout) {
    match layout {
        Layout::V2 => {
            assert_eq!(
                mdbx.block_hash(255).unwrap(),
                Some(keccak256(255u64.to_be_bytes()))
            );
            assert_eq!(mdbx.block_hash(300).unwrap(), None);
        }
        Layout::V1 => {
            let err = mdbx.block_hash(1).unwrap_err().to_string();
            assert!(err.contains("empty CanonicalHeaders table"), "{err}");
        }
    }
}

#[test]
fn mdbx_in_place_and_migrated_rocksdb_read_the_same() {
    for layout in [Layout::V1, Layout::V2] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("reth");
        let flat = tmp.path().join("flat");
        let generated = migrated_source(layout, &src, &flat);
        let rocks = RocksStore::open_read_only(&flat).unwrap();
        let db = RethDb::open(&src).unwrap();
        let mdbx = MdbxStore::new(&db).unwrap();
        assert_eq!(mdbx.applied_block().unwrap(), Some(777));
        assert_eq!(rocks.applied_block().unwrap(), Some(777));

        assert_sampled_keys_read_the_same(&mdbx, &rocks, &generated);
        assert_reads_by_address_agree(&mdbx, &rocks, &generated, layout);
        assert_block_hashes(&mdbx, layout);
        assert_eq!(mdbx.code(B256::repeat_byte(1)).unwrap(), None);
    }
}
