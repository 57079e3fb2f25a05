//! A state that already holds blocks of the dump (a `run` in place before, the README's own
//! order) is refused by `bench` and `study`, which replay the whole dump from its first block's
//! parent, saying where the state stands and what to do: its runs would skip the blocks it holds
//! and measure the rest, or nothing, as the dump. `run` alone resumes.

mod common;

use bal_replay_dump::{DumpReader, DumpWriter};
use common::{assert_ok, bal_replay, chain, copy_state, digest, run_command, small_config};
use std::path::Path;

/// A copy of the dump at `dump` in `dst`, cut after its first `keep` blocks.
fn dump_prefix(dump: &Path, dst: &Path, keep: u64) -> u64 {
    std::fs::create_dir(dst).unwrap();
    for entry in std::fs::read_dir(dump).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
    }
    let first = DumpReader::open(dst)
        .unwrap()
        .manifest()
        .first_block
        .unwrap();
    let last_kept = first + keep - 1;
    DumpWriter::resume(dst)
        .unwrap()
        .truncate_after(Some(last_kept))
        .unwrap();
    last_kept
}

/// `bench` and `study` over `state`, each refused with `expected` in its error, writing nothing.
fn assert_bench_and_study_refused(dump: &Path, state: &Path, out: &Path, expected: &str) {
    let before = digest(state);
    let json = out.with_extension("json");
    let bench = bal_replay()
        .args(["bench", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .args(["--threads", "2", "--batch", "2", "--io", "parallel"])
        .args(["--no-baselines", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let study = bal_replay()
        .args(["study", "--quick", "--no-fio", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    for (what, output) in [("bench", bench), ("study", study)] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what} ran: {stderr}");
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
    assert!(!json.exists(), "bench wrote {}", json.display());
    assert!(!out.exists(), "study wrote {}", out.display());
    assert_eq!(digest(state), before);
}

#[test]
fn bench_and_study_refuse_a_state_that_already_holds_blocks_of_the_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(4, 21));
    let manifest = DumpReader::open(&dump).unwrap().manifest().clone();
    let (first, last) = (manifest.first_block.unwrap(), manifest.last_block.unwrap());
    let state = tmp.path().join("state");
    copy_state(&pristine, &state);

    // A state that holds part of the dump: its first two blocks, replayed in place.
    let prefix = tmp.path().join("prefix");
    let held = dump_prefix(&dump, &prefix, 2);
    assert_ok(&run_command(&prefix, &state, 2).output().unwrap(), "run");
    assert_eq!(digest(&state).1, Some(held));
    let expected = |held: u64| {
        format!(
            "state {} already holds blocks up to {held}, and the dump starts at block {first}: a \
             bench replays the whole dump, from a state at block {} (its first block's parent); \
             bench a fresh copy of the state at that block (`bal-replay run` moves the state it \
             replays over on, unless --rewind)",
            state.display(),
            first - 1
        )
    };
    assert_bench_and_study_refused(&dump, &state, &tmp.path().join("partial"), &expected(held));

    // `run` resumes where the state stands; then the state holds the whole dump.
    let stdout = assert_ok(&run_command(&dump, &state, 2).output().unwrap(), "resume");
    assert!(
        stdout.contains(&format!(
            "skipped {} blocks the state already held",
            held - first + 1
        )),
        "{stdout}"
    );
    assert_eq!(digest(&state).1, Some(last));
    assert_bench_and_study_refused(&dump, &state, &tmp.path().join("whole"), &expected(last));

    // The pristine state benches as before.
    let out = bal_replay()
        .args(["bench", "--dump"])
        .arg(&dump)
        .arg("--state")
        .arg(&pristine)
        .args(["--threads", "2", "--batch", "2", "--io", "parallel"])
        .arg("--no-baselines")
        .output()
        .unwrap();
    let stdout = assert_ok(&out, "bench over the pristine state");
    assert!(
        stdout.contains(&format!("{} blocks", last - first + 1)),
        "{stdout}"
    );
}
