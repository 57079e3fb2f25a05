//! No space left on the destination's filesystem: `bal-migrate` stops with an error that says so
//! (non-zero exit, no panic), the destination stays marked incomplete, and once space is freed
//! `--resume` finishes it to the same content as an uninterrupted run.
//!
//! The full filesystem is a real one: a tmpfs of a few hundred KiB mounted by the test (root only,
//! as `.ci/run` is). Where mounting is not permitted at all (no root, or a container without the
//! capability), the test says so on stderr and passes; any other failure to mount fails it.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use bal_replay_migrate::{GenerateOptions, Layout, generate_source, meta, verify};
use bal_replay_state::RocksStore;
use common::{bal_migrate, migrate_uninterrupted};

mod common;

/// A tmpfs mounted for the test's lifetime.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(Self(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success(), "remounting {} larger", self.0.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

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

    let fs = match Tmpfs::mount(&tmp.path().join("small"), "768k") {
        Ok(fs) => fs,
        Err(why) if why.contains("permission denied") || why.contains("must be superuser") => {
            eprintln!("SKIPPED: mounting a tmpfs is not permitted here ({why})");
            return;
        }
        Err(why) => panic!("mounting a tmpfs for the no-space test: {why}"),
    };
    let dst = fs.0.join("flat");

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

    // Whatever reached the disk is plainly incomplete: the replay refuses it.
    if dst.join("CURRENT").exists() {
        fs.resize("64m");
        let store = RocksStore::open_read_only(&dst).unwrap();
        assert_eq!(
            store.meta(meta::STATUS).unwrap().as_deref(),
            Some(meta::INCOMPLETE)
        );
        drop(store);
    } else {
        fs.resize("64m");
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
