//! Test support shared by the workspace's tests, never linked into a binary: a real Prometheus on
//! loopback ([`prometheus`]) and small real filesystems for disk-full tests ([`tmpfs`]).
//!
//! Nothing here is a mock: each helper starts or mounts the real thing and cleans up only what it
//! created itself.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod prometheus;
pub mod tmpfs;

use std::path::PathBuf;

/// The directory of the package whose test is running: cargo's `CARGO_MANIFEST_DIR` at run time
/// (set by `cargo test`), else `built_in`, the caller's `env!("CARGO_MANIFEST_DIR")`. Run time
/// first: a target dir shared by two checkouts (CI's clone and a working tree) may reuse a test
/// built in the other, with the other's path compiled in.
pub fn package_dir(built_in: &str) -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(built_in), PathBuf::from)
}

/// The workspace's root: the closest ancestor of [`package_dir`]`(built_in)` holding `Cargo.lock`
/// (else that directory itself), so a test finds the repository's scripts and docs wherever its
/// crate sits in the tree.
pub fn workspace_root(built_in: &str) -> PathBuf {
    let package = package_dir(built_in);
    package
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map_or(package.clone(), PathBuf::from)
}

/// Property tests' configuration: `PROPTEST_CASES` if set, else `default` cases
/// (`ProptestConfig::with_cases` would ignore the variable, so a long run could not raise it; see
/// fuzz/README.md). No failure files: a failing case is printed, and CI's tree stays clean.
pub fn proptest_config(default: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}
