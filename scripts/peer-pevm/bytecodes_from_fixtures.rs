//! Rebuilds pevm's `data/ethereum/bytecodes.bincode.gz` from bal-replay's mainnet fixtures.
//!
//! Copy into a pevm checkout's `crates/pevm/examples/`, then from `crates/pevm`:
//!
//! ```sh
//! cargo run --release -p pevm --example bytecodes_from_fixtures -- <fixtures dir> [out file]
//! ```
//!
//! `<fixtures dir>` holds one directory per block (`<number>/pre_state.json`, each account's code
//! as a `"code": "0x..."` hex string). Every non-empty code is keyed by its keccak256 and stored as
//! pevm's `EvmCode` made from revm's `Bytecode::new_raw`, in the format pevm's `fetch` writes and
//! its tests and benches read (`tests/common/mod.rs`): a map from code hash to `EvmCode`, bincode
//! (`config::standard()`, serde) inside gzip. Writes `../../data/ethereum/bytecodes.bincode.gz`
//! (relative to `crates/pevm`) unless an out file is given. Then reports, for each block in
//! `../../data/ethereum/blocks`, whether every `code_hash` of its `pre_state.json` is in the map:
//! only those blocks can be executed from disk.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs::{self, File},
    io::{BufReader, BufWriter, Write},
    path::{Path, PathBuf},
};

use alloy_primitives::{B256, Bytes, keccak256};
use flate2::{Compression, write::GzEncoder};
use pevm::EvmCode;
use revm::{primitives::KECCAK_EMPTY, state::Bytecode};

fn main() {
    let mut args = std::env::args().skip(1);
    let fixtures = PathBuf::from(
        args.next()
            .expect("usage: bytecodes_from_fixtures <fixtures dir> [out file]"),
    );
    let out = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "../../data/ethereum/bytecodes.bincode.gz".to_string()),
    );

    let (bytecodes, blocks) = codes_of_fixtures(&fixtures);
    write_codes(&bytecodes, &out);
    println!(
        "{} codes from {blocks} blocks in {} -> {}",
        bytecodes.len(),
        fixtures.display(),
        out.display()
    );
    report_pevm_blocks(&bytecodes);
}

/// Code hash -> code, over every fixture's pre-state (the same map `fetch` writes: a BTreeMap,
/// so the file is the same for the same fixtures), and the number of fixture blocks read.
fn codes_of_fixtures(fixtures: &Path) -> (BTreeMap<B256, EvmCode>, usize) {
    let mut bytecodes = BTreeMap::<B256, EvmCode>::new();
    let mut blocks = 0;
    let mut dirs: Vec<_> = fs::read_dir(fixtures)
        .unwrap_or_else(|e| panic!("{}: {e}", fixtures.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("pre_state.json").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let pre_state: BTreeMap<String, serde_json::Value> = serde_json::from_reader(
            BufReader::new(File::open(dir.join("pre_state.json")).unwrap()),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for (address, account) in pre_state {
            let Some(code) = account.get("code").and_then(|code| code.as_str()) else {
                continue;
            };
            let code: Bytes = code
                .parse()
                .unwrap_or_else(|e| panic!("{}: code of {address}: {e}", dir.display()));
            if code.is_empty() {
                continue;
            }
            let hash = keccak256(&code);
            assert_ne!(hash, KECCAK_EMPTY);
            bytecodes
                .entry(hash)
                .or_insert_with(|| EvmCode::from(Bytecode::new_raw(code)));
        }
        blocks += 1;
    }
    (bytecodes, blocks)
}

/// Writes the map as pevm's `fetch` does: bincode (standard config, serde) inside gzip.
fn write_codes(bytecodes: &BTreeMap<B256, EvmCode>, out: &Path) {
    if let Some(parent) = out.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    let mut writer = GzEncoder::new(
        BufWriter::new(File::create(out).unwrap()),
        Compression::default(),
    );
    bincode::serde::encode_into_std_write(bytecodes, &mut writer, bincode::config::standard())
        .unwrap();
    writer.finish().unwrap().flush().unwrap();
}

/// Prints which of pevm's blocks have all their codes in the map (only those can be executed
/// from disk).
fn report_pevm_blocks(bytecodes: &BTreeMap<B256, EvmCode>) {
    let pevm_blocks = PathBuf::from("../../data/ethereum/blocks");
    let Ok(entries) = fs::read_dir(&pevm_blocks) else {
        return;
    };
    let mut numbers: Vec<u64> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    numbers.sort();
    let (mut complete, mut incomplete) = (Vec::new(), Vec::new());
    for number in numbers {
        let pre_state: BTreeMap<String, serde_json::Value> =
            serde_json::from_reader(BufReader::new(
                File::open(pevm_blocks.join(number.to_string()).join("pre_state.json")).unwrap(),
            ))
            .unwrap();
        let missing = pre_state
            .values()
            .filter_map(|account| account.get("code_hash")?.as_str()?.parse::<B256>().ok())
            .filter(|hash| !bytecodes.contains_key(hash))
            .collect::<BTreeSet<_>>()
            .len();
        if missing == 0 {
            complete.push(number);
        } else {
            incomplete.push((number, missing));
        }
    }
    println!(
        "pevm blocks with every code: {} {:?}",
        complete.len(),
        complete
    );
    println!(
        "pevm blocks missing codes (block, codes missing): {} {:?}",
        incomplete.len(),
        incomplete
    );
}
