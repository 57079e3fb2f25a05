//! The bench matrix over reth's MDBX layout read in place (`bal-migrate gen-source --from-state`'s
//! writer over a synthetic chain's genesis state): every run replays and verifies the whole chain,
//! with the same blocks, transactions and gas as the same matrix over the RocksDB state, and leaves
//! the database as it was; what MDBX cannot do is a clear error.

use bal_replay_bench::{BenchError, BenchMatrix, BenchResult, StoreKind, render_tables, run_bench};
use bal_replay_dump::DumpReader;
use bal_replay_engine::{EngineError, ExecMode, IoDesign};
use bal_replay_executor::ChainConfig;
use bal_replay_mdbx_state::{MdbxStore, RethDb, StateSpec};
use bal_replay_reth_db::write_source_from_flat;
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;
use bal_replay_synth::{GeneratorConfig, generate};
use std::num::NonZeroUsize;
use std::path::Path;

const BLOCKS: u64 = 6;

/// A small synthetic chain: its dump, its RocksDB genesis state and the same state as reth's MDBX.
fn chain(dir: &Path) -> (ChainConfig, u64) {
    let config = GeneratorConfig {
        blocks: BLOCKS,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 5,
        gas_per_block: 6_000_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dir.join("dump"), &dir.join("state"), None).unwrap();
    let genesis = RocksStore::open_read_only(dir.join("state"))
        .unwrap()
        .dump_all()
        .unwrap();
    write_source_from_flat(&dir.join("reth"), &genesis).unwrap();
    let dump = DumpReader::open(dir.join("dump")).unwrap();
    let chain = ChainConfig::for_chain_id(dump.chain_id()).unwrap();
    (chain, genesis.applied_block.unwrap())
}

fn matrix() -> BenchMatrix {
    BenchMatrix {
        batches: vec![n(1), n(BLOCKS as usize)],
        designs: vec![IoDesign::Parallel, IoDesign::Full, IoDesign::Batched],
        io_threads: n(2),
        in_memory: false,
        ..BenchMatrix::default()
    }
}

fn n(count: usize) -> NonZeroUsize {
    NonZeroUsize::new(count).unwrap()
}

/// Each run's configuration and what it replayed, in run order.
fn replayed(result: &BenchResult) -> Vec<(ExecMode, IoDesign, usize, usize, u64, u64, u64)> {
    result
        .runs
        .iter()
        .map(|r| (r.mode, r.design, r.threads, r.batch, r.blocks, r.txs, r.gas))
        .collect()
}

/// The gas and transactions of the dump's blocks.
fn chain_totals(dump: &DumpReader) -> (u64, u64) {
    let (mut gas, mut txs) = (0, 0);
    for record in dump.records() {
        let record = record.unwrap();
        gas += record.gas_used();
        txs += record.tx_count() as u64;
    }
    (gas, txs)
}

/// A bench over reth's MDBX at `dir`/reth, whose state is at block `genesis`, is refused unless
/// the state is trusted.
fn assert_refused_without_trust(config: &ChainConfig, dir: &Path, genesis: u64) {
    let dump_dir = dir.join("dump");
    let mdbx_spec = StateSpec::Mdbx(dir.join("reth"));
    // reth's MDBX records no chain id, so nothing shows the dump builds on it: refused before any
    // run, naming the database, unless trusted.
    let err = run_bench(config, &dump_dir, &mdbx_spec, &matrix(), |_| {}).unwrap_err();
    match &err {
        BenchError::Engine(EngineError::StateWithoutIdentity {
            state,
            block,
            no_chain_id: true,
            ..
        }) => {
            assert_eq!(Path::new(state), dir.join("reth").join("db"));
            assert_eq!(*block, genesis);
        }
        other => panic!("expected StateWithoutIdentity, got {other:?}"),
    }
    assert!(err.to_string().contains("--trust-state"), "{err}");
}

