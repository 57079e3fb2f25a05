//! The two databases reth v2.5.1 wrote (`../shared/fixtures/reth-db`, see its README), migrated and
//! read back through the flat state's own reader, against the values reth's `db get` reports.

use std::path::Path;

use alloy_primitives::{B256, U256, address, b256, keccak256};
use bal_replay_fixtures::{
    copy_reth_db,
    reth_db::{DEV, RethDbFixture, V1_CONTRACT, assert_fixture_values},
};
use bal_replay_migrate::{MigrateError, MigrateOptions, NoProgress, meta, migrate, verify};
use bal_replay_reth_db::{Layout, RethDbError, TableKind};
use bal_replay_state::{KeyScheme, RocksOptions, RocksStore, StateReader, cf};

/// A reth datadir holding a private copy of a fixture's `db/` (see [`copy_reth_db`]).
fn fixture(layout: &str) -> Fixture {
    let datadir = tempfile::Builder::new()
        .prefix("reth-fixture")
        .tempdir()
        .unwrap();
    copy_reth_db(layout, datadir.path()).unwrap_or_else(|e| panic!("{e}"));
    Fixture(datadir)
}

/// A reth datadir in a temporary directory, removed on drop.
struct Fixture(tempfile::TempDir);

impl AsRef<Path> for Fixture {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

fn open(dst: &std::path::Path) -> RocksStore {
    RocksStore::open_read_only(dst).expect("open migrated state")
}

fn options() -> MigrateOptions {
    MigrateOptions {
        threads: 2,
        ..MigrateOptions::default()
    }
}

fn cf_count(store: &RocksStore, name: &'static str) -> usize {
    let mut n = 0;
    store.for_each_key(name, |_| n += 1).unwrap();
    n
}

#[test]
fn v1_fixture_migrates_to_a_plain_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    let summary = migrate(fixture("v1"), &dst, &options(), &NoProgress).unwrap();
    assert_eq!(summary.layout, Layout::V1);
    assert_eq!(summary.height, 19);
    assert_eq!(summary.entries(), 64 + 40 + 1);

    let store = open(&dst);
    assert_eq!(store.key_scheme(), KeyScheme::Plain);
    assert_eq!(store.applied_block().unwrap(), Some(19));
    assert_eq!(
        store.meta(meta::STATUS).unwrap().as_deref(),
        Some(meta::COMPLETE)
    );
    assert_eq!(
        (
            cf_count(&store, cf::ACCOUNTS),
            cf_count(&store, cf::STORAGE),
            cf_count(&store, cf::CODE)
        ),
        (64, 40, 1)
    );

    assert_fixture_values(&store, RethDbFixture::V1);
    drop(store);

    let report = verify(fixture("v1"), &dst, 1.0).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.compared, 105);
    // The streamed digest is the store's own.
    assert_eq!(report.digest, open(&dst).content_digest().unwrap());
}

#[test]
fn v2_fixture_migrates_to_a_hashed_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    // The datadir form of the path (holding db/) is accepted as well as db/ itself.
    let summary = migrate(fixture("v2"), &dst, &options(), &NoProgress).unwrap();
    assert_eq!((summary.layout, summary.height), (Layout::V2, 26));

    let store = open(&dst);
    assert_eq!(store.key_scheme(), KeyScheme::Hashed);
    assert_eq!(store.applied_block().unwrap(), Some(26));
    assert_eq!(
        (
            cf_count(&store, cf::ACCOUNTS),
            cf_count(&store, cf::STORAGE),
            cf_count(&store, cf::CODE)
        ),
        (66, 40, 2)
    );
    // The keys are reth's hashed keys, stored as they are.
    let hashed = b256!("9d2804d0562391d7cfcfaf0013f0352e176a94403a58577ebf82168a21514441");
    assert_eq!(
        keccak256(address!("0000000000000000000000000000000000001005")),
        hashed
    );
    let db = store.raw_db();
    assert!(
        db.get_cf(db.cf_handle(cf::ACCOUNTS).unwrap(), hashed)
            .unwrap()
            .is_some()
    );
    let contract = RethDbFixture::V2.contract();
    let slot_key = [
        keccak256(contract).as_slice(),
        b256!("92906df5aeef42385c0e99fa7f2147946d93b61362307cdc3a6007b8c2a1017d").as_slice(),
    ]
    .concat();
    assert_eq!(
        db.get_cf(db.cf_handle(cf::STORAGE).unwrap(), slot_key)
            .unwrap()
            .as_deref(),
        Some(&[0x0f][..])
    );

    assert_fixture_values(&store, RethDbFixture::V2);
    drop(store);

    let report = verify(fixture("v2").as_ref().join("db"), &dst, 0.5).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert!(
        report.compared > 0 && report.compared < 108,
        "{}",
        report.compared
    );
    assert_eq!(
        report
            .counts
            .iter()
            .map(|c| c.destination)
            .collect::<Vec<_>>(),
        vec![66, 40, 2]
    );
}

