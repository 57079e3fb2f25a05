//! Migrating from a node that is writing: a second process commits a new height every
//! millisecond or so for the whole run. The migration reads one MDBX snapshot, so the result is
//! exactly the state at one height (rebuilt independently and compared by digest), its `--verify`
//! compares within that snapshot, and what cannot be consistent is refused: a resume over the
//! moved source, and a later `verify` against it.

use std::{
    path::Path,
    process::{Child, Stdio},
    time::{Duration, Instant},
};

use bal_replay_migrate::{MigrateError, meta, verify};
use bal_replay_reth_db::{GenerateOptions, Layout, RethDb, churn_source, generate_source};
use bal_replay_state::{RocksStore, StateReader};
use common::{bal_migrate, migrate_uninterrupted};

mod common;

const BASE: u64 = 100;

fn options() -> GenerateOptions {
    GenerateOptions {
        layout: Layout::V2,
        entries: 100_000,
        height: BASE,
    }
}

fn height(src: &Path) -> u64 {
    RethDb::open(src).unwrap().execution_height().unwrap()
}

/// Kills the writer however the test ends.
struct Writer(Child);
impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_migration_during_writes_is_one_snapshot_or_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    generate_source(&src, &options()).unwrap();

    let writer = Writer(
        bal_migrate()
            .arg("churn-source")
            .arg("--src")
            .arg(&src)
            .args(["--pause-ms", "1"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while height(&src) < BASE + 3 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the writer never committed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    let dst = tmp.path().join("flat");
    let before = height(&src);
    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .args(["--threads", "4", "--checkpoint-entries", "1000", "--verify"])
        .output()
        .unwrap();
    let after = height(&src);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The writer went on committing while the migration ran: otherwise this tested nothing.
    assert!(
        after >= before + 3,
        "the source only moved from {before} to {after} during the migration"
    );

    let store = RocksStore::open_read_only(&dst).unwrap();
    let migrated = store.applied_block().unwrap().unwrap();
    assert!(
        (before..after).contains(&migrated),
        "migrated height {migrated}, source {before}..{after}"
    );
    assert_eq!(
        store.meta(meta::SOURCE_HEIGHT).unwrap().unwrap(),
        migrated.to_be_bytes()
    );
    assert_eq!(
        store.meta(meta::STATUS).unwrap().as_deref(),
        Some(meta::COMPLETE)
    );
    let digest = store.content_digest().unwrap();
    drop(store);
    assert!(stdout.contains(" 0 mismatches"), "{stdout}");
    assert!(
        stdout.contains(&format!("content digest {digest}")),
        "{stdout}"
    );

    // The state at that height, built without a writer racing: the same content, entry for entry.
    let replica = tmp.path().join("replica");
    generate_source(&replica, &options()).unwrap();
    let reached = churn_source(&replica, Some(migrated - BASE), Duration::ZERO, &|| false).unwrap();
    assert_eq!(reached, migrated);
    let expected = migrate_uninterrupted(&replica, &tmp.path().join("expected"));
    assert_eq!(digest, expected.digest, "the migration mixed heights");

    // Later reads of the moved source cannot be consistent with the destination: refused.
    let err = verify(&src, &dst, 1.0).unwrap_err();
    assert!(
        matches!(err, MigrateError::VerifySourceChanged { recorded_height, .. } if recorded_height == migrated),
        "{err}"
    );
    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .arg("--resume")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("start over into a fresh destination"),
        "{stderr}"
    );
    drop(writer);
}
