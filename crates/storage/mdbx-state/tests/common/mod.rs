//! A generated chain with its genesis written as reth's MDBX database: what the tests read in
//! place.
#![allow(dead_code)] // each test binary uses its own part

use bal_replay_reth_db::write_source_from_flat;
use bal_replay_rocks::RocksStore;
use bal_replay_state::FlatContents;
use bal_replay_synth::{GeneratorConfig, generate};
use std::path::{Path, PathBuf};

/// A generated chain under `dir`: its dump, its RocksDB genesis state, the genesis's contents,
/// and the same genesis as reth's MDBX database.
pub struct RethChain {
    /// The dump.
    pub dump: PathBuf,
    /// The RocksDB state before the dump.
    pub state: PathBuf,
    /// That state's contents.
    pub genesis: FlatContents,
    /// The same state as reth's MDBX database.
    pub reth: PathBuf,
}

/// Generates `config`'s chain under `dir` and writes its genesis as reth's database.
pub fn reth_chain(dir: &Path, config: &GeneratorConfig) -> RethChain {
    let (dump, state) = (dir.join("dump"), dir.join("state"));
    generate(config, &dump, &state, None).unwrap();
    let genesis = RocksStore::open_read_only(&state)
        .unwrap()
        .dump_all()
        .unwrap();
    let reth = dir.join("reth");
    write_source_from_flat(&reth, &genesis).unwrap();
    RethChain {
        dump,
        state,
        genesis,
        reth,
    }
}
