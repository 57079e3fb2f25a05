//! `write_source_from_store` (`gen-source --from-state`): a flat state streamed into reth's layout
//! is all there at the state's height; a state that fails to read part way leaves no database
//! behind and nothing else in the datadir touched; an existing database is refused as it is.

use alloy_primitives::{Address, KECCAK256_EMPTY, U256};
use bal_replay_reth_db::{RethDb, RethDbError, write_source_from_store};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{FlatAccount, KeyScheme, StateChanges, StateWriter, cf};
use std::path::Path;

/// A plain state at block 7: three accounts, two slots of the first.
fn state(path: &Path) -> RocksStore {
    let store = RocksStore::create(path, KeyScheme::Plain, &RocksOptions::default()).unwrap();
    let account = |n: u64| FlatAccount {
        nonce: n,
        balance: U256::from(1000 + n),
        code_hash: KECCAK256_EMPTY,
    };
    let changes = StateChanges {
        accounts: (1..=3u8)
            .map(|i| (Address::repeat_byte(i), Some(account(i.into()))))
            .collect(),
        storage: vec![
            (Address::repeat_byte(1), U256::from(1), U256::from(11)),
            (Address::repeat_byte(1), U256::from(2), U256::from(22)),
        ],
        ..StateChanges::default()
    };
    store.commit(&changes, 7).unwrap();
    store
}

#[test]
fn a_state_is_streamed_whole_at_its_height() {
    let tmp = tempfile::tempdir().unwrap();
    drop(state(&tmp.path().join("state")));
    let mut reported = Vec::new();
    let written = write_source_from_store(
        &tmp.path().join("reth"),
        &tmp.path().join("state"),
        &mut |n| reported.push(n),
    )
    .unwrap();
    assert_eq!(
        (
            written.accounts,
            written.slots,
            written.codes,
            written.height
        ),
        (3, 2, 0, Some(7))
    );
    assert_eq!(reported.last(), Some(&5));
    assert_eq!(
        RethDb::open(&written.db)
            .unwrap()
            .execution_height()
            .unwrap(),
        7
    );
}

#[test]
fn a_failure_part_way_removes_only_the_database_it_created() {
    let tmp = tempfile::tempdir().unwrap();
    let store = state(&tmp.path().join("state"));
    // A storage key of 10 bytes: the accounts stream into MDBX, then the read fails.
    let mut batch = store.encoded_batch(cf::STORAGE).unwrap();
    batch.put([9u8; 10], [1u8]);
    store.write_encoded(batch).unwrap();
    drop(store);
    let datadir = tmp.path().join("reth");
    std::fs::create_dir(&datadir).unwrap();
    std::fs::write(datadir.join("keep.txt"), b"the user's").unwrap();

    let err =
        write_source_from_store(&datadir, &tmp.path().join("state"), &mut |_| {}).unwrap_err();
    assert!(matches!(err, RethDbError::FlatState { .. }), "{err}");
    assert!(
        !datadir.join("db").exists(),
        "the half-written database is removed"
    );
    assert_eq!(
        std::fs::read(datadir.join("keep.txt")).unwrap(),
        b"the user's"
    );
    assert!(
        tmp.path().join("state").join("CURRENT").exists(),
        "the state is untouched"
    );
}

#[test]
fn an_existing_database_is_refused_and_left_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    drop(state(&tmp.path().join("state")));
    let db = tmp.path().join("reth").join("db");
    std::fs::create_dir_all(&db).unwrap();
    std::fs::write(db.join("mdbx.dat"), b"someone's").unwrap();
    let err = write_source_from_store(
        &tmp.path().join("reth"),
        &tmp.path().join("state"),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, RethDbError::AlreadyExists { .. }), "{err}");
    assert_eq!(std::fs::read(db.join("mdbx.dat")).unwrap(), b"someone's");
}
