//! `run --rewind` and `bench` replay over scratch copies and never touch anything else: the state
//! (however it is named: `.`, `..`, a relative path, `x.rewind`), the user's files inside and
//! beside it, and each other's copies when two run at once. Each runs the real binary.

mod common;

use bal_replay_synth::GeneratorConfig;
use common::{assert_ok, bal_replay, copy_state, digest};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Output,
};

/// A small generated chain: the dump and a pristine state to copy.
fn chain(dir: &Path) -> (PathBuf, PathBuf) {
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 1_000,
        holders_per_token: 100,
        seed: 5,
        gas_per_block: 2_000_000,
        ..GeneratorConfig::default()
    };
    common::chain(dir, &config)
}

/// Every path under `dir` (recursively) with its contents, except inside RocksDB states (whose
/// files RocksDB may rewrite on open; those are compared by digest).
fn tree(dir: &Path, skip: &[&Path]) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if skip.contains(&path.as_path()) {
            out.insert(path, b"<state>".to_vec());
        } else if path.is_dir() {
            out.insert(path.clone(), b"<dir>".to_vec());
            out.extend(tree(&path, skip));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

fn run_rewind(cwd: &Path, dump: &Path, state: &str) -> Output {
    bal_replay()
        .current_dir(cwd)
        .args(["run", "--dump"])
        .arg(dump)
        .args([
            "--state",
            state,
            "--rewind",
            "--batch",
            "2",
            "--threads",
            "1",
        ])
        .output()
        .expect("run bal-replay")
}

/// `--state .`, `..` and a relative path, each from the directory that makes it name the state,
/// a state named `x.rewind`, and a state `x` beside a user's directory `x.rewind`: every run
/// replays the whole dump, and afterwards the state's contents, the user's file inside it, the
/// sibling and everything else in the parent directory are exactly as before, with no scratch
/// directory left.
#[test]
fn rewind_leaves_the_state_its_files_and_its_siblings_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path());
    let dump = dump.canonicalize().unwrap();
    let pristine_digest = digest(&pristine);

    // (state directory name, sub-directory of the parent to run from, --state argument)
    let cases: [(&str, &str, &str); 5] = [
        ("state", "state", "."),
        ("state", "state/sub", ".."),
        ("state", "", "state"),
        ("x.rewind", "", "x.rewind"),
        ("x", "x", "."),
    ];
    for (i, (name, cwd, arg)) in cases.into_iter().enumerate() {
        let parent = tmp.path().join(format!("case-{i}"));
        std::fs::create_dir(&parent).unwrap();
        let state = parent.join(name);
        copy_state(&pristine, &state);
        std::fs::write(state.join("notes.txt"), b"the user's notes").unwrap();
        std::fs::create_dir(state.join("sub")).unwrap();
        // The sibling the old code took for its scratch copy (`with_extension("rewind")`).
        let sibling = parent.join(format!(
            "{}.rewind",
            Path::new(name).file_stem().unwrap().to_string_lossy()
        ));
        if sibling != state {
            std::fs::create_dir(&sibling).unwrap();
            std::fs::write(sibling.join("keep.txt"), b"keep me").unwrap();
        }
        let before = tree(&parent, &[state.as_path()]);

        let out = run_rewind(&parent.join(cwd), &dump, arg);
        let stdout = assert_ok(&out, &format!("case {i}: --state {arg} from {cwd:?}"));
        assert!(stdout.contains("replayed 4 blocks"), "case {i}: {stdout}");

        assert_eq!(digest(&state), pristine_digest, "case {i}: state changed");
        assert_eq!(
            std::fs::read(state.join("notes.txt")).unwrap(),
            b"the user's notes",
            "case {i}"
        );
        assert!(state.join("sub").is_dir(), "case {i}");
        assert_eq!(
            tree(&parent, &[state.as_path()]),
            before,
            "case {i}: parent changed"
        );
        if sibling != state {
            assert_eq!(std::fs::read(sibling.join("keep.txt")).unwrap(), b"keep me");
        }
    }
}

/// Two benches at once over sibling states `state.v1` and `state.v2` (which the old code gave one
/// shared scratch directory, `state.bench-run`): both succeed, both states are unchanged, and the
/// parent directory holds exactly what it held before.
#[test]
fn two_benches_over_sibling_states_run_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path());
    let parent = tmp.path().join("states");
    std::fs::create_dir(&parent).unwrap();
    let states = [parent.join("state.v1"), parent.join("state.v2")];
    for state in &states {
        copy_state(&pristine, state);
    }
    let digests: Vec<_> = states.iter().map(|s| digest(s)).collect();
    let skip: Vec<&Path> = states.iter().map(PathBuf::as_path).collect();
    let before = tree(&parent, &skip);

    let children: Vec<_> = states
        .iter()
        .map(|state| {
            bal_replay()
                .args(["bench", "--dump"])
                .arg(&dump)
                .arg("--state")
                .arg(state)
                .args([
                    "--threads",
                    "1,2",
                    "--batch",
                    "2",
                    "--io",
                    "parallel,batched",
                    "--no-baselines",
                    "--repeat",
                    "2",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (child, state) in children.into_iter().zip(&states) {
        let out = child.wait_with_output().unwrap();
        assert_ok(&out, &format!("bench over {}", state.display()));
    }
    for (state, before) in states.iter().zip(&digests) {
        assert_eq!(&digest(state), before, "{} changed", state.display());
    }
    assert_eq!(tree(&parent, &skip), before);
}

/// Two benches and a `run --rewind` over one state at once (which RocksDB's lock on the state
/// made all but one fail): each takes its scratch copies in turn, all three succeed, the state is
/// unchanged, and the parent directory holds exactly what it held before.
#[test]
fn two_benches_and_a_rewind_over_one_state_run_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path());
    let parent = tmp.path().join("states");
    std::fs::create_dir(&parent).unwrap();
    let state = parent.join("state");
    copy_state(&pristine, &state);
    let before_digest = digest(&state);
    let before = tree(&parent, &[state.as_path()]);

    let bench = || {
        let mut command = bal_replay();
        command
            .args(["bench", "--dump"])
            .arg(&dump)
            .arg("--state")
            .arg(&state)
            .args([
                "--threads",
                "1,2",
                "--batch",
                "1,2",
                "--io",
                "parallel,batched",
            ])
            .args(["--no-baselines", "--repeat", "2"]);
        command
    };
    let mut rewind = bal_replay();
    rewind
        .args([
            "run",
            "--rewind",
            "--batch",
            "1",
            "--threads",
            "1",
            "--dump",
        ])
        .arg(&dump)
        .arg("--state")
        .arg(&state);
    let children: Vec<_> = [bench(), bench(), rewind]
        .into_iter()
        .map(|mut command| {
            command
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stdout = assert_ok(&out, &format!("run {i} beside the others"));
        let done = if i < 2 {
            "### Batch 2, batched I/O"
        } else {
            "replayed 4 blocks"
        };
        assert!(stdout.contains(done), "run {i}: {stdout}");
    }
    assert_eq!(digest(&state), before_digest, "the state changed");
    assert_eq!(tree(&parent, &[state.as_path()]), before);
}
