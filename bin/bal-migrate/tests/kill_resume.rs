//! `kill -9` at arbitrary moments, then `--resume`: the result is the same state as an
//! uninterrupted run (same content digest), and verification finds nothing.

use std::time::{Duration, Instant};

use bal_replay_migrate::{meta, verify};
use bal_replay_reth_db::{GenerateOptions, Layout, generate_source};
use common::{bal_migrate, migrate_uninterrupted};

mod common;

#[test]
fn killed_runs_resume_to_the_uninterrupted_result() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V1,
            entries: 600_000,
            height: 77,
        },
    )
    .unwrap();

    let expected = migrate_uninterrupted(&src, &tmp.path().join("whole"));

    let dst = tmp.path().join("killed");
    let mut killed = 0;
    for (round, delay_ms) in [80u64, 200, 120, 350].into_iter().enumerate() {
        let mut cmd = bal_migrate();
        cmd.arg("--src").arg(&src).arg("--dst").arg(&dst).args([
            "--threads",
            "2",
            "--checkpoint-entries",
            "20000",
        ]);
        if round > 0 {
            cmd.arg("--resume");
        }
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(delay_ms) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            // SIGKILL: no destructor, no flush.
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
    }
    assert!(
        killed > 0,
        "the migration always finished before the kill; nothing was tested"
    );

    let status = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .args(["--resume", "--verify"])
        .status()
        .unwrap();
    assert!(status.success());
    let report = verify(&src, &dst, 1.0).unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.digest, expected.digest);
    let store = bal_replay_rocks::RocksStore::open_read_only(&dst).unwrap();
    assert_eq!(
        store.meta(meta::STATUS).unwrap().as_deref(),
        Some(meta::COMPLETE)
    );
}

#[test]
fn bad_input_exits_non_zero_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let out = bal_migrate()
        .arg("--src")
        .arg(tmp.path().join("missing"))
        .arg("--dst")
        .arg(tmp.path().join("d"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not exist"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A source beside the destination (one inside the source is refused for that alone).
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("mdbx.dat"), b"not a database").unwrap();
    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(tmp.path().join("d"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a readable MDBX database"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
