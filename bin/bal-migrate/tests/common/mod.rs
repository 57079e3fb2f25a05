//! What the binary's tests share: the binary itself, and the uninterrupted migration they compare
//! an interrupted one with.

use std::{path::Path, process::Command};

use bal_replay_migrate::{VerifyReport, verify};

/// The hash these tests give a generated source's block.
pub const GENERATED_BLOCK_HASH: &str =
    "0x5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";

/// The `bal-migrate` binary under test, for the generated sources these tests migrate: they hold
/// no headers, so they say neither their chain nor their block's hash, and both are given.
pub fn bal_migrate() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bal-migrate"));
    command.args(["--chain", "1", "--block-hash", GENERATED_BLOCK_HASH]);
    command
}

/// Migrates `src` into the fresh `dst` in one uninterrupted run and verifies it in full: what an
/// interrupted and resumed migration must end equal to.
pub fn migrate_uninterrupted(src: &Path, dst: &Path) -> VerifyReport {
    let status = bal_migrate()
        .arg("--src")
        .arg(src)
        .arg("--dst")
        .arg(dst)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "uninterrupted migration of {}",
        src.display()
    );
    let report = verify(src, dst, 1.0).unwrap();
    assert!(report.is_ok(), "{report:?}");
    report
}
