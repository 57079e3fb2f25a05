//! `run --pin-workers`: workers pinned to the CPUs listed replay to the same state, and a CPU that
//! cannot be had is a clear error before anything is committed.

mod common;

use common::{assert_ok, chain, copy_state, digest, run_command, small_config};

#[test]
fn pinned_workers_reach_the_same_state_and_an_impossible_cpu_commits_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(6, 5));
    let (free, pinned, refused) = (
        tmp.path().join("free"),
        tmp.path().join("pinned"),
        tmp.path().join("refused"),
    );
    for state in [&free, &pinned, &refused] {
        copy_state(&pristine, state);
    }
    let out = run_command(&dump, &free, 3).output().unwrap();
    assert_ok(&out, "run");
    let out = run_command(&dump, &pinned, 3)
        .args(["--pin-workers", "0"])
        .output()
        .unwrap();
    assert_ok(&out, "run --pin-workers 0");
    assert_eq!(digest(&pinned), digest(&free));

    let before = digest(&refused);
    let out = run_command(&dump, &refused, 3)
        .args(["--pin-workers", "4096"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pinning bal-worker-0 to CPU 4096"),
        "{stderr}"
    );
    assert_eq!(digest(&refused), before, "a failed first batch committed");
}