/// Each run over MDBX replayed and verified the whole chain (`gas`, `txs`), its prefetch timed
/// where it has one.
fn assert_each_run_replayed_the_chain(over_mdbx: &BenchResult, gas: u64, txs: u64) {
    // A run is only recorded once every block of it verified (BAL writes, gas, receipts root), so
    // each one covering the whole chain's blocks, transactions and header gas verified all of it.
    for r in &over_mdbx.runs {
        assert_eq!(r.store, StoreKind::Mdbx, "{}", r.label());
        assert_eq!(
            (r.blocks, r.txs, r.gas),
            (BLOCKS, txs, gas),
            "{}",
            r.label()
        );
        assert!(r.throughput.mgas_per_s > 0.0, "{}", r.label());
        assert_eq!(r.batches.len(), BLOCKS.div_ceil(r.batch as u64) as usize);
        // MDBX is never written, so no run has a state size.
        assert!(r.batches.iter().all(|b| b.state_bytes.is_none()));
        // Only batched I/O prefetches before executing; its prefetch is part of the timed
        // execution with I/O, and the run's total is its batches' sum.
        let per_batch: f64 = r.batches.iter().map(|b| b.prefetch_s).sum();
        assert!(
            (r.timing.prefetch_s - per_batch).abs() < 1e-9,
            "{}",
            r.label()
        );
        if r.mode == ExecMode::Parallel && r.design == IoDesign::Batched {
            assert!(r.cache.keys_prefetched > 0, "{}", r.label());
            assert!(
                r.timing.prefetch_s > 0.0 && r.timing.prefetch_s < r.timing.exec_with_io_s,
                "{}: prefetch {} of {}",
                r.label(),
                r.timing.prefetch_s,
                r.timing.exec_with_io_s
            );
        } else {
            assert_eq!(r.timing.prefetch_s, 0.0, "{}", r.label());
        }
    }
}

/// reth's MDBX at `dir`/reth is still at `genesis`, and no clone was left next to it.
fn assert_the_database_is_untouched(dir: &Path, genesis: u64) {
    let mdbx_spec = StateSpec::Mdbx(dir.join("reth"));
    let db = RethDb::open(mdbx_spec.path()).unwrap();
    assert_eq!(
        MdbxStore::new(&db).unwrap().applied_block().unwrap(),
        Some(genesis)
    );
    drop(db);
    assert!(!dir.join("reth.bench-run").exists());
}

/// The tables name the backend measured, and each run's figures are as its end to end time
/// says.
fn assert_the_tables_name_mdbx(over_mdbx: &BenchResult, over_rocks: &BenchResult) {
    let tables = render_tables(over_mdbx);
    for text in [
        "over reth's MDBX read in place",
        "### Batch 1, parallel I/O (MDBX)",
        "### Batch 6, full I/O (MDBX)",
        "| Batch | Threads | parallel | full | batched | sequential (MDBX) | parallel in memory |",
        "- batch 6, 1 thread: parallel / full = ",
        "- batch 6, 2 threads: batched / full = ",
        "- batch 6, 2 threads: parallel / batched = ",
        "- batch 6, each at its best worker count: parallel / batched = ",
    ] {
        assert!(tables.contains(text), "tables lack {text:?}:\n{tables}");
    }
    // Each design at its best worker count, from the runs themselves.
    let best = |design| {
        over_mdbx
            .runs
            .iter()
            .filter(|r| r.mode == ExecMode::Parallel && r.design == design && r.batch == 6)
            .max_by(|a, b| a.throughput.mgas_per_s.total_cmp(&b.throughput.mgas_per_s))
            .unwrap()
    };
    let (parallel, batched) = (best(IoDesign::Parallel), best(IoDesign::Batched));
    let threads = |t: usize| {
        if t == 1 {
            "1 thread".to_string()
        } else {
            format!("{t} threads")
        }
    };
    let line = format!(
        "- batch 6, each at its best worker count: parallel / batched = {:.2} ({:.1} MGas/s with {}, against {:.1} with {})",
        parallel.throughput.mgas_per_s / batched.throughput.mgas_per_s,
        parallel.throughput.mgas_per_s,
        threads(parallel.threads),
        batched.throughput.mgas_per_s,
        threads(batched.threads)
    );
    assert!(tables.contains(&line), "tables lack {line:?}:\n{tables}");
    assert!(!tables.contains("RocksDB"), "{tables}");
    assert!(tables.contains("### Two numbers: execution with I/O, and end to end (MDBX)"));
    for r in over_mdbx.runs.iter().chain(&over_rocks.runs) {
        // End to end counts everything execution with I/O counts, and more.
        assert!(
            r.throughput.end_to_end_mgas_per_s > 0.0
                && r.throughput.end_to_end_mgas_per_s <= r.throughput.mgas_per_s,
            "{}: {} end to end, {} with I/O",
            r.label(),
            r.throughput.end_to_end_mgas_per_s,
            r.throughput.mgas_per_s
        );
    }
    assert!(render_tables(over_rocks).contains("### Batch 1, parallel I/O (RocksDB)"));
}

