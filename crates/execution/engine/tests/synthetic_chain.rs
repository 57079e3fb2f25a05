//! A generated chain replayed in mega-block batches: every mode, design, batch size and thread count
//! must leave exactly the state sequential execution leaves, and a tampered BAL must be caught.

use bal_replay_dump::{BlockRecord, DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_engine::{EngineError, ExecMode, IoDesign, ReplayOptions, replay};
use bal_replay_executor::{ChainConfig, ExecError};
use bal_replay_rocks::ScratchState;
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::StateReader;
use bal_replay_synth::{GeneratorConfig, generate};
use std::num::NonZeroUsize;

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
        (ExecMode::Parallel, IoDesign::FullVerify, 2, 4),
        (ExecMode::Sequential, IoDesign::FullVerify, 1, 3),
    ];
    let mut digests = Vec::new();
    for (i, (mode, design, threads, batch)) in runs.into_iter().enumerate() {
        let work = ScratchState::checkpoint_of(&pristine, &format!("run-{i}")).unwrap();
        let store = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
        let options = ReplayOptions {
            mode,
            threads: NonZeroUsize::new(threads).unwrap(),
            batch: NonZeroUsize::new(batch).unwrap(),
            design,
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let mut batches = 0;
        let report = replay(&config, &dump, &store, &options, |_| batches += 1)
            .unwrap_or_else(|e| panic!("{mode:?}/{design} t{threads} b{batch}: {e}"));
        assert_eq!(report.blocks, 8);
        assert_eq!(batches, 8usize.div_ceil(batch));
        // Reading the dump is timed apart, batch by batch, and is part of the whole replay.
        assert!(
            report.read_dump > std::time::Duration::ZERO && report.read_dump < report.wall,
            "{:?} of {:?}",
            report.read_dump,
            report.wall
        );
        assert_eq!(
            report
                .batches
                .iter()
                .map(|b| b.read_dump)
                .sum::<std::time::Duration>(),
            report.read_dump
        );
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
            schedule: None,
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
            threads: NonZeroUsize::new(threads).unwrap(),
            batch: NonZeroUsize::new(2).unwrap(),
            design,
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let err =
            replay(&config, &bad, &store, &options, |_| {}).expect_err("a tampered BAL must fail");
        // Whatever the number of workers, the lowest failing task is reported: the tampered
        // index, not a later transaction that read the tampered balance.
        match &err {
            EngineError::Exec(ExecError::BalMismatch { block, address, .. }) => {
                assert_eq!((*block, *address), (bad_block, bad_account), "{err}");
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

/// A copy of `dump` with `edit` applied to each record (by position), as a chained dump at `out`.
fn edited_dump(
    dump: &DumpReader,
    out: &std::path::Path,
    mut edit: impl FnMut(usize, &mut bal_replay_dump::BlockRecord),
) -> DumpReader {
    let mut writer = DumpWriter::create(
        out,
        DumpMeta {
            chain_id: 1,
            chained: true,
            source: "tampered".into(),
            schedule: None,
        },
        WriterOptions::default(),
    )
    .unwrap();
    for (i, record) in dump.records().enumerate() {
        let mut record = record.unwrap();
        edit(i, &mut record);
        writer.append(&record).unwrap();
    }
    writer.finish().unwrap();
    DumpReader::open(out).unwrap()
}

/// A mismatch a run must report: its block, BAL index, account and slot.
type Mismatch = (u64, u64, alloy_primitives::Address, alloy_primitives::U256);

/// Tampers with the slot write of the lowest transaction of `record` that writes storage, returning
/// the mismatch that makes.
fn tamper_lowest_slot_write(record: &mut BlockRecord) -> Mismatch {
    let n = record.tx_count() as u64;
    let is_tx = |index: u64| (1..=n).contains(&index);
    let (a, s, c) = record
        .bal
        .iter()
        .enumerate()
        .flat_map(|(a, acc)| {
            acc.storage_changes
                .iter()
                .enumerate()
                .flat_map(move |(s, slot)| {
                    slot.changes
                        .iter()
                        .enumerate()
                        .map(move |(c, ch)| (ch.block_access_index.0, a, s, c))
                })
        })
        .filter(|(index, ..)| is_tx(*index))
        .min()
        .map(|(_, a, s, c)| (a, s, c))
        .expect("block 2 writes storage in a transaction");
    let number = record.number();
    let account = &mut record.bal[a];
    let change = &mut account.storage_changes[s].changes[c];
    change.new_value += alloy_primitives::U256::from(1);
    let index = change.block_access_index.0;
    (
        number,
        index,
        account.address,
        account.storage_changes[s].slot,
    )
}

/// Tampers with a balance write of a transaction of `record` later than BAL index `after`,
/// returning its block and BAL index.
fn tamper_later_balance_write(record: &mut BlockRecord, after: u64) -> (u64, u64) {
    let n = record.tx_count() as u64;
    let is_tx = |index: u64| (1..=n).contains(&index);
    let (a, c) = record
        .bal
        .iter()
        .enumerate()
        .flat_map(|(a, acc)| {
            acc.balance_changes
                .iter()
                .enumerate()
                .map(move |(c, ch)| (ch.block_access_index.0, a, c))
        })
        .filter(|(later, ..)| is_tx(*later) && *later > after)
        .max()
        .map(|(_, a, c)| (a, c))
        .expect("a later transaction of block 2 writes a balance");
    record.bal[a].balance_changes[c].post_balance += alloy_primitives::U256::from(1);
    (
        record.number(),
        record.bal[a].balance_changes[c].block_access_index.0,
    )
}

/// Tampers with a balance write of the first transaction of `record`, returning its block and BAL
/// index.
fn tamper_first_tx_balance_write(record: &mut BlockRecord) -> (u64, u64) {
    let change = record
        .bal
        .iter_mut()
        .flat_map(|a| a.balance_changes.iter_mut())
        .find(|c| c.block_access_index.0 == 1)
        .expect("block 3's first transaction writes a balance");
    change.post_balance += alloy_primitives::U256::from(1);
    (record.number(), 1)
}

/// Replays `bad` once in parallel with `options` over `store`, which must fail on `lowest`,
/// naming its transaction, and commit nothing (the store stays at `before`).
fn assert_lowest_mismatch_reported(
    bad: &DumpReader,
    store: &RocksStore,
    before: Option<u64>,
    options: &ReplayOptions,
    lowest: Mismatch,
) {
    let (block, index, address, slot) = lowest;
    let (design, threads) = (options.design, options.threads);
    let err = replay(&ChainConfig::mainnet(), bad, store, options, |_| {})
        .expect_err("a tampered BAL must fail");
    let what = format!("{design} t{threads}: {err}");
    match &err {
        EngineError::Exec(ExecError::BalMismatch {
            block: b,
            bal_index,
            address: a,
            slot: s,
            ..
        }) => {
            assert_eq!(
                (*b, *bal_index, *a, *s),
                (block, index, address, Some(slot)),
                "{what}"
            );
        }
        other => panic!("unexpected error {other} ({what})"),
    }
    assert!(
        err.to_string()
            .contains(&format!("tx {} (BAL index {index})", index - 1)),
        "{what}"
    );
    // The failing batch is the first: nothing was committed.
    assert_eq!(store.applied_block().unwrap(), before, "{what}");
}

/// Three mismatches in one batch: a slot write of one transaction, a balance write of a later
/// transaction of the same block, and a balance write in a later block. Every parallel run, with
/// any number of workers, must report the first: its block, its transaction index, its account
/// and its slot.
#[test]
fn with_many_workers_the_lowest_mismatch_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = small_chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let mut lowest = None;
    let mut others = Vec::new();
    let bad = edited_dump(&dump, &tmp.path().join("bad"), |i, record| {
        if i == 2 {
            let mismatch = tamper_lowest_slot_write(record);
            lowest = Some(mismatch);
            others.push(tamper_later_balance_write(record, mismatch.1));
        }
        if i == 3 {
            others.push(tamper_first_tx_balance_write(record));
        }
    });
    let lowest = lowest.unwrap();
    let (block, index, ..) = lowest;
    assert_eq!(others.len(), 2, "three mismatches injected");
    assert!(
        others.iter().all(|o| *o > (block, index)),
        "{others:?} after {:?}",
        (block, index)
    );

    let work = ScratchState::checkpoint_of(&pristine, "lowest-mismatch").unwrap();
    let store = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
    let before = store.applied_block().unwrap();
    let mut runs = 0;
    for design in [IoDesign::Full, IoDesign::Parallel] {
        for threads in [2, 3, 4] {
            for _ in 0..4 {
                let options = ReplayOptions {
                    mode: ExecMode::Parallel,
                    threads: NonZeroUsize::new(threads).unwrap(),
                    // Blocks 0..=3 in one batch: all three mismatches run at once.
                    batch: NonZeroUsize::new(4).unwrap(),
                    design,
                    io_threads: NonZeroUsize::new(2).unwrap(),
                    ..ReplayOptions::default()
                };
                assert_lowest_mismatch_reported(&bad, &store, before, &options, lowest);
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 24);
}

/// The verifying full design reads every pre-value a record claims from the state: a claimed value
/// the state does not hold stops the batch, naming the record that first claimed it, the account
/// and the slot, and nothing of the batch is committed.
#[test]
fn full_verify_catches_a_claimed_value_the_state_does_not_hold() {
    use alloy_primitives::U256;
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = small_chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let records: Vec<_> = dump.records().map(Result::unwrap).collect();
    // A slot record 2 claims first (records 0 and 1 do not name it).
    let earlier: std::collections::HashSet<_> = records[..2]
        .iter()
        .flat_map(|r| r.pre_state.storage.iter().map(|s| (s.address, s.slot)))
        .collect();
    let target = records[2]
        .pre_state
        .storage
        .iter()
        .find(|s| !earlier.contains(&(s.address, s.slot)))
        .map(|s| (s.address, s.slot, s.value))
        .expect("record 2 claims a slot of its own");
    let bad = edited_dump(&dump, &tmp.path().join("bad"), |i, record| {
        if i == 2 {
            let claim = record
                .pre_state
                .storage
                .iter_mut()
                .find(|s| (s.address, s.slot) == (target.0, target.1))
                .unwrap();
            claim.value += U256::from(1);
        }
    });
    let config = ChainConfig::mainnet();
    for (mode, threads) in [(ExecMode::Parallel, 2), (ExecMode::Sequential, 1)] {
        let work = ScratchState::checkpoint_of(&pristine, &format!("verify-{mode:?}")).unwrap();
        let store = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
        let before = store.applied_block().unwrap();
        let options = ReplayOptions {
            mode,
            threads: NonZeroUsize::new(threads).unwrap(),
            batch: NonZeroUsize::new(4).unwrap(),
            design: IoDesign::FullVerify,
            io_threads: NonZeroUsize::new(3).unwrap(),
            ..ReplayOptions::default()
        };
        let err = replay(&config, &bad, &store, &options, |_| {})
            .expect_err("a wrong claimed value must fail");
        match &err {
            EngineError::PreValueMismatch {
                block,
                address,
                slot,
                claimed,
                state,
                ..
            } => {
                assert_eq!(*block, records[2].number(), "{err}");
                assert_eq!((*address, *slot), (target.0, Some(target.1)), "{err}");
                assert_eq!(claimed, &format!("{:?}", target.2 + U256::from(1)));
                assert_eq!(state, &format!("{:?}", target.2));
            }
            other => panic!("{mode:?}: unexpected error {other}"),
        }
        assert!(err.is_verification_failure());
        assert_eq!(
            store.applied_block().unwrap(),
            before,
            "the batch must not commit"
        );
    }
}

/// A chain over a state with cold entries (written by SST ingestion): its transactions read cold
/// accounts and token balances the generator put in its own state only when first touched, and
/// every design must replay it over the written state exactly as sequential execution does.
#[test]
fn a_chain_over_a_cold_state_replays_in_every_design() {
    let tmp = tempfile::tempdir().unwrap();
    let config = GeneratorConfig {
        blocks: 6,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 11,
        gas_per_block: 6_000_000,
        state_entries: 300_000,
        ..GeneratorConfig::default()
    };
    let (dump_dir, pristine) = (tmp.path().join("dump"), tmp.path().join("state"));
    let chain = generate(&config, &dump_dir, &pristine, None).expect("generate");
    let (hot, _) = bal_replay_synth::generate_in_memory(&GeneratorConfig {
        state_entries: 0,
        ..config.clone()
    })
    .unwrap();
    let hot_entries = (hot.accounts.len() + hot.storage.len()) as u64;
    assert_eq!(chain.cold_entries, 300_000 - hot_entries);
    let hot_accounts: std::collections::HashSet<_> =
        hot.accounts.iter().map(|(address, _)| *address).collect();
    let dump = DumpReader::open(&dump_dir).unwrap();
    let cold_read = dump
        .records()
        .map(Result::unwrap)
        .flat_map(|r| r.pre_state.accounts)
        .filter(|a| !hot_accounts.contains(&a.address))
        .count();
    assert!(cold_read > 20, "only {cold_read} cold accounts read");

    let config = ChainConfig::mainnet();
    let mut digests = Vec::new();
    for (i, (mode, design)) in [
        (ExecMode::Sequential, IoDesign::Parallel),
        (ExecMode::Parallel, IoDesign::Parallel),
        (ExecMode::Parallel, IoDesign::Batched),
        (ExecMode::Parallel, IoDesign::FullVerify),
    ]
    .into_iter()
    .enumerate()
    {
        let work = ScratchState::checkpoint_of(&pristine, &format!("cold-{i}")).unwrap();
        let store = RocksStore::open(work.path(), &RocksOptions::default()).unwrap();
        let options = ReplayOptions {
            mode,
            design,
            threads: NonZeroUsize::new(2).unwrap(),
            batch: NonZeroUsize::new(3).unwrap(),
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let report = replay(&config, &dump, &store, &options, |_| {})
            .unwrap_or_else(|e| panic!("{mode:?}/{design}: {e}"));
        assert_eq!(report.blocks, 6);
        digests.push(store.content_digest().unwrap());
    }
    assert!(digests.iter().all(|d| *d == digests[0]), "{digests:?}");
}

/// A RocksDB state whose reads each take a millisecond longer: slower than execution from the
/// BAL's values, as a disk is.
struct SlowReads(RocksStore);

impl SlowReads {
    fn wait() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

impl StateReader for SlowReads {
    fn account(
        &self,
        address: alloy_primitives::Address,
    ) -> Result<Option<bal_replay_state::FlatAccount>, bal_replay_state::StateError> {
        Self::wait();
        self.0.account(address)
    }
    fn storage(
        &self,
        address: alloy_primitives::Address,
        slot: alloy_primitives::U256,
    ) -> Result<alloy_primitives::U256, bal_replay_state::StateError> {
        Self::wait();
        self.0.storage(address, slot)
    }
    fn code(
        &self,
        hash: alloy_primitives::B256,
    ) -> Result<Option<alloy_primitives::Bytes>, bal_replay_state::StateError> {
        self.0.code(hash)
    }
    fn block_hash(
        &self,
        number: u64,
    ) -> Result<Option<alloy_primitives::B256>, bal_replay_state::StateError> {
        self.0.block_hash(number)
    }
    fn applied_block(&self) -> Result<Option<u64>, bal_replay_state::StateError> {
        self.0.applied_block()
    }
    fn applied_block_hash(
        &self,
    ) -> Result<Option<alloy_primitives::B256>, bal_replay_state::StateError> {
        self.0.applied_block_hash()
    }
    fn chain_id(&self) -> Result<Option<u64>, bal_replay_state::StateError> {
        self.0.chain_id()
    }
}

impl bal_replay_state::StateWriter for SlowReads {
    fn commit_block(
        &self,
        changes: &bal_replay_state::StateChanges,
        block: bal_replay_state::AppliedBlock,
    ) -> Result<(), bal_replay_state::StateError> {
        self.0.commit_block(changes, block)
    }
}

/// A validating node has a batch only once the BAL's claimed values are verified: full-verify's
/// batch time covers the verifier's reads, not execution's alone (which reads no state).
#[test]
fn full_verify_times_each_batch_until_its_claims_are_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = small_chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let work = ScratchState::checkpoint_of(&pristine, "slow").unwrap();
    let store = SlowReads(RocksStore::open(work.path(), &RocksOptions::default()).unwrap());
    let options = ReplayOptions {
        mode: ExecMode::Parallel,
        design: IoDesign::FullVerify,
        threads: NonZeroUsize::new(2).unwrap(),
        batch: NonZeroUsize::new(4).unwrap(),
        io_threads: NonZeroUsize::new(1).unwrap(),
        ..ReplayOptions::default()
    };
    let report = replay(&ChainConfig::mainnet(), &dump, &store, &options, |_| {}).unwrap();
    assert_eq!(report.batches.len(), 2);
    for batch in &report.batches {
        let verifier = batch
            .prefetch_profile
            .as_ref()
            .expect("the verifier's profile");
        let verified = std::time::Duration::from_nanos(verifier.wall_ns);
        // A millisecond per key read, over two thousand keys: far slower than execution.
        assert!(verifier.keys > 1_000, "{} keys verified", verifier.keys);
        assert!(
            verified > std::time::Duration::from_millis(200),
            "{verified:?}"
        );
        assert!(
            batch.exec >= verified,
            "blocks {}..={}: {:?} timed, the verifier took {verified:?}",
            batch.first_block,
            batch.last_block,
            batch.exec
        );
    }
}
