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
