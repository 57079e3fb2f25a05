//! The two databases reth v2.5.1 wrote (`../shared/fixtures/reth-db`, see its README), read in place
//! through `MdbxStore`: the values reth's `db get` reports, by stored key, from several threads and
//! under a `MemOverlay`. (That they read as the migrated RocksDB state does, and bench-db's counts
//! over them, are tested in `bal-replay-bench`'s `tests/point_reads_fixtures.rs`.)

use alloy_primitives::{Address, B256, U256, b256, keccak256};
use bal_replay_fixtures::reth_db::{
    DEV, RethDbFixture, V1_CONTRACT, V2_CONTRACT, assert_fixture_values, recipient,
};
use bal_replay_mdbx_state::MdbxStore;
use bal_replay_reth_db::{Layout, RethDb};
use bal_replay_state::{
    FlatAccount, KeyScheme, MemOverlay, StateChanges, StateError, StateReader, StateWriter,
};

/// A reth datadir holding a private copy of a fixture's `db/`.
fn fixture(layout: &str) -> tempfile::TempDir {
    bal_replay_fixtures::reth_db::private_copy(layout)
}

#[test]
fn v1_fixture_reads_in_place_like_reth() {
    let src = fixture("v1");
    let db = RethDb::open(src.path()).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    assert_eq!(store.layout(), Layout::V1);
    assert_eq!(store.key_scheme(), KeyScheme::Plain);
    assert_eq!(store.applied_block().unwrap(), Some(19));
    assert_fixture_values(&store, RethDbFixture::V1);
}

#[test]
fn v2_fixture_reads_in_place_by_hashed_keys() {
    let src = fixture("v2");
    let db = RethDb::open(src.path().join("db")).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    assert_eq!(store.layout(), Layout::V2);
    assert_eq!(store.key_scheme(), KeyScheme::Hashed);
    assert_eq!(store.applied_block().unwrap(), Some(26));
    assert_fixture_values(&store, RethDbFixture::V2);
    // The README's raw keys: keccak(address), keccak(slot).
    let hashed = b256!("9d2804d0562391d7cfcfaf0013f0352e176a94403a58577ebf82168a21514441");
    assert_eq!(
        store
            .account_by_key(hashed.as_slice())
            .unwrap()
            .unwrap()
            .balance,
        U256::from(0x38d7ea4c68005u64)
    );
    let slot = b256!("92906df5aeef42385c0e99fa7f2147946d93b61362307cdc3a6007b8c2a1017d");
    assert_eq!(
        store
            .storage_by_key(keccak256(V2_CONTRACT).as_slice(), slot.as_slice())
            .unwrap(),
        U256::from(0xf)
    );
}

#[test]
fn block_hashes_come_from_canonical_headers_or_say_why_not() {
    for layout in ["v1", "v2"] {
        let src = fixture(layout);
        let db = RethDb::open(src.path()).unwrap();
        let store = MdbxStore::new(&db).unwrap();
        match store.block_hash(1) {
            // reth v2.5.1 keeps headers in static files: the table is there but empty.
            Err(StateError::Unavailable { reason }) => {
                assert!(reason.contains("CanonicalHeaders"), "{reason}");
                assert!(reason.contains("static files"), "{reason}");
            }
            Ok(hash) => {
                eprintln!("{layout}: CanonicalHeaders holds block 1: {hash:?}");
                assert!(hash.is_some(), "{layout}: block 1 has a hash");
            }
            Err(e) => panic!("{layout}: {e}"),
        }
    }
}

#[test]
fn readers_on_many_threads_see_one_snapshot() {
    let src = fixture("v2");
    let db = RethDb::open(src.path()).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let store = &store;
            s.spawn(move || {
                for round in 0..50u64 {
                    let i = (t * 7 + round) % 40;
                    assert_eq!(
                        store.storage(V2_CONTRACT, U256::from(1000 + i)).unwrap(),
                        U256::from(i + 7)
                    );
                    assert!(store.account(recipient(i)).unwrap().is_some());
                }
            });
        }
    });
    // Threads that ended left their transactions for reuse; a new round still reads.
    std::thread::scope(|s| {
        s.spawn(|| assert_fixture_values(&store, RethDbFixture::V2));
    });
}

#[test]
fn an_overlay_makes_the_mdbx_state_committable_without_writing_it() {
    let src = fixture("v1");
    let db = RethDb::open(src.path()).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    let overlay = MemOverlay::new(&store);
    let changes = StateChanges {
        accounts: vec![
            (recipient(0), None),
            (Address::repeat_byte(0xee), Some(FlatAccount::default())),
        ],
        wiped_storage: vec![V1_CONTRACT],
        storage: vec![(V1_CONTRACT, U256::from(1001), U256::from(99))],
        block_hashes: vec![(20, B256::repeat_byte(20))],
        ..StateChanges::default()
    };
    overlay.commit(&changes, 20).unwrap();
    assert_eq!(overlay.applied_block().unwrap(), Some(20));
    assert_eq!(overlay.account(recipient(0)).unwrap(), None);
    assert!(
        overlay
            .account(Address::repeat_byte(0xee))
            .unwrap()
            .is_some()
    );
    assert_eq!(
        overlay.storage(V1_CONTRACT, U256::from(1000)).unwrap(),
        U256::ZERO
    );
    assert_eq!(
        overlay.storage(V1_CONTRACT, U256::from(1001)).unwrap(),
        U256::from(99)
    );
    assert_eq!(overlay.block_hash(20).unwrap(), Some(B256::repeat_byte(20)));
    assert_eq!(overlay.account(DEV).unwrap(), store.account(DEV).unwrap());
    // The database is untouched.
    drop(overlay);
    drop(store);
    drop(db);
    let db = RethDb::open(src.path()).unwrap();
    let store = MdbxStore::new(&db).unwrap();
    assert_eq!(store.applied_block().unwrap(), Some(19));
    assert_fixture_values(&store, RethDbFixture::V1);
}
