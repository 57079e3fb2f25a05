//! Generated reth-layout sources (both layouts) round-trip through the migration, whatever the
//! thread count, and a resumed run ends at the same digest; the test writer `churn_source` writes
//! to them and to nothing else.

use std::time::Duration;

use alloy_primitives::{B256, U256};
use bal_replay_migrate::{MigrateError, MigrateOptions, NoProgress, migrate, verify};
use bal_replay_reth_db::{
    GenerateOptions, Layout, RethDbError, churn_source, generate::GENERATED_MARKER,
    generate_source, generated_address,
};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;

fn open(dst: &std::path::Path) -> RocksStore {
    RocksStore::open_read_only(dst).unwrap()
}

/// The hash a migration of a generated source is given for its block.
const GIVEN_HASH: B256 = B256::repeat_byte(0x5e);

/// A generated source holds no headers, so it says neither its chain nor its block's hash: a
/// migration of it is given both.
fn given() -> MigrateOptions {
    MigrateOptions {
        chain_id: Some(1),
        block_hash: Some(GIVEN_HASH),
        ..MigrateOptions::default()
    }
}

#[test]
fn generated_sources_migrate_and_verify() {
    for layout in [Layout::V1, Layout::V2] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("reth");
        let generated = generate_source(
            &src,
            &GenerateOptions {
                layout,
                entries: 20_000,
                height: 1234,
            },
        )
        .unwrap();
        assert_eq!(
            generated.accounts + generated.slots + generated.codes,
            20_000
        );

        let mut digests = Vec::new();
        for threads in [1, 3] {
            let dst = tmp.path().join(format!("flat-{threads}"));
            let opts = MigrateOptions {
                threads,
                batch_entries: 1000,
                checkpoint_entries: 3000,
                ..given()
            };
            let summary = migrate(&src, &dst, &opts, &NoProgress).unwrap();
            assert_eq!(
                (summary.layout, summary.height, summary.entries()),
                (layout, 1234, 20_000)
            );
            let report = verify(&src, &dst, 1.0).unwrap();
            assert!(report.is_ok(), "{report:?}");
            assert_eq!(report.compared, 20_000);
            let store = open(&dst);
            let a = store.account(generated_address(17)).unwrap().unwrap();
            assert_eq!(
                (a.nonce, a.balance),
                (17, U256::from(17u64 * 1_000_000_007))
            );
            // Contract 1 is account 16; its slot 5 holds (5 + 1) * (1 + 1).
            assert_eq!(
                store.storage(generated_address(16), U256::from(5)).unwrap(),
                U256::from(12)
            );
            digests.push(report.digest);
        }

        let dst = tmp.path().join("resumed");
        let small = MigrateOptions {
            threads: 2,
            batch_entries: 500,
            checkpoint_entries: 1500,
            stop_after: Some(9_000),
            ..given()
        };
        assert!(matches!(
            migrate(&src, &dst, &small, &NoProgress),
            Err(MigrateError::Interrupted)
        ));
        migrate(
            &src,
            &dst,
            &MigrateOptions {
                resume: true,
                stop_after: None,
                ..small
            },
            &NoProgress,
        )
        .unwrap();
        digests.push(verify(&src, &dst, 1.0).unwrap().digest);
        assert!(
            digests.windows(2).all(|w| w[0] == w[1]),
            "{layout:?}: {digests:?}"
        );
    }
}

#[test]
fn resume_refuses_a_source_that_moved_since_the_first_run() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V1,
            entries: 20_000,
            height: 50,
        },
    )
    .unwrap();
    let dst = tmp.path().join("flat");
    let small = MigrateOptions {
        threads: 2,
        batch_entries: 500,
        checkpoint_entries: 1500,
        stop_after: Some(6_000),
        ..given()
    };
    assert!(matches!(
        migrate(&src, &dst, &small, &NoProgress),
        Err(MigrateError::Interrupted)
    ));
    let recorded = open(&dst)
        .meta(bal_replay_migrate::meta::SOURCE_TXN_ID)
        .unwrap();

    // The node commits one more block.
    assert_eq!(
        churn_source(&src, Some(1), Duration::ZERO, &|| false).unwrap(),
        51
    );
    let resume = MigrateOptions {
        resume: true,
        stop_after: None,
        ..small
    };
    let err = migrate(&src, &dst, &resume, &NoProgress).unwrap_err();
    match &err {
        MigrateError::SourceChanged {
            recorded_id,
            recorded_height,
            id,
            height,
            ..
        } => {
            assert_eq!(Some(recorded_id.to_be_bytes().to_vec()), recorded);
            assert_eq!((*recorded_height, *height), (50, 51));
            assert!(id > recorded_id, "{id} <= {recorded_id}");
        }
        other => panic!("expected SourceChanged, got {other}"),
    }
    assert!(
        err.to_string()
            .contains("start over into a fresh destination"),
        "{err}"
    );
    // Refused without writing: still the same incomplete migration of snapshot `recorded`.
    let store = open(&dst);
    assert_eq!(
        store.meta(bal_replay_migrate::meta::SOURCE_TXN_ID).unwrap(),
        recorded
    );
    assert_eq!(store.applied_block().unwrap(), None);
}

