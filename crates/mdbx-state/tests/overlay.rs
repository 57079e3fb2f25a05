//! `with_mdbx_overlay`: reth's MDBX opened read-only under a memory overlay that starts with the
//! block hashes given, or an error naming the directory that holds no database.

mod common;

use alloy_primitives::B256;
use bal_replay_mdbx_state::{MdbxOverlayError, with_mdbx_overlay};
use bal_replay_state::StateReader;
use bal_replay_synth::GeneratorConfig;
use common::{RethChain, reth_chain};

#[test]
fn the_overlay_starts_with_the_hashes_given_over_the_database_state() {
    let tmp = tempfile::tempdir().unwrap();
    let config = GeneratorConfig {
        blocks: 1,
        accounts: 200,
        holders_per_token: 20,
        seed: 13,
        ..GeneratorConfig::default()
    };
    let RethChain { genesis, reth, .. } = reth_chain(tmp.path(), &config);

    let hash = B256::repeat_byte(0x42);
    let (applied, given) = with_mdbx_overlay(&reth, [(7, hash)], |store| {
        (store.applied_block().unwrap(), store.block_hash(7).unwrap())
    })
    .unwrap();
    assert_eq!(applied, genesis.applied_block);
    assert_eq!(given, Some(hash));
}

#[test]
fn a_directory_without_a_database_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-reth");
    let err = with_mdbx_overlay(&missing, [], |_| ()).unwrap_err();
    match &err {
        MdbxOverlayError::Open { path, .. } => assert_eq!(path, &missing),
        other => panic!("expected Open, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("opening reth's MDBX state at {}", missing.display())
    );
    assert!(!missing.exists(), "nothing was created");
}
