//! The start of a migration has no gap: killed at any step of creating its destination, the next
//! run (plain or `--resume`) takes the destination over and finishes it to the uninterrupted
//! result. And a destination that is not a migration of ours is refused, never written into or
//! wiped.

use std::path::Path;

use bal_replay_migrate::{CREATING_MARKER, TEST_ABORT_ENV, meta, verify};
use bal_replay_reth_db::{GenerateOptions, Layout, generate_source};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;
use common::{bal_migrate, migrate_uninterrupted};

mod common;

fn source(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("reth");
    generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V2,
            entries: 4_000,
            height: 9,
        },
    )
    .unwrap();
    src
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_kill_at_any_step_of_creation_leaves_a_destination_the_next_run_takes_over() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path());
    let expected = migrate_uninterrupted(&src, &tmp.path().join("whole"));
    assert!(
        !tmp.path().join("whole").join(CREATING_MARKER).exists(),
        "a finished migration kept its creation marker"
    );

    for point in ["after-create", "after-open", "after-meta"] {
        for resume in [false, true] {
            let dst = tmp.path().join(format!("{point}-{resume}"));
            let out = bal_migrate()
                .arg("--src")
                .arg(&src)
                .arg("--dst")
                .arg(&dst)
                .env(TEST_ABORT_ENV, point)
                .output()
                .unwrap();
            // Aborted (a signal, no exit code): nothing ran after that point.
            assert_eq!(out.status.code(), None, "{point}: {out:?}");
            assert!(
                dst.join(CREATING_MARKER).is_file(),
                "{point}: no marker left behind"
            );
            if point != "after-create" {
                assert!(dst.join("CURRENT").is_file(), "{point}: no store created");
            }

            let mut next = bal_migrate();
            next.arg("--src").arg(&src).arg("--dst").arg(&dst);
            next.arg("--verify");
            if resume {
                next.arg("--resume");
            }
            let out = next.output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{point}, resume {resume}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(stdout.contains(" 0 mismatches"), "{stdout}");
            assert!(
                stdout.contains(&format!("content digest {}", expected.digest)),
                "{point}, resume {resume}: {stdout}"
            );
            assert!(!dst.join(CREATING_MARKER).exists(), "{point}: marker kept");
            let report = verify(&src, &dst, 1.0).unwrap();
            assert!(report.is_ok(), "{report:?}");
            assert_eq!(report.digest, expected.digest, "{point}, resume {resume}");
            let store = RocksStore::open_read_only(&dst).unwrap();
            assert_eq!(
                store.meta(meta::STATUS).unwrap().as_deref(),
                Some(meta::COMPLETE)
            );
            assert_eq!(store.applied_block().unwrap(), Some(9));
        }
    }
}

#[test]
fn a_destination_that_is_not_ours_is_refused_and_left_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path());
    let dst = tmp.path().join("mine");
    std::fs::create_dir(&dst).unwrap();
    std::fs::write(dst.join("notes.txt"), b"my notes").unwrap();

    for resume in [false, true] {
        let mut cmd = bal_migrate();
        cmd.arg("--src").arg(&src).arg("--dst").arg(&dst);
        if resume {
            cmd.arg("--resume");
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "resume {resume}: it migrated into it"
        );
        let why = if resume {
            "not a flat state"
        } else {
            "is not empty"
        };
        assert!(stderr.contains(why), "resume {resume}: {stderr}");
        assert_eq!(listing(&dst), ["notes.txt"], "resume {resume}");
        assert_eq!(std::fs::read(dst.join("notes.txt")).unwrap(), b"my notes");
    }

    // A file by the marker's name that bal-migrate did not write does not make the directory ours.
    let fake = tmp.path().join("fake");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join(CREATING_MARKER), b"not from bal-migrate").unwrap();
    let out = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&fake)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(listing(&fake), [CREATING_MARKER]);
    assert_eq!(
        std::fs::read(fake.join(CREATING_MARKER)).unwrap(),
        b"not from bal-migrate"
    );
}

#[test]
fn an_existing_empty_destination_is_used_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path());
    let dst = tmp.path().join("empty");
    std::fs::create_dir(&dst).unwrap();
    let status = bal_migrate()
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(verify(&src, &dst, 1.0).unwrap().is_ok());
    assert!(!dst.join(CREATING_MARKER).exists());
}
