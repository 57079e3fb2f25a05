//! Counts the command line takes are at least 1: a zero is refused before anything runs, naming
//! the option, instead of running as 1 and being reported as 0.

use std::process::Command;

fn bal_replay(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(args)
        .output()
        .expect("run bal-replay");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn zero_workers_batches_or_readers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let state = dir.path().join("state");
    let (dump, state) = (dump.to_str().unwrap(), state.to_str().unwrap());
    for (args, option) in [
        (vec!["bench", "--threads", "1,0"], "--threads"),
        (vec!["bench", "--batch", "0"], "--batch"),
        (vec!["bench", "--repeat", "0"], "--repeat"),
        (vec!["run", "--threads", "0"], "--threads"),
        (vec!["run", "--batch", "0"], "--batch"),
        (vec!["run", "--io-threads", "0"], "--io-threads"),
    ] {
        let mut full = args.clone();
        full.extend(["--dump", dump, "--state", state]);
        let (ok, stderr) = bal_replay(&full);
        assert!(!ok, "{args:?} ran");
        assert!(
            stderr.contains(&format!("invalid value '0' for '{option}"))
                && stderr.contains("must be at least 1"),
            "{args:?}: {stderr}"
        );
    }
    // Nothing was created: the refusal came before the run.
    assert!(!dir.path().join("state").exists());
    assert!(!dir.path().join("state.bench-run").exists());
}
