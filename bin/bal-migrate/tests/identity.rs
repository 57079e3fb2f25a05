//! `bal-migrate` records the chain and the block hash a replay checks a dump against: from the
//! source where it says them (reth's dev-chain fixture), from `--chain` and `--block-hash` where it
//! does not (a generated source), and it refuses to guess.

use std::process::{Command, Output};

use alloy_primitives::B256;
use bal_replay_fixtures::copy_reth_db;
use bal_replay_reth_db::{GenerateOptions, Layout, generate_source};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;

fn bal_migrate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bal-migrate"))
        .args(args)
        .output()
        .unwrap()
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_source_that_does_not_say_its_chain_is_refused_until_it_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    let generated = generate_source(
        &src,
        &GenerateOptions {
            layout: Layout::V1,
            entries: 1_000,
            height: 9,
        },
    )
    .unwrap();
    let dst = tmp.path().join("flat");
    let base = ["--src", path(&src), "--dst", path(&dst)];

    let out = bal_migrate(&base);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "source {} does not say which chain it holds",
            generated.db.display()
        )) && stderr.contains("pass --chain <id>"),
        "{stderr}"
    );
    assert!(!dst.exists());

    let out = bal_migrate(&[&base[..], &["--chain", "1"]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("does not say which block its state is at")
            && stderr.contains("pass --block-hash <the hash of block 9>"),
        "{stderr}"
    );
    assert!(!dst.exists());

    let hash = B256::repeat_byte(0x42);
    let hash_arg = hash.to_string();
    let given = [&base[..], &["--chain", "1", "--block-hash", &hash_arg]].concat();
    let out = bal_migrate(&given);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("of chain 1 at block 9 {hash}")),
        "{stdout}"
    );
    let store = RocksStore::open_read_only(&dst).unwrap();
    assert_eq!(store.chain_id().unwrap(), Some(1));
    assert_eq!(store.applied_block_hash().unwrap(), Some(hash));
}

#[test]
fn reths_dev_chain_is_known_by_its_genesis_and_another_chain_given_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    copy_reth_db("v2", &src).unwrap_or_else(|e| panic!("{e}"));
    let dst = tmp.path().join("flat");
    let base = ["--src", path(&src), "--dst", path(&dst)];

    let out = bal_migrate(&[&base[..], &["--chain", "1"]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("holds chain 1337 (reth v2.5.1 --dev, by its genesis hash 0x683713729fcb72be6f3d8b88c8cda3e10569d73b9640d3bf6f5184d94bd97616), but --chain says 1"),
        "{stderr}"
    );
    assert!(!dst.exists());

    let out = bal_migrate(&base);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = RocksStore::open_read_only(&dst).unwrap();
    assert_eq!(store.chain_id().unwrap(), Some(1337));
    assert_eq!(
        store.applied_block_hash().unwrap(),
        Some(alloy_primitives::b256!(
            "2ba201a8ff41f7d911600efc32baa6bf9944b4182ac0ba8c0b2b6b74c9e46d0a"
        ))
    );
}
