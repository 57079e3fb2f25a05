//! `bal-dump import-fixture` places its dump whole or not at all: a run that fails part-way leaves
//! no dump at `--out` (not one of the blocks written before the failure, which would read as the
//! whole import), and removes the block states it created, keeping those it did not.

use bal_replay_dump::DumpReader;
use std::{fs, path::Path, process::Command};

/// Four small mainnet fixture blocks, in block order.
const BLOCKS: [&str; 4] = ["46147", "930196", "1150000", "2688148"];

fn import_fixture(dirs: &[&Path], out: &Path, state: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-dump"))
        .arg("import-fixture")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .arg("--state")
        .arg(state)
        .output()
        .expect("run bal-dump");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_failed_import_leaves_no_dump_and_only_the_states_it_did_not_create() {
    let fixtures = bal_replay_fixtures::default_mainnet_dir()
        .expect("../shared/fixtures/mainnet must exist next to the workspace");
    let dirs: Vec<_> = BLOCKS.iter().map(|b| fixtures.join(b)).collect();
    let dirs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = (tmp.path().join("dump"), tmp.path().join("state"));
    // The third block's state is taken: its seeding fails after two blocks were written.
    fs::create_dir_all(state.join("1150000")).unwrap();
    fs::write(state.join("1150000/notes.txt"), b"kept\n").unwrap();

    let (code, stderr) = import_fixture(&dirs, &dump, &state);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("1150000"), "{stderr}");
    assert_eq!(names_in(tmp.path()), ["state"], "{stderr}");
    assert_eq!(names_in(&state), ["1150000"]);
    assert_eq!(names_in(&state.join("1150000")), ["notes.txt"]);

    // With the way clear, the same import places all four.
    fs::remove_dir_all(state.join("1150000")).unwrap();
    let (code, stderr) = import_fixture(&dirs, &dump, &state);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        DumpReader::open(&dump).unwrap().manifest().record_count,
        BLOCKS.len() as u64
    );
    assert_eq!(names_in(tmp.path()), ["dump", "state"]);
    let mut blocks: Vec<String> = BLOCKS.iter().map(|b| b.to_string()).collect();
    blocks.sort();
    assert_eq!(names_in(&state), blocks);
}