#[test]
fn an_interrupted_migration_is_marked_and_resume_finishes_it_identically() {
    for layout in ["v1", "v2"] {
        let tmp = tempfile::tempdir().unwrap();
        let whole = tmp.path().join("whole");
        migrate(fixture(layout), &whole, &options(), &NoProgress).unwrap();
        let digest = open(&whole).content_digest().unwrap();

        let dst = tmp.path().join("resumed");
        // Tiny batches and checkpoints so the interruption falls mid-table, mid-partition.
        let small = MigrateOptions {
            batch_entries: 3,
            checkpoint_entries: 6,
            stop_after: Some(40),
            ..options()
        };
        let err = migrate(fixture(layout), &dst, &small, &NoProgress).unwrap_err();
        assert!(matches!(err, MigrateError::Interrupted), "{err}");
        {
            let store = open(&dst);
            assert_eq!(
                store.meta(meta::STATUS).unwrap().as_deref(),
                Some(meta::INCOMPLETE)
            );
            assert_eq!(
                store.applied_block().unwrap(),
                None,
                "an incomplete state has no height"
            );
        }
        let err = migrate(fixture(layout), &dst, &options(), &NoProgress).unwrap_err();
        assert!(
            matches!(err, MigrateError::DestinationNotEmpty { .. }),
            "{err}"
        );

        // Interrupt once more while resuming, then finish.
        let again = MigrateOptions {
            resume: true,
            stop_after: Some(30),
            ..small.clone()
        };
        assert!(matches!(
            migrate(fixture(layout), &dst, &again, &NoProgress),
            Err(MigrateError::Interrupted)
        ));
        let resumed = migrate(
            fixture(layout),
            &dst,
            &MigrateOptions {
                resume: true,
                stop_after: None,
                ..small
            },
            &NoProgress,
        )
        .unwrap();
        assert!(!resumed.already_complete);
        assert_eq!(open(&dst).content_digest().unwrap(), digest, "{layout}");
        assert!(verify(fixture(layout), &dst, 1.0).unwrap().is_ok());

        // Resuming a finished migration does nothing.
        let done = migrate(
            fixture(layout),
            &dst,
            &MigrateOptions {
                resume: true,
                ..options()
            },
            &NoProgress,
        )
        .unwrap();
        assert!(done.already_complete);
    }
}

#[test]
fn resume_refuses_a_destination_of_another_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    migrate(fixture("v1"), &dst, &options(), &NoProgress).unwrap();
    let err = migrate(
        fixture("v2"),
        &dst,
        &MigrateOptions {
            resume: true,
            ..options()
        },
        &NoProgress,
    )
    .unwrap_err();
    assert!(matches!(err, MigrateError::ResumeMismatch { .. }), "{err}");
}

#[test]
fn verify_reports_mismatches_by_table_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    let src = fixture("v1");
    migrate(&src, &dst, &options(), &NoProgress).unwrap();
    {
        let store = RocksStore::open(&dst, &RocksOptions::default()).unwrap();
        let db = store.raw_db();
        let accounts = db.cf_handle(cf::ACCOUNTS).unwrap();
        db.delete_cf(accounts, DEV).unwrap();
        let storage = db.cf_handle(cf::STORAGE).unwrap();
        let key = [
            V1_CONTRACT.as_slice(),
            B256::from(U256::from(0x3f0)).as_slice(),
        ]
        .concat();
        db.put_cf(storage, key, [0x10]).unwrap();
        let stray = [V1_CONTRACT.as_slice(), B256::from(U256::from(7)).as_slice()].concat();
        db.put_cf(storage, stray, [0x01]).unwrap();
    }
    let report = verify(&src, &dst, 1.0).unwrap();
    assert!(!report.is_ok());
    // The deleted account: missing, and one entry short. The changed slot: a different value. The
    // stray slot: not in the source, and one entry too many.
    assert_eq!(report.mismatch_count, 5, "{:#?}", report.mismatches);
    let text: Vec<String> = report.mismatches.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(|m| m.starts_with(
            "PlainAccountState key 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266: missing"
        )),
        "{text:?}"
    );
    assert!(
        text.iter().any(|m| m
            .starts_with("PlainStorageState key 0x5fbdb2315678afecb367f032d93f642f64180aa3")
            && m.contains("0x10 (expected 0x0f)")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|m| m.contains("(entry count): 63 (expected 64)")),
        "{text:?}"
    );
    assert_eq!(report.counts[0].table, TableKind::Accounts);
}

#[test]
fn bad_sources_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    let missing = tmp.path().join("nope");
    let err = migrate(&missing, &dst, &options(), &NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::Source(RethDbError::SourceMissing { .. })),
        "{err}"
    );

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = migrate(&empty, &dst, &options(), &NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::Source(RethDbError::NotMdbx { .. })),
        "{err}"
    );

    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join("mdbx.dat"), vec![0x42u8; 64 * 1024]).unwrap();
    let err = migrate(&junk, &dst, &options(), &NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::Source(RethDbError::NotMdbx { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains("not a readable MDBX database"),
        "{err}"
    );
    // Nothing was created for a source that could not be read.
    assert!(!dst.exists());

    std::fs::create_dir(&dst).unwrap();
    std::fs::write(dst.join("something"), b"x").unwrap();
    let err = migrate(fixture("v1"), &dst, &options(), &NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::DestinationNotEmpty { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--resume"), "{err}");
}
