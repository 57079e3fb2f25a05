//! No space left on the destination's filesystem: `bal-migrate` stops with an error that says so
//! (non-zero exit, no panic), the destination stays marked incomplete, and once space is freed
//! `--resume` finishes it to the same content as an uninterrupted run.
//!
//! The full filesystem is a real one: a tmpfs of a few hundred KiB mounted by the test
//! (`bal_replay_test_utils::tmpfs`). Where mounting is not permitted it skips, saying so, unless `CI`
//! is set: CI runs as root, so there a failure to mount fails the test.

use bal_replay_migrate::{CREATING_MARKER, meta, verify};
use bal_replay_reth_db::{GenerateOptions, Layout, generate_source};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;
use bal_replay_test_utils::tmpfs::mount_tmpfs_or_skip;
use common::{bal_migrate, migrate_uninterrupted};

mod common;

#[test]
fn a_full_destination_fails_clearly_and_resumes_once_space_is_freed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V2,
            entries: 200_000,
            height: 41,
        },
    )
    .unwrap();

    let Some(fs) = mount_tmpfs_or_skip(768 << 10) else {
        return;
    };
    let dst = fs.path().join("flat");

    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .args(["--threads", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a 768 KiB filesystem held the copy");
    assert!(
        stderr.contains("No space left on device"),
        "the error does not say why: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Each cause is printed once: no error's message repeats the one of its source (eyre prints
    // the chain, one line each, up to the blank line before the location or backtrace).
    let causes: Vec<&str> = stderr
        .lines()
        .skip_while(|line| *line != "Caused by:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .map(|line| {
            line.trim()
                .split_once(": ")
                .map_or(line, |(_, message)| message)
        })
        .collect();
    assert!(causes.len() >= 2, "no chain of causes: {stderr}");
    for pair in causes.windows(2) {
        assert!(
            !pair[0].contains(pair[1]),
            "a cause repeats its source's message: {stderr}"
        );
    }

    // Whatever reached the disk is plainly incomplete: either the creation marker is still there
    // (the disk filled before the migration meta was written; no data went in), or the store says
    // incomplete and has no applied block, so the replay refuses it.
    fs.resize(64 << 20).unwrap();
    if !dst.join(CREATING_MARKER).exists() {
        let store = RocksStore::open_read_only(&dst).unwrap();
        assert_eq!(
            store.meta(meta::STATUS).unwrap().as_deref(),
            Some(meta::INCOMPLETE)
        );
        assert_eq!(store.applied_block().unwrap(), None);
        drop(store);
    }

    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .args(["--resume", "--verify"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "resume after freeing space: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let expected = migrate_uninterrupted(&src, &tmp.path().join("whole"));
    let resumed = verify(&src, &dst, 1.0).unwrap();
    assert!(resumed.is_ok(), "{resumed:?}");
    assert_eq!(resumed.digest, expected.digest);
    assert_eq!(resumed.counts, expected.counts);
    assert_eq!(resumed.compared, expected.compared);
    assert!(resumed.compared > 0);
}
