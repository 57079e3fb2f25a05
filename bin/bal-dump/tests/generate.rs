//! `bal-dump generate` interrupted part-way leaves nothing at `--out` or `--state` that could be
//! read as a whole chain; the next run, to the same paths, makes one.

use bal_replay_dump::DumpReader;
use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

fn generate(dump: &Path, state: &Path, blocks: u64) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bal-dump"));
    command
        .arg("generate")
        .arg("--out")
        .arg(dump)
        .arg("--state")
        .arg(state)
        .args(["--blocks", &blocks.to_string(), "--accounts", "1000"])
        .args(["--holders-per-token", "200", "--gas-per-block", "2000000"]);
    command
}

/// The entries of `dir` whose names start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(prefix)
        })
        .collect()
}

/// Waits until the dump being built in `dir` has begun its first segment: blocks are being written.
fn wait_for_blocks(dir: &Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(partial) = named(dir, "dump.partial-").into_iter().next()
            && partial.join("segment-000000.bin").exists()
        {
            return partial;
        }
        assert!(Instant::now() < deadline, "no block written in 300 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_interrupted_generate_leaves_no_dump_at_out() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state) = (dir.path().join("dump"), dir.path().join("state"));
    let mut child = generate(&dump, &state, 1_000_000)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let partial = wait_for_blocks(dir.path());
    // SIGKILL: no handler can run, so nothing the process does on its way out can help; SIGINT
    // is also ignored by processes a non-interactive shell starts in the background.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "generate finished a million blocks");

    assert!(
        !dump.exists(),
        "an interrupted generate left {}",
        dump.display()
    );
    assert!(
        !state.exists(),
        "an interrupted generate left {}",
        state.display()
    );
    // What it had written is there, under a name that says it is partial.
    assert_eq!(
        named(dir.path(), "dump.partial-"),
        std::slice::from_ref(&partial)
    );
    assert_eq!(named(dir.path(), "state.partial-").len(), 1);
    assert!(DumpReader::open(&partial).unwrap().manifest().record_count < 1_000_000);

    // The next run to the same paths is not in the partial output's way.
    let out = generate(&dump, &state, 2).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(DumpReader::open(&dump).unwrap().manifest().record_count, 2);
    assert!(state.is_dir());
}

/// The entries of `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A dump and a state that would be one directory, or one inside the other, are refused before
/// anything is generated or created: no state left at the shared path, no dump under a partial
/// name, no empty parent.
#[test]
fn overlapping_out_and_state_are_refused_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let (x, s) = (dir.path().join("x"), dir.path().join("s"));
    for (dump, state) in [
        (x.clone(), x.clone()),
        (s.join("dump"), s.clone()),
        (x.clone(), x.join("state")),
        (dir.path().join("a/../x"), x.clone()),
    ] {
        let out = generate(&dump, &state, 2).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{dump:?} {state:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "the dump directory {} and the state directory {} are the same directory or one \
                 is inside the other",
                dump.display(),
                state.display()
            )),
            "{stderr}"
        );
        assert!(
            names_in(dir.path()).is_empty(),
            "{:?}",
            names_in(dir.path())
        );
    }
}

/// Sizes whose hot world cannot be held in memory are refused before anything is created, naming
/// the option, its bound and why, instead of aborting on a failed allocation part-way.
#[test]
fn absurd_sizes_are_refused_naming_the_option_and_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state) = (dir.path().join("dump"), dir.path().join("state"));
    for (option, value, expected) in [
        (
            "--accounts",
            "10000000000000",
            "accounts is 10000000000000, at most 10000000: the hot world's accounts are held in \
             memory",
        ),
        (
            "--tokens",
            "8589934592",
            "tokens is 8589934592, at most 10000: each token's contract and holders are held in \
             memory",
        ),
        (
            "--holders-per-token",
            "9000000",
            "the hot world would hold 1350000000 storage slots",
        ),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bal-dump"));
        command
            .arg("generate")
            .arg("--out")
            .arg(&dump)
            .arg("--state")
            .arg(&state)
            .args([option, value]);
        if option == "--holders-per-token" {
            command.args(["--accounts", "9000000"]);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{option}: {stderr}");
        assert!(stderr.contains(expected), "{option}: {stderr}");
        assert!(
            names_in(dir.path()).is_empty(),
            "{:?}",
            names_in(dir.path())
        );
    }
}
