//! A state is only read where the README says it is never written (`bench`, `bench-db`), file for
//! file: no file of it rewritten, touched or added, not even RocksDB's `LOG`, `LOCK`, manifest or
//! OPTIONS file. And a `--state` that is no state (a user's directory, a file, a missing path) is
//! refused by `run`, `bench` and `bench-db` before RocksDB opens it: nothing is created there.

mod common;

use bal_replay_synth::GeneratorConfig;
use common::{assert_ok, bal_replay, copy_state};
use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Output,
    time::SystemTime,
};

/// A small generated chain: the dump and a pristine state to copy.
fn chain(dir: &Path) -> (PathBuf, PathBuf) {
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 1_000,
        holders_per_token: 100,
        seed: 7,
        gas_per_block: 2_000_000,
        ..GeneratorConfig::default()
    };
    common::chain(dir, &config)
}

/// Every entry of `dir` with its modification time and contents (`None` for a directory).
fn files(dir: &Path) -> BTreeMap<String, (SystemTime, Option<Vec<u8>>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let contents = meta.is_file().then(|| std::fs::read(entry.path()).unwrap());
            (
                entry.file_name().to_string_lossy().into_owned(),
                (meta.modified().unwrap(), contents),
            )
        })
        .collect()
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    files(dir).into_keys().collect()
}

/// Sets every file of `dir` and `dir` itself read-only (`readonly`) or writable again.
fn set_read_only(dir: &Path, readonly: bool) {
    let mode = |path: &Path, file: u32, directory: u32| {
        let m = if path.is_dir() { directory } else { file };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).unwrap();
    };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if readonly {
            mode(&path, 0o444, 0o555);
        } else {
            mode(&path, 0o644, 0o755);
        }
    }
    if readonly {
        mode(dir, 0o444, 0o555);
    } else {
        mode(dir, 0o644, 0o755);
    }
}

fn bench(dump: &Path, state: &Path) -> Output {
    bal_replay()
        .args(["bench", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .args([
            "--threads",
            "1",
            "--batch",
            "2",
            "--io",
            "parallel",
            "--repeat",
            "2",
        ])
        .output()
        .unwrap()
}

fn bench_db(state: &Path) -> Output {
    bal_replay()
        .args(["bench-db", "--db"])
        .arg(state)
        .args(["--threads", "1,2", "--reads", "2000", "--sample", "200"])
        .output()
        .unwrap()
}

fn run(dump: &Path, state: &Path) -> Output {
    bal_replay()
        .args(["run", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .args(["--batch", "2", "--threads", "1"])
        .output()
        .unwrap()
}

/// `bench` (its in-memory baseline, its runs over scratch copies) and `bench-db` over a state:
/// afterwards every file of the state has the contents and the modification time it had, and
/// none is added or gone (RocksDB rewrote the manifest, OPTIONS, WAL and LOG files of the state at
/// every scratch copy, and wrote a LOG at every read-only open). The state is made read-only
/// first, as on a read-only mount; the tests may run as root, whom permissions do not stop, so
/// the files are what is compared. The parent holds no scratch copy afterwards.
#[test]
fn bench_and_bench_db_leave_every_file_of_the_state_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path());
    let parent = tmp.path().join("states");
    std::fs::create_dir(&parent).unwrap();
    let state = parent.join("state");
    copy_state(&pristine, &state);
    set_read_only(&state, true);
    let before = files(&state);
    assert!(before.contains_key("CURRENT"), "{:?}", before.keys());

    let out = bench(&dump, &state);
    let stdout = assert_ok(&out, "bench over a read-only state");
    assert!(stdout.contains("### Batch 2, parallel I/O"), "{stdout}");
    assert_eq!(files(&state), before, "bench changed the state's files");

    let out = bench_db(&state);
    let stdout = assert_ok(&out, "bench-db over a read-only state");
    assert!(stdout.contains("rocksdb"), "{stdout}");
    assert_eq!(files(&state), before, "bench-db changed the state's files");

    set_read_only(&state, false);
    assert_eq!(names(&parent), ["state"]);
}

/// `run`, `bench` and `bench-db` given a user's directory, a file or a missing path as the state:
/// each fails naming the path and what it is, and the directory holds what it held (RocksDB took
/// its `LOCK` and wrote its `LOG` there, or created the missing path, before it failed).
#[test]
fn a_state_that_is_not_one_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, _) = chain(tmp.path());
    let user = tmp.path().join("photos");
    std::fs::create_dir(&user).unwrap();
    std::fs::write(user.join("cat.jpg"), b"not a state").unwrap();
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, b"mine").unwrap();
    let missing = tmp.path().join("no-such-state");
    let user_before = files(&user);
    let around_before = names(tmp.path());

    let cases: [(&Path, &str); 3] = [
        (
            &user,
            "the directory holds no RocksDB database (no CURRENT file)",
        ),
        (&file, "it is a file, not a directory"),
        (&missing, "it does not exist"),
    ];
    for (state, why) in cases {
        for (command, out) in [
            ("run", run(&dump, state)),
            ("bench", bench(&dump, state)),
            ("bench-db", bench_db(state)),
        ] {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{command} over {}", state.display());
            let expected = format!("{} is not a flat state: {why}", state.display());
            assert!(
                stderr.contains(&expected),
                "{command} over {}: {stderr}",
                state.display()
            );
            assert!(!stderr.contains("panicked"), "{command}: {stderr}");
            assert_eq!(
                files(&user),
                user_before,
                "{command} wrote into {}",
                user.display()
            );
            assert_eq!(std::fs::read(&file).unwrap(), b"mine");
            assert!(!missing.exists(), "{command} created {}", missing.display());
            assert_eq!(names(tmp.path()), around_before, "{command}");
        }
    }
}