#[test]
fn an_unchanged_source_keeps_its_snapshot_id_and_the_summary_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V2,
            entries: 5_000,
            height: 3,
        },
    )
    .unwrap();
    let id = bal_replay_reth_db::RethDb::open(&src)
        .unwrap()
        .snapshot()
        .unwrap()
        .id();
    let summary = migrate(
        &src,
        tmp.path().join("flat"),
        &MigrateOptions {
            threads: 3,
            verify: Some(1.0),
            ..given()
        },
        &NoProgress,
    )
    .unwrap();
    assert_eq!(summary.snapshot_id, id);
    assert_eq!(summary.height, 3);
    let report = summary.verify.unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        report.digest,
        verify(&src, tmp.path().join("flat"), 1.0).unwrap().digest
    );
}

/// A source that holds no genesis and no header of its block (a generated one) cannot say which
/// chain or block it is: the migration is refused, naming the source and the option that would
/// tell, before the destination is created; given both, it records them.
#[test]
fn a_source_that_does_not_say_its_chain_or_block_needs_them_given() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    let generated = generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V1,
            entries: 1_000,
            height: 9,
        },
    )
    .unwrap();
    let dst = tmp.path().join("flat");
    let err = migrate(&src, &dst, &MigrateOptions::default(), &NoProgress).unwrap_err();
    match &err {
        MigrateError::ChainUnknown { path, genesis_hash } => {
            assert_eq!((path, *genesis_hash), (&generated.db, None));
        }
        other => panic!("expected ChainUnknown, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&generated.db.display().to_string()),
        "{message}"
    );
    assert!(message.contains("holds no genesis hash"), "{message}");
    assert!(message.contains("pass --chain <id>"), "{message}");
    assert!(!dst.exists());

    let chain_only = MigrateOptions {
        chain_id: Some(1),
        ..MigrateOptions::default()
    };
    let err = migrate(&src, &dst, &chain_only, &NoProgress).unwrap_err();
    match &err {
        MigrateError::BlockHashUnknown {
            path,
            height,
            found,
        } => assert_eq!((path, *height, found.len()), (&generated.db, 9, 0)),
        other => panic!("expected BlockHashUnknown, got {other}"),
    }
    assert!(err.to_string().contains("--block-hash"), "{err}");
    assert!(!dst.exists());

    let summary = migrate(&src, &dst, &given(), &NoProgress).unwrap();
    assert_eq!((summary.chain_id, summary.block_hash), (1, GIVEN_HASH));
    let store = open(&dst);
    assert_eq!(store.applied_block().unwrap(), Some(9));
    assert_eq!(store.applied_block_hash().unwrap(), Some(GIVEN_HASH));
    assert_eq!(store.chain_id().unwrap(), Some(1));
}