/// The JSON, written in `dir`, names the store "mdbx" and reads back.
fn assert_the_json_reads_back(dir: &Path, over_mdbx: &BenchResult) {
    let json = dir.join("bench.json");
    over_mdbx.write_json(&json).unwrap();
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.contains("\"store\": \"mdbx\""));
    let back: BenchResult = serde_json::from_str(&text).unwrap();
    // (Throughputs only to serde_json's float precision, so compare what was replayed.)
    assert_eq!(replayed(&back), replayed(over_mdbx));
    assert!(back.runs.iter().all(|r| r.store == StoreKind::Mdbx));
}

#[test]
fn the_matrix_over_mdbx_replays_like_over_rocksdb() {
    let tmp = tempfile::tempdir().unwrap();
    let (config, genesis) = chain(tmp.path());
    let dump_dir = tmp.path().join("dump");
    let dump = DumpReader::open(&dump_dir).unwrap();
    let (gas, txs) = chain_totals(&dump);
    assert!(gas > 0 && txs > 0);

    let mdbx_spec = StateSpec::Mdbx(tmp.path().join("reth"));
    assert_refused_without_trust(&config, tmp.path(), genesis);
    let trusted = BenchMatrix {
        trust_state: true,
        ..matrix()
    };
    let mut reported = 0;
    let over_mdbx = run_bench(&config, &dump_dir, &mdbx_spec, &trusted, |_| reported += 1).unwrap();
    let over_rocks = run_bench(
        &config,
        &dump_dir,
        &StateSpec::RocksDb(tmp.path().join("state")),
        &matrix(),
        |_| {},
    )
    .unwrap();

    // Per batch size: the sequential baseline, then 3 designs x 2 thread counts.
    assert_eq!(over_mdbx.runs.len(), 2 * (1 + 3 * 2));
    assert_eq!(reported, over_mdbx.runs.len());
    assert_eq!(over_mdbx.blocks, BLOCKS);
    assert_each_run_replayed_the_chain(&over_mdbx, gas, txs);
    assert!(
        over_rocks
            .runs
            .iter()
            .all(|r| r.store == StoreKind::Rocksdb)
    );
    assert_eq!(replayed(&over_mdbx), replayed(&over_rocks));
    assert_eq!(over_mdbx.bal_sizes, over_rocks.bal_sizes);
    assert_eq!(over_mdbx.disk_store(), StoreKind::Mdbx);

    assert_the_database_is_untouched(tmp.path(), genesis);
    assert_the_tables_name_mdbx(&over_mdbx, &over_rocks);
    assert_the_json_reads_back(tmp.path(), &over_mdbx);
}

#[test]
fn what_mdbx_cannot_do_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (config, _) = chain(tmp.path());
    let dump_dir = tmp.path().join("dump");
    let mdbx = StateSpec::Mdbx(tmp.path().join("reth"));

    let in_memory = BenchMatrix {
        in_memory: true,
        ..matrix()
    };
    let err = run_bench(&config, &dump_dir, &mdbx, &in_memory, |_| {}).unwrap_err();
    assert!(matches!(err, BenchError::NotOverMdbx { .. }), "{err}");
    assert!(err.to_string().contains("in-memory baseline"), "{err}");

    let direct = BenchMatrix {
        direct_io: true,
        ..matrix()
    };
    let err = run_bench(&config, &dump_dir, &mdbx, &direct, |_| {}).unwrap_err();
    assert!(err.to_string().contains("direct I/O"), "{err}");

    // A directory that holds no MDBX database names itself.
    let missing = StateSpec::Mdbx(tmp.path().join("state"));
    let err = run_bench(&config, &dump_dir, &missing, &matrix(), |_| {}).unwrap_err();
    assert!(matches!(err, BenchError::Mdbx { .. }), "{err}");
    assert!(err.to_string().contains("state"), "{err}");
}
