//! A replay checks that the dump fits the state before it executes anything (same chain, a height
//! inside the dump, the same block at that height) and resumes a stopped replay by skipping the
//! blocks the state already holds. Every refusal is a typed error naming both values, and leaves
//! the state untouched. A state that does not say which chain and block it holds is refused unless
//! trusted.

use alloy_primitives::B256;
use bal_replay_dump::{BlockRecord, DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_engine::{EngineError, ExecMode, IoDesign, ReplayOptions, ReplayReport, replay};
use bal_replay_executor::ChainConfig;
use bal_replay_rocks::ScratchState;
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{AppliedBlock, KeyScheme, StateReader, cf};
use bal_replay_synth::{GeneratorConfig, generate};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

const BLOCKS: u64 = 6;

struct Chain {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    dump: PathBuf,
    state: PathBuf,
    records: Vec<BlockRecord>,
}

fn chain() -> Chain {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let config = GeneratorConfig {
        blocks: BLOCKS,
        accounts: 1_000,
        holders_per_token: 100,
        seed: 11,
        gas_per_block: 3_000_000,
        ..GeneratorConfig::default()
    };
    let (dump, state) = (dir.join("dump"), dir.join("state"));
    generate(&config, &dump, &state, None).expect("generate");
    let records = DumpReader::open(&dump)
        .unwrap()
        .records()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    Chain {
        _tmp: tmp,
        dir,
        dump,
        state,
        records,
    }
}

/// Writes `records` as a dump in `dir` with `meta`.
fn write_dump(dir: &Path, meta: DumpMeta, records: &[BlockRecord]) -> DumpReader {
    let mut writer = DumpWriter::create(dir, meta, WriterOptions::default()).unwrap();
    for record in records {
        writer.append(record).unwrap();
    }
    writer.finish().unwrap();
    DumpReader::open(dir).unwrap()
}

fn meta(chain_id: u64, chained: bool) -> DumpMeta {
    DumpMeta {
        chain_id,
        chained,
        source: "test".into(),
        schedule: None,
    }
}

fn options(design: IoDesign) -> ReplayOptions {
    ReplayOptions {
        mode: ExecMode::Parallel,
        threads: NonZeroUsize::new(2).unwrap(),
        batch: NonZeroUsize::new(2).unwrap(),
        design,
        io_threads: NonZeroUsize::new(2).unwrap(),
        ..ReplayOptions::default()
    }
}

// The test hands replay's own result through, error type and all.
#[allow(clippy::result_large_err)]
fn run(
    dump: &DumpReader,
    store: &RocksStore,
    design: IoDesign,
) -> Result<ReplayReport, EngineError> {
    replay(
        &ChainConfig::mainnet(),
        dump,
        store,
        &options(design),
        |_| {},
    )
}

/// [`run`] with [`ReplayOptions::trust_state`].
#[allow(clippy::result_large_err)]
fn run_trusted(
    dump: &DumpReader,
    store: &RocksStore,
    design: IoDesign,
) -> Result<ReplayReport, EngineError> {
    let options = ReplayOptions {
        trust_state: true,
        ..options(design)
    };
    replay(&ChainConfig::mainnet(), dump, store, &options, |_| {})
}

/// Removes a `meta` entry, as a state written before it was recorded lacks it.
fn forget_meta(store: &RocksStore, key: &[u8]) {
    let db = store.raw_db();
    db.delete_cf(db.cf_handle(cf::META).unwrap(), key).unwrap();
}

/// A fresh writable copy of the chain's pristine state.
fn copy(chain: &Chain) -> (ScratchState, RocksStore) {
    let scratch = ScratchState::checkpoint_of(&chain.state, "test").unwrap();
    let store = RocksStore::open(scratch.path(), &RocksOptions::default()).unwrap();
    (scratch, store)
}

#[test]
fn the_generated_state_records_its_block_and_chain() {
    let chain = chain();
    let store = RocksStore::open_read_only(&chain.state).unwrap();
    let first = &chain.records[0];
    assert_eq!(store.applied_block().unwrap(), Some(first.number() - 1));
    assert_eq!(
        store.applied_block_hash().unwrap(),
        Some(first.block.header.parent_hash)
    );
    assert_eq!(store.chain_id().unwrap(), Some(1));
}

#[test]
fn a_dump_of_another_chain_is_refused_naming_both_chains() {
    let chain = chain();
    let other = write_dump(&chain.dir.join("other"), meta(5, true), &chain.records);
    let (_scratch, store) = copy(&chain);
    let before = store.content_digest().unwrap();
    match run(&other, &store, IoDesign::Parallel) {
        Err(EngineError::ChainMismatch { state, dump, dir }) => {
            assert_eq!((state, dump), (1, 5));
            assert!(dir.ends_with("other"), "{dir}");
        }
        other => panic!("expected ChainMismatch, got {other:?}"),
    }
    assert_eq!(store.content_digest().unwrap(), before);
}

/// The wrong state at the right height: every design refuses it before executing, `full`
/// included (which reads nothing from the state and so would otherwise verify every block).
#[test]
fn a_dump_that_does_not_build_on_the_state_is_refused_naming_both_hashes() {
    let chain = chain();
    let first = &chain.records[0];
    let parent = first.number() - 1;
    let foreign = B256::repeat_byte(0xee);
    for design in [IoDesign::Full, IoDesign::Parallel] {
        let (_scratch, store) = copy(&chain);
        store
            .set_applied_block(AppliedBlock::new(parent, foreign, 1))
            .unwrap();
        let before = store.content_digest().unwrap();
        let dump = DumpReader::open(&chain.dump).unwrap();
        match run(&dump, &store, design) {
            Err(EngineError::BlockHashMismatch {
                number,
                state_hash,
                dump_hash,
            }) => {
                assert_eq!(number, parent);
                assert_eq!(state_hash, foreign);
                assert_eq!(dump_hash, first.block.header.parent_hash);
            }
            other => panic!("{design}: expected BlockHashMismatch, got {other:?}"),
        }
        assert_eq!(store.content_digest().unwrap(), before, "{design}");
        assert_eq!(store.applied_block_hash().unwrap(), Some(foreign));
    }
}

#[test]
fn a_state_outside_the_dump_is_refused_naming_the_heights() {
    let chain = chain();
    let dump = DumpReader::open(&chain.dump).unwrap();
    let first = chain.records[0].number();
    let last = chain.records.last().unwrap().number();
    for height in [first - 2, last + 1] {
        let (_scratch, store) = copy(&chain);
        store.set_applied_block(height).unwrap();
        match run(&dump, &store, IoDesign::Parallel) {
            Err(EngineError::StateHeight {
                state,
                dump_first,
                dump_last,
                expected,
            }) => {
                assert_eq!(state, Some(height));
                assert_eq!((dump_first, dump_last, expected), (first, last, first - 1));
            }
            other => panic!("state at {height}: expected StateHeight, got {other:?}"),
        }
        assert_eq!(store.applied_block().unwrap(), Some(height));
    }
    // A state that never committed has no height at all.
    let empty = RocksStore::create(
        chain.dir.join("empty"),
        KeyScheme::Plain,
        &RocksOptions::default(),
    )
    .unwrap();
    match run(&dump, &empty, IoDesign::Parallel) {
        Err(EngineError::StateHeight { state: None, .. }) => {}
        other => panic!("empty state: expected StateHeight, got {other:?}"),
    }
}

#[test]
fn a_dump_of_independent_blocks_is_refused() {
    let chain = chain();
    let loose = write_dump(&chain.dir.join("loose"), meta(1, false), &chain.records);
    let (_scratch, store) = copy(&chain);
    match run(&loose, &store, IoDesign::Parallel) {
        Err(EngineError::NotChained { dir }) => assert!(dir.ends_with("loose"), "{dir}"),
        other => panic!("expected NotChained, got {other:?}"),
    }
    assert_eq!(
        store.applied_block().unwrap(),
        Some(chain.records[0].number() - 1)
    );
}

/// A replay stopped after some batches (here: its dump ended early) resumes over the whole dump:
/// the blocks the state holds are skipped, the rest replayed, and the state ends exactly where an
/// uninterrupted replay leaves it, with the last block's hash and the chain recorded. Run again, it
/// has nothing to do.
#[test]
fn a_stopped_replay_resumes_and_ends_where_an_uninterrupted_one_does() {
    let chain = chain();
    let dump = DumpReader::open(&chain.dump).unwrap();
    let last = chain.records.last().unwrap();

    let (_a, whole) = copy(&chain);
    let report = run(&dump, &whole, IoDesign::Parallel).unwrap();
    assert_eq!((report.blocks, report.skipped), (BLOCKS, 0));
    let expected = whole.content_digest().unwrap();
    assert_eq!(whole.applied_block().unwrap(), Some(last.number()));
    assert_eq!(
        whole.applied_block_hash().unwrap(),
        Some(last.block.header.hash_slow())
    );
    assert_eq!(whole.chain_id().unwrap(), Some(1));

    for stopped_after in [1usize, 3] {
        let (_b, store) = copy(&chain);
        let prefix = write_dump(
            &chain.dir.join(format!("prefix-{stopped_after}")),
            meta(1, true),
            &chain.records[..stopped_after],
        );
        run(&prefix, &store, IoDesign::Parallel).unwrap();
        let report = run(&dump, &store, IoDesign::Batched).unwrap();
        assert_eq!(report.skipped, stopped_after as u64);
        assert_eq!(report.blocks, BLOCKS - stopped_after as u64);
        assert_eq!(
            report.batches[0].first_block,
            chain.records[stopped_after].number()
        );
        assert_eq!(store.content_digest().unwrap(), expected, "{stopped_after}");
        assert_eq!(
            store.applied_block_hash().unwrap(),
            Some(last.block.header.hash_slow())
        );
    }

    let again = run(&dump, &whole, IoDesign::Parallel).unwrap();
    assert_eq!((again.blocks, again.skipped), (0, BLOCKS));
    assert!(again.batches.is_empty());
    assert_eq!(whole.content_digest().unwrap(), expected);
}

/// A state that records no chain id, no hash for its block, or neither (a migration by an older
/// `bal-migrate`, reth's MDBX) is refused in every design before anything runs, naming its
/// directory and what it lacks, and left as it was; trusted, it replays.
#[test]
fn a_state_without_its_chain_or_block_hash_is_refused_unless_trusted() {
    let chain = chain();
    let dump = DumpReader::open(&chain.dump).unwrap();
    let parent = chain.records[0].number() - 1;
    let missing: [(&[&[u8]], bool, bool, String); 3] = [
        (&[cf::META_CHAIN_ID], true, false, "no chain id,".into()),
        (
            &[cf::META_APPLIED_BLOCK_HASH],
            false,
            true,
            format!("no hash for its block {parent},"),
        ),
        (
            &[cf::META_CHAIN_ID, cf::META_APPLIED_BLOCK_HASH],
            true,
            true,
            format!("no chain id and no hash for its block {parent},"),
        ),
    ];
    for (keys, chain_missing, hash_missing, words) in missing {
        for design in [IoDesign::Full, IoDesign::Parallel] {
            let (scratch, store) = copy(&chain);
            for key in keys {
                forget_meta(&store, key);
            }
            let before = store.content_digest().unwrap();
            let err = run(&dump, &store, design).unwrap_err();
            match &err {
                EngineError::StateWithoutIdentity {
                    state,
                    block,
                    no_chain_id,
                    no_block_hash,
                } => {
                    assert_eq!(Path::new(state), scratch.path(), "{design}");
                    assert_eq!(
                        (*block, *no_chain_id, *no_block_hash),
                        (parent, chain_missing, hash_missing),
                        "{design}"
                    );
                }
                other => panic!("{design}: expected StateWithoutIdentity, got {other:?}"),
            }
            let message = err.to_string();
            assert!(message.contains(&words), "{message}");
            assert!(message.contains("--trust-state"), "{message}");
            assert_eq!(store.content_digest().unwrap(), before, "{design}");
            assert_eq!(store.applied_block().unwrap(), Some(parent));

            let report = run_trusted(&dump, &store, design).unwrap();
            assert_eq!(report.blocks, BLOCKS, "{design}");
            // The replay's commits record the dump's chain and last block, as over any state.
            assert_eq!(store.chain_id().unwrap(), Some(1));
            assert_eq!(
                store.applied_block_hash().unwrap(),
                Some(chain.records.last().unwrap().block.header.hash_slow())
            );
        }
    }
}

/// Trusted, a state written before block hashes were recorded still replays: its block is checked
/// against its block-hash table instead, which still catches a dump of another branch.
#[test]
fn a_trusted_state_without_a_recorded_hash_is_checked_by_its_block_hash_table() {
    let chain = chain();
    let dump = DumpReader::open(&chain.dump).unwrap();
    let parent = chain.records[0].number() - 1;
    let forget_hash = |store: &RocksStore| {
        forget_meta(store, cf::META_APPLIED_BLOCK_HASH);
        assert_eq!(store.applied_block_hash().unwrap(), None);
    };

    let (_a, old) = copy(&chain);
    forget_hash(&old);
    let report = run_trusted(&dump, &old, IoDesign::Parallel).unwrap();
    assert_eq!(report.blocks, BLOCKS);

    let (_b, other_branch) = copy(&chain);
    forget_hash(&other_branch);
    let db = other_branch.raw_db();
    let foreign = B256::repeat_byte(0xab);
    db.put_cf(
        db.cf_handle(cf::BLOCK_HASHES).unwrap(),
        parent.to_be_bytes(),
        foreign,
    )
    .unwrap();
    match run_trusted(&dump, &other_branch, IoDesign::Parallel) {
        Err(EngineError::BlockHashMismatch {
            number, state_hash, ..
        }) => assert_eq!((number, state_hash), (parent, foreign)),
        other => panic!("expected BlockHashMismatch, got {other:?}"),
    }
    assert_eq!(other_branch.applied_block().unwrap(), Some(parent));
}
