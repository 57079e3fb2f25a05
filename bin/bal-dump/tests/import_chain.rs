//! `bal-dump import-chain` over the Amsterdam dev chain (`../shared/fixtures/amsterdam-dev`): every
//! block passes, the dump validates (BAL hashes against the headers included), `size` reports the
//! network's BAL, and a second import into the same place is refused, touching nothing.

use std::process::Command;

fn bal_dump(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-dump"))
        .args(args.iter().map(|a| a.as_ref()))
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run bal-dump");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_amsterdam_dev_chain_imports_validates_and_sizes() {
    let fixture = bal_replay_fixtures::default_amsterdam_dev_dir()
        .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = (tmp.path().join("dump"), tmp.path().join("state"));

    let (ok, text) = bal_dump(&[
        &"import-chain",
        &fixture,
        &"--out",
        &dump,
        &"--state",
        &state,
    ]);
    assert!(ok, "{text}");
    assert_eq!(text.lines().last(), Some("80 passed, 0 failed"), "{text}");
    assert!(
        text.contains("block        60  txs    60  gas    6849108"),
        "{text}"
    );

    let (ok, text) = bal_dump(&[&"validate", &dump]);
    assert!(ok, "{text}");
    assert!(text.contains("80 blocks valid, 0 invalid"), "{text}");

    let (ok, text) = bal_dump(&[&"size", &dump]);
    assert!(ok, "{text}");
    // Block 60's BAL as the network gave it: 2,893 bytes (the fixture's blocks.tsv).
    let line60 = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("60"))
        .unwrap();
    assert_eq!(line60.split_whitespace().nth(4), Some("2893"), "{line60}");
    // 21,215 bytes over the 80 blocks, the sum of blocks.tsv's bal_rlp_bytes.
    assert!(
        text.contains("network EIP-7928 BAL (80 of 80 blocks, hash checked against the header)")
            && text.contains("total        21215 B (the batched I/O BAL's format)"),
        "{text}"
    );

    let manifest = std::fs::read(dump.join("manifest.json")).unwrap();
    let (ok, text) = bal_dump(&[
        &"import-chain",
        &fixture,
        &"--out",
        &dump,
        &"--state",
        &state,
    ]);
    assert!(!ok);
    assert!(text.contains("already exists"), "{text}");
    assert_eq!(std::fs::read(dump.join("manifest.json")).unwrap(), manifest);
}
