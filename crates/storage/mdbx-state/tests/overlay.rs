//! `with_mdbx_overlay`: reth's MDBX opened read-only under a memory overlay that starts with the
//! block hashes given, or an error naming the directory that holds no database.

mod common;

use alloy_primitives::B256;
use bal_replay_dump::DumpReader;
use bal_replay_engine::{ReplayOptions, replay};
use bal_replay_executor::ChainConfig;
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

/// Over MDBX the overlay's block hashes are the dump's own: a trusted replay does not check the
/// dump against them (it would find its own parent hash), and its report names the state's block
/// the dump was not checked against.
#[test]
fn a_trusted_replay_over_the_overlay_says_the_dump_was_not_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let config = GeneratorConfig {
        blocks: 2,
        accounts: 200,
        holders_per_token: 20,
        seed: 17,
        ..GeneratorConfig::default()
    };
    let RethChain {
        dump,
        genesis,
        reth,
        ..
    } = reth_chain(tmp.path(), &config);
    let dump = DumpReader::open(&dump).unwrap();
    let chain = ChainConfig::for_chain_id(dump.chain_id()).unwrap();
    let hashes = dump.first_block_hashes().unwrap();
    let options = ReplayOptions {
        trust_state: true,
        block_hashes_from_dump: true,
        ..ReplayOptions::default()
    };
    let report = with_mdbx_overlay(&reth, hashes.iter().map(|h| (h.number, h.hash)), |store| {
        // Boxed: the engine's error is large, and only its message matters here.
        replay(&chain, &dump, store, &options, |_| {}).map_err(Box::new)
    })
    .unwrap()
    .unwrap();
    assert_eq!(report.blocks, 2);
    assert_eq!(report.state_block_unchecked, genesis.applied_block);

    // Seeded with another parent hash, the same replay runs as before: what it found in the
    // table was never the state's.
    let wrong = hashes.iter().map(|h| (h.number, B256::repeat_byte(0x42)));
    let report = with_mdbx_overlay(&reth, wrong, |store| {
        // Boxed: the engine's error is large, and only its message matters here.
        replay(&chain, &dump, store, &options, |_| {}).map_err(Box::new)
    })
    .unwrap()
    .unwrap();
    assert_eq!(report.state_block_unchecked, genesis.applied_block);
}
