//! Migrating from a node that is writing: a writer (a thread of the test, the migration being
//! another process) commits a new height every millisecond or so for the whole run. The migration
//! reads one MDBX snapshot, so the result is exactly the state at one height (rebuilt
//! independently and compared by digest), its `--verify` compares within that snapshot, and what
//! cannot be consistent is refused: a resume over the moved source, and a later `verify` against
//! it.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use bal_replay_migrate::{MigrateError, meta, verify};
use bal_replay_reth_db::{GenerateOptions, Layout, RethDbError, churn_source, generate_source};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;
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

/// A node writing to a generated source, one height per millisecond or so, until stopped; stopped
/// however the test ends. Its progress is counted here rather than read from the source, which
/// this process would otherwise open beside the writer's own environment.
struct Writer {
    stop: Arc<AtomicBool>,
    /// How often the writer asked whether to stop: it asks before each round, so one more than
    /// the rounds committed.
    stop_checks: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<u64, RethDbError>>>,
}

impl Writer {
    fn start(src: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_checks = Arc::new(AtomicU64::new(0));
        let (src, thread_stop, thread_checks) = (
            PathBuf::from(src),
            Arc::clone(&stop),
            Arc::clone(&stop_checks),
        );
        let thread = std::thread::spawn(move || {
            churn_source(&src, None, Duration::from_millis(1), &|| {
                thread_checks.fetch_add(1, Ordering::SeqCst);
                thread_stop.load(Ordering::SeqCst)
            })
        });
        Self {
            stop,
            stop_checks,
            thread: Some(thread),
        }
    }

    /// A height the source has reached (the latest, or one below it while a round commits).
    fn height_reached(&self) -> u64 {
        BASE + self.stop_checks.load(Ordering::SeqCst).saturating_sub(1)
    }

    /// Whether the writer ended by itself (an error; [`Writer::finish`] shows it).
    fn ended(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the writer; the last height it committed.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        let thread = self.thread.take().expect("finished once");
        thread.join().expect("the writer panicked").unwrap()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_migration_during_writes_is_one_snapshot_or_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    generate_source(&src, &options()).unwrap();

    let writer = Writer::start(&src);
    let started = Instant::now();
    while writer.height_reached() < BASE + 3 {
        if writer.ended() {
            panic!("the writer ended at height {}", writer.finish());
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the writer never committed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }

    let dst = tmp.path().join("flat");
    let before = writer.height_reached();
    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .args(["--threads", "4", "--checkpoint-entries", "1000", "--verify"])
        .output()
        .unwrap();
    let after = writer.finish();
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
}
