//! The state's filesystem fills up during a replay: `bal-replay run` stops with an error naming the
//! state and "No space left" (non-zero exit, no panic), the state is left exactly at a batch
//! boundary, and once the filesystem has room the same command resumes to the state an
//! uninterrupted run leaves. A result file's filesystem fills up: the run fails naming it, and the
//! result an earlier run wrote there is left byte for byte, with no temporary file beside it.
//!
//! The full filesystem is a real one: a tmpfs mounted by the test (`bal_replay_test_utils::tmpfs`;
//! root only, as CI runs). Where mounting is not permitted the test says so and passes, except
//! under CI, where it fails: there a skipped test would hide a regression.

mod common;

use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_test_utils::tmpfs::mount_tmpfs_or_skip;
use common::{assert_ok, boundary_digests, chain, digest, run_command, small_config};
use std::path::Path;

const BATCH: usize = 2;

fn run(dump: &Path, state: &Path) -> std::process::Output {
    run_command(dump, state, BATCH)
        .output()
        .expect("run bal-replay")
}

#[test]
fn a_full_disk_stops_the_replay_at_a_batch_boundary_and_it_resumes_once_there_is_room() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(12, 9));
    // The uninterrupted run: the state's digest at every batch boundary.
    let boundaries = boundary_digests(&dump, &pristine, &tmp.path().join("reference"), BATCH);
    let last = boundaries.last().unwrap().clone();

    let Some(fs) = mount_tmpfs_or_skip(256 << 20) else {
        return;
    };
    // A copy (across filesystems, so RocksDB copies instead of linking), opened and closed once
    // so the files an open creates exist before the space is cut.
    let state = fs.path().join("state");
    RocksStore::open(&pristine, &RocksOptions::default())
        .unwrap()
        .checkpoint(&state)
        .unwrap();
    drop(RocksStore::open(&state, &RocksOptions::default()).unwrap());
    // Room to open the store and commit a batch or so, not the whole replay's write-ahead log.
    let used = fs.used_bytes().unwrap();
    let room = 192 << 10;
    fs.resize(used + room).unwrap();

    let out = run(&dump, &state);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the replay had room after all: {stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "a full disk must be an error, not a panic: {stderr}"
    );
    assert!(stderr.contains("No space left"), "{stderr}");
    assert!(
        stderr.contains(&state.display().to_string()),
        "the error must name the state: {stderr}"
    );

    fs.resize(256 << 20).unwrap();
    let after = digest(&state);
    let at = boundaries.iter().position(|b| *b == after);
    assert!(
        at.is_some(),
        "the full disk left the state at {after:?}, not at a batch boundary"
    );
    let at = at.unwrap();
    assert!(
        at < boundaries.len() - 1,
        "the replay failed yet the state is at its end"
    );
    eprintln!("the full disk stopped the replay at boundary {at}: {stderr}");

    let out = run(&dump, &state);
    assert!(
        out.status.success(),
        "resuming: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(digest(&state), last);
}

#[test]
fn a_full_disk_leaves_the_result_file_an_earlier_run_wrote_and_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(4, 9));
    let Some(fs) = mount_tmpfs_or_skip(1 << 20) else {
        return;
    };
    let json = fs.path().join("run.json");
    // Both runs replay over a checkpoint beside the state (on the disk with room), from the start.
    let run_to_json = |extra: &[&str]| {
        run_command(&dump, &state, BATCH)
            .arg("--rewind")
            .args(extra)
            .arg("--json")
            .arg(&json)
            .output()
            .expect("run bal-replay")
    };
    assert_ok(&run_to_json(&[]), "the first run");
    let good = std::fs::read(&json).unwrap();

    // No room left. The second result is larger (it holds every task's profile), so even the
    // pages of the first one, were they freed, would not hold it.
    fs.resize(fs.used_bytes().unwrap()).unwrap();
    let out = run_to_json(&["--task-profile"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the result was written after all: {stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "a full disk must be an error, not a panic: {stderr}"
    );
    assert!(stderr.contains("No space left"), "{stderr}");
    assert!(
        stderr.contains(&format!("writing {}", json.display())),
        "the error must name the result file: {stderr}"
    );
    let after = std::fs::read(&json).unwrap();
    assert!(
        after == good,
        "the earlier result ({} bytes) was replaced by {} bytes: {}",
        good.len(),
        after.len(),
        String::from_utf8_lossy(&after[..after.len().min(200)])
    );
    let left: Vec<_> = std::fs::read_dir(fs.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["run.json"]);
}
