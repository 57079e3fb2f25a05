//! The two databases reth v2.5.1 wrote (`../shared/fixtures/reth-db`, see its README), migrated and
//! read back through the flat state's own reader, against the values reth's `db get` reports.
//!
//! Both keep their headers in static files (not kept), so `CanonicalHeaders` is empty; their
//! `HeaderNumbers` (hash -> number, kept in MDBX) holds reth v2.5.1's dev genesis at block 0 and
//! the hashes below at the state's height.

use std::path::Path;

use alloy_primitives::{B256, U256, address, b256, keccak256};
use bal_replay_fixtures::{
    copy_reth_db,
    reth_db::{DEV, RethDbFixture, V1_CONTRACT, assert_fixture_values},
};
use bal_replay_migrate::{MigrateError, MigrateOptions, NoProgress, meta, migrate, verify};
use bal_replay_reth_db::{Layout, RethDbError, TableKind};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{KeyScheme, StateReader, cf};

/// reth's `--dev` chain, which both fixtures were written on.
const DEV_CHAIN: u64 = 1337;
/// The hash of block 19, the v1 fixture's height, in its `HeaderNumbers`.
const V1_BLOCK_HASH: B256 =
    b256!("cc872fcb6b746af4dfd80c59fb3547de6d5bda89e8238bb5579d78966df8a626");
/// The hash of block 26, the v2 fixture's height, in its `HeaderNumbers`.
const V2_BLOCK_HASH: B256 =
    b256!("2ba201a8ff41f7d911600efc32baa6bf9944b4182ac0ba8c0b2b6b74c9e46d0a");

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

    // The chain by the genesis hash, the block's hash by HeaderNumbers: what a replay checks.
    assert_eq!(
        (summary.chain_id, summary.block_hash),
        (DEV_CHAIN, V1_BLOCK_HASH)
    );

    let store = open(&dst);
    assert_eq!(store.key_scheme(), KeyScheme::Plain);
    assert_eq!(store.applied_block().unwrap(), Some(19));
    assert_eq!(store.applied_block_hash().unwrap(), Some(V1_BLOCK_HASH));
    assert_eq!(store.chain_id().unwrap(), Some(DEV_CHAIN));
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
    assert_eq!(
        (summary.chain_id, summary.block_hash),
        (DEV_CHAIN, V2_BLOCK_HASH)
    );
    assert!(
        summary
            .describe(&dst)
            .contains(&format!("of chain 1337 at block 26 {V2_BLOCK_HASH}")),
        "{}",
        summary.describe(&dst)
    );

    let store = open(&dst);
    assert_eq!(store.key_scheme(), KeyScheme::Hashed);
    assert_eq!(store.applied_block().unwrap(), Some(26));
    assert_eq!(store.applied_block_hash().unwrap(), Some(V2_BLOCK_HASH));
    assert_eq!(store.chain_id().unwrap(), Some(DEV_CHAIN));
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

/// What the source says of itself cannot be overridden: another chain or another block hash given
/// is refused, naming both, before the destination is created; the same ones given are accepted.
#[test]
fn a_chain_or_block_hash_that_contradicts_the_source_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    let src = fixture("v1");
    let db = src.as_ref().join("db");

    let other_chain = MigrateOptions {
        chain_id: Some(1),
        ..options()
    };
    let err = migrate(&src, &dst, &other_chain, &NoProgress).unwrap_err();
    match &err {
        MigrateError::ChainMismatch {
            path,
            chain,
            given,
            genesis_hash,
            ..
        } => {
            assert_eq!((path, *chain, *given), (&db, DEV_CHAIN, 1));
            assert_eq!(
                *genesis_hash,
                b256!("683713729fcb72be6f3d8b88c8cda3e10569d73b9640d3bf6f5184d94bd97616")
            );
        }
        other => panic!("expected ChainMismatch, got {other}"),
    }
    assert!(err.to_string().contains("but --chain says 1"), "{err}");
    assert!(!dst.exists());

    let other_hash = B256::repeat_byte(0x11);
    let err = migrate(
        &src,
        &dst,
        &MigrateOptions {
            block_hash: Some(other_hash),
            ..options()
        },
        &NoProgress,
    )
    .unwrap_err();
    match &err {
        MigrateError::BlockHashMismatch {
            height,
            found,
            given,
            ..
        } => assert_eq!(
            (*height, found.as_slice(), *given),
            (19, &[V1_BLOCK_HASH][..], other_hash)
        ),
        other => panic!("expected BlockHashMismatch, got {other}"),
    }
    assert!(!dst.exists());

    let agreeing = MigrateOptions {
        chain_id: Some(DEV_CHAIN),
        block_hash: Some(V1_BLOCK_HASH),
        ..options()
    };
    let summary = migrate(&src, &dst, &agreeing, &NoProgress).unwrap();
    assert_eq!(
        (summary.chain_id, summary.block_hash),
        (DEV_CHAIN, V1_BLOCK_HASH)
    );
}

/// A migration finished by an older `bal-migrate` recorded no chain id or hash; resuming it records
/// them, and one that recorded another chain is refused.
#[test]
fn resuming_a_complete_migration_records_its_chain_and_block_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("flat");
    let src = fixture("v2");
    migrate(&src, &dst, &options(), &NoProgress).unwrap();
    let digest = open(&dst).content_digest().unwrap();
    let set_meta = |key: &[u8], value: Option<&[u8]>| {
        let store = RocksStore::open(&dst, &RocksOptions::default()).unwrap();
        let db = store.raw_db();
        let meta = db.cf_handle(cf::META).unwrap();
        match value {
            Some(value) => db.put_cf(meta, key, value).unwrap(),
            None => db.delete_cf(meta, key).unwrap(),
        }
    };
    set_meta(cf::META_CHAIN_ID, None);
    set_meta(cf::META_APPLIED_BLOCK_HASH, None);
    let resume = MigrateOptions {
        resume: true,
        ..options()
    };
    let summary = migrate(&src, &dst, &resume, &NoProgress).unwrap();
    assert!(summary.already_complete);
    let store = open(&dst);
    assert_eq!(store.applied_block().unwrap(), Some(26));
    assert_eq!(store.applied_block_hash().unwrap(), Some(V2_BLOCK_HASH));
    assert_eq!(store.chain_id().unwrap(), Some(DEV_CHAIN));
    assert_eq!(store.content_digest().unwrap(), digest);
    drop(store);

    set_meta(cf::META_CHAIN_ID, Some(&5u64.to_be_bytes()));
    let err = migrate(&src, &dst, &resume, &NoProgress).unwrap_err();
    assert!(matches!(err, MigrateError::ResumeMismatch { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("it records chain 5 for block 26, where this run takes chain 1337"),
        "{err}"
    );
    assert_eq!(open(&dst).chain_id().unwrap(), Some(5));
}
