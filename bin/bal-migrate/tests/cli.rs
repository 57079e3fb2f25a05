//! Counts on the command line are at least 1: zero workers or zero entries between checkpoints are
//! refused before anything is opened or created.

use std::process::Command;

#[test]
fn zero_threads_or_checkpoint_entries_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("dst");
    for option in ["--threads", "--checkpoint-entries"] {
        let out = Command::new(env!("CARGO_BIN_EXE_bal-migrate"))
            .arg("--src")
            .arg(tmp.path().join("src"))
            .arg("--dst")
            .arg(&dst)
            .args([option, "0"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{option} 0 ran");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("invalid value '0' for '{option}")),
            "{option}: {stderr}"
        );
    }
    assert!(!dst.exists());
}
