//! What the binary's tests share: a small generated chain, copies and digests of states, the
//! uninterrupted replay's digest at every batch boundary, and the binary itself.

#![allow(dead_code)] // each test binary uses its own part

use bal_replay_dump::DumpReader;
use bal_replay_engine::{ExecMode, IoDesign, ReplayOptions, replay};
use bal_replay_executor::ChainConfig;
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::StateReader;
use bal_replay_synth::{GeneratorConfig, generate};
use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
    process::{Command, Output},
};

/// A state's content digest and applied height: what two states must share to be the same.
pub type Digest = (String, Option<u64>);

/// The chain most of these tests replay: `blocks` blocks of 6 Mgas over 2,000 accounts.
pub fn small_config(blocks: u64, seed: u64) -> GeneratorConfig {
    GeneratorConfig {
        blocks,
        accounts: 2_000,
        holders_per_token: 200,
        seed,
        gas_per_block: 6_000_000,
        ..GeneratorConfig::default()
    }
}

/// A generated chain in `dir`: its dump and its pre-chain ("pristine") state.
pub fn chain(dir: &Path, config: &GeneratorConfig) -> (PathBuf, PathBuf) {
    let (dump, state) = (dir.join("dump"), dir.join("pristine"));
    generate(config, &dump, &state, None).expect("generate");
    (dump, state)
}

/// A copy of the state at `dst` (a RocksDB checkpoint; `dst` must not exist).
pub fn copy_state(src: &Path, dst: &Path) {
    RocksStore::open(src, &RocksOptions::default())
        .unwrap()
        .checkpoint(dst)
        .unwrap();
}

/// The state's digest, opened read-only.
pub fn digest(state: &Path) -> Digest {
    let store = RocksStore::open_read_only(state).unwrap();
    (
        store.content_digest().unwrap().to_string(),
        store.applied_block().unwrap(),
    )
}

/// The digests an uninterrupted replay (in process, parallel I/O, 2 workers) passes through: the
/// pristine state's, then one after each batch of `batch` blocks. It replays over a copy in
/// `scratch`, which must not exist.
pub fn boundary_digests(dump: &Path, pristine: &Path, scratch: &Path, batch: usize) -> Vec<Digest> {
    copy_state(pristine, scratch);
    let mut boundaries = vec![digest(pristine)];
    let store = RocksStore::open(scratch, &RocksOptions::default()).unwrap();
    let reader = DumpReader::open(dump).unwrap();
    let options = ReplayOptions {
        mode: ExecMode::Parallel,
        threads: NonZeroUsize::new(2).unwrap(),
        batch: NonZeroUsize::new(batch).unwrap(),
        design: IoDesign::Parallel,
        io_threads: NonZeroUsize::new(2).unwrap(),
        ..ReplayOptions::default()
    };
    replay(&ChainConfig::mainnet(), &reader, &store, &options, |_| {
        boundaries.push((
            store.content_digest().unwrap().to_string(),
            store.applied_block().unwrap(),
        ));
    })
    .unwrap();
    boundaries
}

/// The binary under test.
pub fn bal_replay() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bal-replay"))
}

/// `bal-replay run --dump D --state S --batch B --threads 2`.
pub fn run_command(dump: &Path, state: &Path, batch: usize) -> Command {
    let mut command = bal_replay();
    command
        .args(["run", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .args(["--batch", &batch.to_string(), "--threads", "2"]);
    command
}

/// The run's stdout, after asserting it succeeded (else its status, stdout and stderr).
pub fn assert_ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
