//! `bal-replay bench-db` refuses read engines it cannot hold in memory, naming the option and its
//! bound, and a run whose reader threads cannot start fails with an error that says so, not a
//! panic.

use common::{chain, small_config};
use std::process::Command;

mod common;

fn bench_db(args: &[&str], env: Option<(&str, &str)>) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bal-replay"));
    command
        .arg("bench-db")
        .args(args)
        .env("RUST_BACKTRACE", "0");
    if let Some((key, value)) = env {
        command.env(key, value);
    }
    let out = command.output().expect("run bal-replay");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn multigets_too_large_to_hold_are_refused_naming_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state = state.to_str().unwrap();
    for keys in ["1000000000000", "18446744073709551615", "1048577"] {
        let (code, stderr) = bench_db(&["--db", state, "--multiget", keys], None);
        // clap's usage error, before the store is opened (it does not exist).
        assert_eq!(code, Some(2), "--multiget {keys}: {stderr}");
        assert!(
            stderr.contains(&format!("invalid value '{keys}' for '--multiget <N>'"))
                && stderr.contains("at most 1048576 keys per call"),
            "--multiget {keys}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Threads that cannot start (here every one asks for a 1 TiB stack, which no system maps) fail
/// the run with an error naming the thread and the count; nothing panics.
#[test]
fn reader_threads_that_cannot_start_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (_dump, state) = chain(tmp.path(), &small_config(1, 5));
    let state = state.to_str().unwrap();
    let (code, stderr) = bench_db(
        &[
            "--db",
            state,
            "--threads",
            "3",
            "--reads",
            "30",
            "--sample",
            "10",
        ],
        Some(("RUST_MIN_STACK", "1099511627776")),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot start reader thread 0 of 3"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
