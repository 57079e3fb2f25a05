//! The two databases reth v2.5.1 wrote (`../shared/fixtures/reth-db`, see its README): read in
//! place through `MdbxStore`, every key bench-db samples reads as in the migrated RocksDB state; and
//! bench-db's counts over both backends.

use std::path::Path;

use alloy_primitives::Address;
use bal_replay_bench::point_reads::{
    BenchDbOptions, PointReads, SampledKey, bench_db, render_bench_db, sample_mdbx,
};
use bal_replay_fixtures::reth_db::{
    DEV, RethDbFixture, V1_CONTRACT, assert_fixture_values, recipient,
};
use bal_replay_mdbx_state::{MdbxStore, StateSpec};
use bal_replay_migrate::{MigrateOptions, NoProgress, migrate};
use bal_replay_reth_db::RethDb;
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;

/// A reth datadir holding a private copy of a fixture's `db/`.
fn fixture(layout: &str) -> tempfile::TempDir {
    bal_replay_fixtures::reth_db::private_copy(layout)
}

fn migrated(src: &Path, dst: &Path) -> RocksStore {
    let opts = MigrateOptions {
        threads: 2,
        ..MigrateOptions::default()
    };
    migrate(src, dst, &opts, &NoProgress).unwrap();
    RocksStore::open_read_only(dst).unwrap()
}

/// Every key of the MDBX state, and a few absent ones, read the same through the MDBX store and the
/// migrated RocksDB state.
fn check_same_reads(mdbx: &MdbxStore<'_>, rocks: &RocksStore) -> usize {
    let sample = sample_mdbx(mdbx, usize::MAX, 1).unwrap();
    let points = rocks;
    for key in &sample.keys {
        match key {
            SampledKey::Account(k) => {
                let value = mdbx.read_account(k).unwrap();
                assert!(value.is_some());
                assert_eq!(value, points.read_account(k).unwrap(), "account {k:02x?}");
            }
            SampledKey::Slot(a, s) => {
                let value = mdbx.read_slot(a, s.as_slice()).unwrap();
                assert!(!value.is_zero());
                assert_eq!(
                    value,
                    points.read_slot(a, s.as_slice()).unwrap(),
                    "slot {s}"
                );
            }
        }
    }
    let len = mdbx.key_scheme().account_key_len();
    assert_eq!(mdbx.read_account(&vec![0xee; len]).unwrap(), None);
    assert_eq!(points.read_account(&vec![0xee; len]).unwrap(), None);
    sample.keys.len()
}

#[test]
fn v1_fixture_reads_like_the_migrated_state() {
    let src = fixture("v1");
    // Migrated first: MDBX lets a process open a database once at a time.
    let tmp = tempfile::tempdir().unwrap();
    let rocks = migrated(src.path(), &tmp.path().join("flat"));
    let db = RethDb::open(src.path()).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    assert_eq!(check_same_reads(&store, &rocks), 64 + 40);
    assert_fixture_values(&rocks, RethDbFixture::V1);
    for address in [DEV, V1_CONTRACT, recipient(3), Address::ZERO] {
        assert_eq!(
            store.account(address).unwrap(),
            rocks.account(address).unwrap()
        );
    }
}

#[test]
fn v2_fixture_reads_like_the_migrated_state() {
    let src = fixture("v2");
    let tmp = tempfile::tempdir().unwrap();
    let rocks = migrated(src.path(), &tmp.path().join("flat"));
    let db = RethDb::open(src.path().join("db")).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    assert_eq!(check_same_reads(&store, &rocks), 66 + 40);
    assert_fixture_values(&rocks, RethDbFixture::V2);
}

#[test]
fn bench_db_smoke_counts_every_read_on_both_backends() {
    for layout in ["v1", "v2"] {
        let src = fixture(layout);
        let tmp = tempfile::tempdir().unwrap();
        let flat = tmp.path().join("flat");
        drop(migrated(src.path(), &flat));
        // Both read engines: point reads, and sorted multi-gets of 16 keys (the last of each
        // thread's calls shorter), which must find every key as well.
        for multiget_keys in [None, Some(16)] {
            let opts = BenchDbOptions {
                threads: vec![1, 2, 3],
                reads: 301,
                sample: 1000,
                seed: 5,
                // Direct reads from a small block cache: the same answers as through the page cache.
                rocks_direct_io: layout == "v2",
                rocks_block_cache_bytes: 1 << 20,
                // Index and filters pinned beside it, as `--disk-resident` opens a state.
                rocks_pin_metadata: layout == "v2",
                multiget_keys,
                ..BenchDbOptions::default()
            };
            let no_drop = || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                panic!("caches are not dropped in this test")
            };
            let accounts = if layout == "v1" { 64 } else { 66 };
            for spec in [
                StateSpec::Mdbx(src.path().to_path_buf()),
                StateSpec::RocksDb(flat.clone()),
            ] {
                let report = bench_db(&spec, &opts, &no_drop).unwrap();
                assert_eq!(report.backend.to_string(), spec.backend());
                assert_eq!(
                    (report.sampled_accounts, report.sampled_slots),
                    (accounts, 40)
                );
                assert_eq!(
                    (report.total_accounts, report.total_slots),
                    (accounts as u64, 40)
                );
                assert_eq!(
                    report.rows.iter().map(|r| r.threads).collect::<Vec<_>>(),
                    vec![1, 2, 3]
                );
                for row in &report.rows {
                    assert_eq!(row.reads, 301, "{spec}");
                    assert_eq!(row.found, 301, "{spec}");
                    assert_eq!(row.account_reads + row.slot_reads, 301);
                    assert!(row.account_reads > 0 && row.slot_reads > 0, "{row:?}");
                    assert!(row.iops > 0.0 && row.avg_latency_us > 0.0, "{row:?}");
                }
                assert!(report.rows.iter().all(|r| r.multiget_keys == multiget_keys));
                let table = render_bench_db(&[report]);
                assert!(table.contains("| 3 |"), "{table}");
                let engine = multiget_keys
                    .map_or("point reads".into(), |n| format!("sorted multi-get of {n}"));
                assert!(table.contains(&engine), "{table}");
            }
        }
    }
}
