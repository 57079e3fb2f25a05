//! Generated reth-layout sources (both layouts) round-trip through the migration, whatever the
//! thread count, and a resumed run ends at the same digest.

use alloy_primitives::U256;
use bal_replay_migrate::{
    GenerateOptions, Layout, MigrateError, MigrateOptions, NoProgress, generate_source,
    generated_address, migrate, verify,
};
use bal_replay_state::{RocksStore, StateReader};

fn open(dst: &std::path::Path) -> RocksStore {
    RocksStore::open_read_only(dst).unwrap()
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
                ..MigrateOptions::default()
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
            ..MigrateOptions::default()
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
