//! Benching a dump of independent blocks (imported mainnet fixtures): each block a batch of its own
//! over its own pre-state, verified, with one profile per block; and the two configurations it
//! cannot run, refused with errors that say why.

use bal_replay_bench::{BenchError, BenchMatrix, StoreKind, TaskProfiles, run_bench};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_executor::ChainConfig;
use bal_replay_fixtures::default_mainnet_dir;
use bal_replay_import::{import_fixtures, read_fixtures, write_fixture_dump};
use bal_replay_mdbx_state::StateSpec;
use std::num::NonZeroUsize;

/// Frontier, London and Cancun blocks, none of which wipes an existing account's storage (a BAL
/// cannot express that wipe; such pre-Cancun blocks replay only sequentially).
const BLOCKS: [u64; 3] = [46147, 17034869, 19934116];

fn n(count: usize) -> NonZeroUsize {
    NonZeroUsize::new(count).unwrap()
}

fn matrix() -> BenchMatrix {
    BenchMatrix {
        batches: vec![n(1)],
        io_threads: n(2),
        in_memory: false,
        profile: TaskProfiles::All,
        ..BenchMatrix::default()
    }
}

#[test]
fn fixture_blocks_bench_each_over_its_own_state_with_a_profile_per_block() {
    let root = default_mainnet_dir().expect("../shared/fixtures/mainnet next to the workspace");
    let config = ChainConfig::mainnet();
    let dirs: Vec<_> = BLOCKS.iter().map(|b| root.join(b.to_string())).collect();
    let fixtures = read_fixtures(&dirs).unwrap();
    let mut wiping = Vec::new();
    let records = import_fixtures(&config, &fixtures, |record, wipes| {
        if wipes {
            wiping.push(record.number());
        }
    })
    .unwrap();
    assert!(wiping.is_empty(), "{wiping:?}");
    let tmp = tempfile::tempdir().unwrap();
    let (dump, states) = (tmp.path().join("dump"), tmp.path().join("states"));
    write_fixture_dump(&config, &records, &dump, &states, || {}).unwrap();
    let gas: u64 = records.iter().map(|r| r.gas_used()).sum();
    let txs: usize = records.iter().map(|r| r.tx_count()).sum();
    // The three headers' gasUsed and transaction counts.
    assert_eq!((gas, txs), (11_837_107, 152));

    let spec = StateSpec::RocksDb(states.clone());
    let result = run_bench(&config, &dump, &spec, &matrix(), |_| {}).unwrap();
    assert!(result.independent_blocks);
    // Every design at 1 and 2 workers, and the sequential baseline.
    assert_eq!(result.runs.len(), IoDesign::ALL.len() * 2 + 1);
    for run in &result.runs {
        assert_eq!(run.store, StoreKind::Rocksdb);
        assert_eq!(
            (run.blocks, run.txs, run.gas),
            (3, txs as u64, gas),
            "{run:?}"
        );
        if run.mode == ExecMode::Sequential {
            continue;
        }
        // One profile per block; a task per BAL index (0: before the transactions, then each
        // transaction, then the block's end: rewards, withdrawals), each once; the tasks' gas the
        // block's.
        assert_eq!(run.batch_profiles.len(), BLOCKS.len());
        for (profile, record) in run.batch_profiles.iter().zip(&records) {
            assert_eq!(profile.first_block, record.number());
            assert_eq!(profile.last_block, record.number());
            let mut indices: Vec<u64> = profile.tasks.iter().map(|t| t.index).collect();
            indices.sort_unstable();
            assert_eq!(
                indices,
                (0..=record.tx_count() as u64 + 1).collect::<Vec<_>>()
            );
            assert_eq!(
                profile.tasks.iter().map(|t| t.gas).sum::<u64>(),
                record.gas_used(),
                "block {}, {}",
                record.number(),
                run.design
            );
        }
    }
    // The states were opened read-only: each still holds its block's parent, with the parent's
    // hash and the dump's chain, which every run checked its block against.
    for record in &records {
        let store =
            bal_replay_rocks::RocksStore::open_read_only(states.join(record.number().to_string()))
                .unwrap();
        assert_eq!(
            bal_replay_state::StateReader::applied_block(&store).unwrap(),
            Some(record.number() - 1)
        );
        assert_eq!(
            bal_replay_state::StateReader::applied_block_hash(&store).unwrap(),
            Some(record.block.header.parent_hash)
        );
        assert_eq!(
            bal_replay_state::StateReader::chain_id(&store).unwrap(),
            Some(1)
        );
    }

    // A batch of several independent blocks has no one state to run over.
    let batch_50 = BenchMatrix {
        batches: vec![n(50)],
        sequential: false,
        ..matrix()
    };
    let err = run_bench(&config, &dump, &spec, &batch_50, |_| {}).unwrap_err();
    assert!(err.to_string().contains("batches of 1 block"), "{err}");
    // The in-memory baseline loads one state.
    let in_memory = BenchMatrix {
        in_memory: true,
        ..matrix()
    };
    let err = run_bench(&config, &dump, &spec, &in_memory, |_| {}).unwrap_err();
    assert!(
        matches!(err, BenchError::IndependentInMemory { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--no-baselines"), "{err}");
}

#[test]
fn the_reference_executor_times_each_block_first_and_warm_and_writes_a_versioned_result() {
    let root = default_mainnet_dir().expect("../shared/fixtures/mainnet next to the workspace");
    let config = ChainConfig::mainnet();
    let dirs: Vec<_> = BLOCKS.iter().map(|b| root.join(b.to_string())).collect();
    let records = import_fixtures(&config, &read_fixtures(&dirs).unwrap(), |_, _| {}).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, states) = (tmp.path().join("dump"), tmp.path().join("states"));
    write_fixture_dump(&config, &records, &dump, &states, || {}).unwrap();
    let reader = bal_replay_dump::DumpReader::open(&dump).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let r = bal_replay_bench::reference_throughput(&config, &reader, scratch.path(), 2).unwrap();
    assert_eq!((r.blocks, r.gas, r.warm_repeats), (3, 11_837_107, 2));
    assert_eq!(
        r.per_block.iter().map(|b| b.number).collect::<Vec<_>>(),
        BLOCKS
    );
    for (block, record) in r.per_block.iter().zip(&records) {
        assert_eq!(block.gas, record.gas_used());
        assert_eq!(block.memory_warm_s.len(), 2, "{block:?}");
        assert!(
            block.memory_first_s > 0.0 && block.rocksdb_s > 0.0,
            "{block:?}"
        );
        assert!(block.memory_warm_s.iter().all(|&s| s > 0.0), "{block:?}");
    }
    let first: f64 = r.per_block.iter().map(|b| b.memory_first_s).sum();
    assert!((first - r.memory_s).abs() < 1e-9);
    let (fastest, median) = r.warm_mgas_s().unwrap();
    assert!(fastest >= median && median > 0.0, "{fastest} {median}");

    let json = tmp.path().join("reference.json");
    r.write_json(&json).unwrap();
    let read: bal_replay_bench::ReferenceThroughput = bal_replay_bench::read_result(&json).unwrap();
    // JSON keeps each f64 to its last bit or one unit off (serde_json's fast float parsing).
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
    assert_eq!(
        (
            read.blocks,
            read.gas,
            read.warm_repeats,
            &read.build_profile
        ),
        (r.blocks, r.gas, r.warm_repeats, &r.build_profile)
    );
    assert!(close(read.memory_s, r.memory_s) && close(read.rocksdb_s, r.rocksdb_s));
    for (a, b) in read.per_block.iter().zip(&r.per_block) {
        assert_eq!((a.number, a.gas), (b.number, b.gas));
        assert!(close(a.memory_first_s, b.memory_first_s) && close(a.rocksdb_s, b.rocksdb_s));
        assert!(
            a.memory_warm_s
                .iter()
                .zip(&b.memory_warm_s)
                .all(|(x, y)| close(*x, *y))
        );
    }
    assert_eq!(
        read.schema_version,
        bal_replay_bench::REFERENCE_SCHEMA_VERSION
    );
}