/// The applied block's hash comes from the source's `CanonicalHeaders` where it has it, and a
/// different one given is refused; without the entry (reth v2 keeps headers in static files) and
/// without `HeaderNumbers`, the hash must be given. A genesis of no known chain names no chain.
#[test]
fn the_applied_blocks_hash_comes_from_canonical_headers() {
    use alloy_primitives::{Bytes, KECCAK256_EMPTY};
    use bal_replay_state::{FlatAccount, FlatContents, KeyScheme};

    let (genesis, hash) = (B256::repeat_byte(0x60), B256::repeat_byte(0x7a));
    for (name, block_hashes, expected) in [
        (
            "with-hash",
            vec![(0, genesis), (6, B256::repeat_byte(6)), (7, hash)],
            Some(hash),
        ),
        (
            "without-hash",
            vec![(0, genesis), (6, B256::repeat_byte(6))],
            None,
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let contents = FlatContents {
            key_scheme: KeyScheme::Plain,
            accounts: vec![(
                generated_address(1).to_vec(),
                FlatAccount {
                    nonce: 1,
                    balance: U256::from(5),
                    code_hash: KECCAK256_EMPTY,
                },
            )],
            storage: vec![],
            codes: Vec::<(B256, Bytes)>::new(),
            block_hashes,
            applied_block: Some(7),
        };
        let src = tmp.path().join("reth");
        bal_replay_reth_db::write_source_from_flat(&src, &contents).unwrap();
        let dst = tmp.path().join("flat");
        let err = migrate(&src, &dst, &MigrateOptions::default(), &NoProgress).unwrap_err();
        match &err {
            MigrateError::ChainUnknown { genesis_hash, .. } => {
                assert_eq!(*genesis_hash, Some(genesis), "{name}");
            }
            other => panic!("{name}: expected ChainUnknown, got {other}"),
        }
        assert!(
            err.to_string().contains(&format!(
                "its genesis hash {genesis} is not one of a chain this tool knows"
            )),
            "{err}"
        );
        let chain = MigrateOptions {
            chain_id: Some(5),
            ..MigrateOptions::default()
        };
        let other = B256::repeat_byte(0x99);
        let other_hash = MigrateOptions {
            block_hash: Some(other),
            ..chain.clone()
        };
        let result = migrate(&src, &dst, &other_hash, &NoProgress);
        if let Some(hash) = expected {
            match result {
                Err(MigrateError::BlockHashMismatch {
                    height,
                    found,
                    given,
                    ..
                }) => assert_eq!((height, found, given), (7, vec![hash], other), "{name}"),
                other => panic!("{name}: expected BlockHashMismatch, got {other:?}"),
            }
            assert!(!dst.exists(), "{name}");
            migrate(&src, &dst, &chain, &NoProgress).unwrap();
        } else {
            // Nothing to disagree with: the hash given is the one recorded.
            result.unwrap();
        }
        let store = open(&dst);
        assert_eq!(store.applied_block().unwrap(), Some(7), "{name}");
        assert_eq!(
            store.applied_block_hash().unwrap(),
            Some(expected.unwrap_or(other)),
            "{name}"
        );
        assert_eq!(store.chain_id().unwrap(), Some(5), "{name}");
    }
}

/// Every file of `dir` and its bytes.
fn files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// `churn_source` is a test writer with no durability: it writes only to a database
/// `generate_source` wrote. One reth wrote (a node's) is refused before it is opened and left
/// byte for byte as it was, and so is a generated one whose marker is gone.
#[test]
fn churn_source_refuses_a_database_generate_source_did_not_write() {
    let tmp = tempfile::tempdir().unwrap();
    let reth = tmp.path().join("reth");
    let db = bal_replay_fixtures::copy_reth_db("v1", &reth).unwrap_or_else(|e| panic!("{e}"));
    let copied = files(&db);
    let expected_marker = db.join(GENERATED_MARKER);
    // The datadir or its db directory: either way the marker is looked for beside mdbx.dat.
    for given in [&reth, &db] {
        let err = churn_source(given, Some(1), Duration::ZERO, &|| false).unwrap_err();
        match &err {
            RethDbError::NotGenerated { marker } => assert_eq!(marker, &expected_marker),
            other => panic!("expected NotGenerated, got {other}"),
        }
        assert!(
            err.to_string()
                .contains(&expected_marker.display().to_string()),
            "{err}"
        );
    }
    assert_eq!(files(&db), copied, "a refused database was changed");

    let generated = tmp.path().join("generated");
    let summary = generate_source(
        &generated,
        &GenerateOptions {
            layout: Layout::V2,
            entries: 1_000,
            height: 7,
        },
    )
    .unwrap();
    let marker = summary.db.join(GENERATED_MARKER);
    assert!(marker.is_file(), "generate_source wrote no marker");
    std::fs::remove_file(&marker).unwrap();
    let unmarked = files(&summary.db);
    assert!(matches!(
        churn_source(&generated, Some(1), Duration::ZERO, &|| false),
        Err(RethDbError::NotGenerated { .. })
    ));
    assert_eq!(
        files(&summary.db),
        unmarked,
        "a refused database was changed"
    );
    // The marker alone decided: put back, the same database is written to.
    std::fs::write(&marker, b"").unwrap();
    assert_eq!(
        churn_source(&generated, Some(2), Duration::ZERO, &|| false).unwrap(),
        9
    );
}
