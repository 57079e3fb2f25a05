//! A synthetic chain replayed over reth's MDBX layout read in place (commits kept in a
//! `MemOverlay`) verifies every block and ends at the same state as the same replay over RocksDB;
//! the MDBX database is not written.

mod common;

use alloy_primitives::{Address, U256};
use bal_replay_dump::DumpReader;
use bal_replay_engine::{ExecMode, IoDesign, ReplayOptions, replay};
use bal_replay_executor::ChainConfig;
use bal_replay_mdbx_state::{MdbxStore, RethDb};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{MemOverlay, StateReader};
use bal_replay_synth::GeneratorConfig;
use common::{RethChain, reth_chain};
use std::num::NonZeroUsize;

#[test]
fn a_synthetic_chain_replays_over_mdbx_in_place_like_over_rocksdb() {
    let tmp = tempfile::tempdir().unwrap();
    let config = GeneratorConfig {
        blocks: 6,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 11,
        gas_per_block: 6_000_000,
        ..GeneratorConfig::default()
    };
    let RethChain {
        dump: dump_dir,
        state,
        genesis,
        reth,
    } = reth_chain(tmp.path(), &config);

    let dump = DumpReader::open(&dump_dir).unwrap();
    let chain = ChainConfig::for_chain_id(dump.chain_id()).unwrap();
    let db = RethDb::open(&reth).unwrap();
    let mdbx = MdbxStore::new(&db).unwrap();
    assert_eq!(mdbx.applied_block().unwrap(), genesis.applied_block);

    for (mode, design) in [
        (ExecMode::Parallel, IoDesign::Parallel),
        (ExecMode::Parallel, IoDesign::Batched),
        (ExecMode::Sequential, IoDesign::Parallel),
    ] {
        let options = ReplayOptions {
            mode,
            design,
            threads: NonZeroUsize::new(2).unwrap(),
            batch: NonZeroUsize::new(3).unwrap(),
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let work = bal_replay_rocks::ScratchState::checkpoint_of(&state, "rocks-run").unwrap();
        let rocks = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
        let over_rocks = replay(&chain, &dump, &rocks, &options, |_| {}).unwrap();

        let overlay = MemOverlay::new(&mdbx);
        // reth's MDBX records no chain id: replayed over only when trusted.
        let trusted = ReplayOptions {
            trust_state: true,
            ..options.clone()
        };
        let over_mdbx = replay(&chain, &dump, &overlay, &trusted, |_| {}).unwrap();
        assert_eq!(
            (over_mdbx.blocks, over_mdbx.txs, over_mdbx.gas),
            (over_rocks.blocks, over_rocks.txs, over_rocks.gas),
            "{mode:?}/{design}"
        );
        assert_eq!(over_mdbx.blocks, 6);
        assert_eq!(
            overlay.applied_block().unwrap(),
            rocks.applied_block().unwrap()
        );

        // Every key either state holds reads the same.
        let after = rocks.dump_all().unwrap();
        for (key, account) in &after.accounts {
            assert_eq!(
                overlay.account(Address::from_slice(key)).unwrap(),
                Some(*account)
            );
        }
        for (key, _) in &genesis.accounts {
            let address = Address::from_slice(key);
            assert_eq!(
                overlay.account(address).unwrap(),
                rocks.account(address).unwrap()
            );
        }
        for (key, value) in after.storage.iter().chain(&genesis.storage) {
            let (address, slot) = (
                Address::from_slice(&key[..20]),
                U256::from_be_slice(&key[20..]),
            );
            assert_eq!(
                overlay.storage(address, slot).unwrap(),
                rocks.storage(address, slot).unwrap()
            );
            let _ = value;
        }
        for (hash, code) in &after.codes {
            assert_eq!(overlay.code(*hash).unwrap().as_ref(), Some(code));
        }
        // The database itself is still at genesis.
        assert_eq!(mdbx.applied_block().unwrap(), genesis.applied_block);
    }
}
