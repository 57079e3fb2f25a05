//! A generated chain replayed in mega-block batches: every mode, design, batch size and thread count
//! must leave exactly the state sequential execution leaves, and a tampered BAL must be caught.

use bal_replay_dump::{DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_engine::{
    EngineError, ExecMode, IoDesign, ReplayOptions, ScratchState, TaskOrder, replay,
};
use bal_replay_exec::{ChainConfig, ExecError};
use bal_replay_state::{RocksOptions, RocksStore, StateReader};
use bal_replay_synth::{GeneratorConfig, generate};

fn small_chain(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let config = GeneratorConfig {
        blocks: 8,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 7,
        gas_per_block: 6_000_000,
        ..GeneratorConfig::default()
    };
    let dump = dir.join("dump");
    let state = dir.join("state");
    generate(&config, &dump, &state, None).expect("generate");
    (dump, state)
}

#[test]
fn every_mode_leaves_the_sequential_state() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = small_chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let config = ChainConfig::mainnet();
    let last = dump.manifest().last_block.unwrap();
    let runs = [
        (ExecMode::Sequential, IoDesign::Parallel, 1, 1),
        (ExecMode::Sequential, IoDesign::Full, 1, 4),
        (ExecMode::Parallel, IoDesign::Full, 2, 8),
        (ExecMode::Parallel, IoDesign::Batched, 3, 3),
        (ExecMode::Parallel, IoDesign::Parallel, 2, 1),
        (ExecMode::Parallel, IoDesign::Parallel, 4, 8),
        (ExecMode::Parallel, IoDesign::Hybrid, 2, 5),
    ];
    let mut digests = Vec::new();
    for (i, (mode, design, threads, batch)) in runs.into_iter().enumerate() {
        let work = ScratchState::checkpoint_of(&pristine, &format!("run-{i}")).unwrap();
        let store = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
        let options = ReplayOptions {
            mode,
            threads,
            batch,
            design,
            order: if i % 2 == 0 {
                TaskOrder::BlockOrder
            } else {
                TaskOrder::LongestFirst
            },
            io_threads: 2,
            ..ReplayOptions::default()
        };
        let mut batches = 0;
        let report = replay(&config, &dump, &store, &options, |_| batches += 1)
            .unwrap_or_else(|e| panic!("{mode:?}/{design} t{threads} b{batch}: {e}"));
        assert_eq!(report.blocks, 8);
        assert_eq!(batches, 8usize.div_ceil(batch));
        assert_eq!(
            store.applied_block().unwrap(),
            Some(last),
            "applied height after the last batch"
        );
        digests.push(store.content_digest().unwrap());
    }
    assert!(
        digests.iter().all(|d| *d == digests[0]),
        "final states differ: {digests:?}"
    );
    // The pristine state was never written.
    let pristine_store = RocksStore::open(&pristine, &RocksOptions::default()).unwrap();
    assert_eq!(
        pristine_store.applied_block().unwrap(),
        Some(dump.manifest().first_block.unwrap() - 1)
    );
}

#[test]
fn a_tampered_bal_stops_the_replay_and_leaves_the_state_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = small_chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    // Copy the dump with one balance write of block 3 changed.
    let bad_dir = tmp.path().join("bad");
    let mut writer = DumpWriter::create(
        &bad_dir,
        DumpMeta {
            chain_id: 1,
            chained: true,
            source: "tampered".into(),
        },
        WriterOptions::default(),
    )
    .unwrap();
    let mut target = None;
    for (i, record) in dump.records().enumerate() {
        let mut record = record.unwrap();
        if i == 3 {
            let number = record.number();
            let account = record
                .bal
                .iter_mut()
                .find(|a| a.balance_changes.len() > 1)
                .unwrap();
            account.balance_changes[1].post_balance += alloy_primitives::U256::from(1);
            target = Some((number, account.address));
        }
        writer.append(&record).unwrap();
    }
    writer.finish().unwrap();
    let (bad_block, bad_account) = target.unwrap();
    let bad = DumpReader::open(&bad_dir).unwrap();
    let config = ChainConfig::mainnet();
    for (design, threads) in [
        (IoDesign::Full, 1),
        (IoDesign::Parallel, 1),
        (IoDesign::Hybrid, 2),
    ] {
        let work = ScratchState::checkpoint_of(&pristine, &format!("work-{design}")).unwrap();
        let store = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
        let options = ReplayOptions {
            mode: ExecMode::Parallel,
            threads,
            batch: 2,
            design,
            io_threads: 2,
            ..ReplayOptions::default()
        };
        let err =
            replay(&config, &bad, &store, &options, |_| {}).expect_err("a tampered BAL must fail");
        match &err {
            // One worker in block order reaches the tampered index before any task that reads its
            // value, so the error names the tampered account exactly.
            EngineError::Exec(ExecError::BalMismatch { block, address, .. }) if threads == 1 => {
                assert_eq!((*block, *address), (bad_block, bad_account), "{err}");
            }
            // With more workers, a later transaction reading the wrong balance may fail first.
            EngineError::Exec(
                ExecError::BalMismatch { block, .. } | ExecError::Execution { block, .. },
            ) if threads > 1 => {
                assert_eq!(*block, bad_block, "{err}")
            }
            other => panic!("{design}: unexpected error {other}"),
        }
        // Batches before the bad one committed; the bad batch did not.
        let first = dump.manifest().first_block.unwrap();
        let applied = store.applied_block().unwrap().unwrap();
        assert!(
            applied < bad_block,
            "the failing batch must not commit (applied {applied}, bad {bad_block})"
        );
        assert_eq!((applied + 1 - first) % 2, 0, "only whole batches commit");
    }
}
