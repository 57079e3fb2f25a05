//! The dump follows a chain the way the ExEx sees it: commits, restarts, reverts, reorgs, bad
//! blocks, ranges, and historical range dumps, over a real (synthetic) chain re-executed for real.

#![allow(clippy::result_large_err)]

use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{Address, B256, Bytes};
use bal_replay_dump::{BlockHashEntry, BlockRecord, DumpError, DumpReader};
use bal_replay_executor::{ChainConfig, ExecOptions, execute_block};
use bal_replay_exex::{
    BlockRange, ChainBlock, ChainDumper, CommitOutcome, ExexError, RecordError, dump_range,
    last_block_hashes, record_block,
};
use bal_replay_state::{MemStore, StateDatabase, StateWriter};
use bal_replay_synth::{GeneratorConfig, generate_in_memory};
use std::{
    collections::HashMap,
    convert::Infallible,
    path::Path,
    sync::{Arc, OnceLock},
};

#[derive(Debug, Clone)]
struct TestBlock {
    block: Block<TxEnvelope>,
    senders: Vec<Address>,
}

impl ChainBlock for TestBlock {
    fn number(&self) -> u64 {
        self.block.header.number
    }
    fn hash(&self) -> B256 {
        self.block.header.hash_slow()
    }
    fn parent_hash(&self) -> B256 {
        self.block.header.parent_hash
    }
}

/// A node's view: every block it knows (both branches), the post-state of each by hash, and the
/// hashes before the first generated block.
struct Node {
    /// Branch A as the generator made it (records to compare with).
    expected: Vec<BlockRecord>,
    a: Vec<TestBlock>,
    /// Branch B: A's blocks from `FORK + 1` on, with other extra data (so other hashes) and
    /// relinked parents. Same transactions, so execution is valid and the BALs equal A's.
    b: Vec<TestBlock>,
    states: HashMap<B256, Arc<MemStore>>,
    pre_hashes: Vec<BlockHashEntry>,
}

/// Index into a branch of the block the branches fork after.
const FORK: usize = 2;

fn node() -> &'static Node {
    static NODE: OnceLock<Node> = OnceLock::new();
    NODE.get_or_init(|| {
        let config = GeneratorConfig {
            seed: 5,
            accounts: 600,
            tokens: 4,
            pools: 3,
            nfts: 2,
            holders_per_token: 100,
            blocks: 6,
            gas_per_block: 2_000_000,
            ..GeneratorConfig::default()
        };
        let (genesis, expected) = generate_in_memory(&config).unwrap();
        let first = expected[0].number();
        let genesis_store = MemStore::from_changes(&genesis, first - 1);
        let mut states = HashMap::new();
        states.insert(
            expected[0].block.header.parent_hash,
            Arc::new(genesis_store),
        );
        let a: Vec<TestBlock> = expected
            .iter()
            .map(|r| TestBlock {
                block: r.block.clone(),
                senders: r.senders.clone(),
            })
            .collect();
        let mut b: Vec<TestBlock> = Vec::new();
        let mut parent = a[FORK].hash();
        for block in &a[FORK + 1..] {
            let mut block = block.clone();
            block.block.header.extra_data = Bytes::from_static(b"branch b");
            block.block.header.parent_hash = parent;
            parent = block.hash();
            b.push(block);
        }
        for block in a.iter().chain(&b) {
            let parent = states[&block.parent_hash()].clone();
            let output = execute_block(
                &ChainConfig::mainnet(),
                StateDatabase::new(parent.as_ref()),
                &block.block,
                &block.senders,
                ExecOptions::default(),
            )
            .unwrap();
            let post = MemStore::from_contents(&parent.dump_all().unwrap()).unwrap();
            post.commit(&output.changes, block.number()).unwrap();
            states.insert(block.hash(), Arc::new(post));
        }
        let pre_hashes = expected[0].block_hashes.clone();
        Node {
            expected,
            a,
            b,
            states,
            pre_hashes,
        }
    })
}

impl Node {
    /// The record the ExEx makes of `block` on `branch`: re-executed over its parent's state, with
    /// the hashes of `branch` before it.
    fn record(&self, branch: &[TestBlock], block: &TestBlock) -> Result<BlockRecord, RecordError> {
        let hashes: HashMap<u64, B256> = self
            .pre_hashes
            .iter()
            .map(|e| (e.number, e.hash))
            .chain(branch.iter().map(|b| (b.number(), b.hash())))
            .collect();
        let block_hashes = last_block_hashes(block.number(), |n| {
            Ok::<_, Infallible>(hashes.get(&n).copied())
        })?;
        record_block(
            &ChainConfig::mainnet(),
            StateDatabase::new(self.states[&block.parent_hash()].as_ref()),
            block.block.clone(),
            block.senders.clone(),
            block_hashes,
            None,
        )
    }

    /// Branch B as the node sees it after the reorg: A up to the fork, then B.
    fn branch_b(&self) -> Vec<TestBlock> {
        self.a[..=FORK].iter().chain(&self.b).cloned().collect()
    }
}

fn dumped(dir: &Path) -> Vec<BlockRecord> {
    DumpReader::open(dir)
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn commit(
    dumper: &mut ChainDumper,
    branch: &[TestBlock],
    blocks: &[TestBlock],
) -> Result<CommitOutcome, ExexError> {
    let node = node();
    dumper.commit(blocks, |block| node.record(branch, block))
}

#[test]
fn committed_blocks_are_dumped_exactly_and_a_restart_resumes_from_the_last_durable_one() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    assert_eq!(dumper.last_dumped(), None);
    let outcome = commit(&mut dumper, &node.a, &node.a[..3]).unwrap();
    assert_eq!(
        outcome,
        CommitOutcome {
            dumped: 3,
            already_dumped: 0,
            skipped: 0
        }
    );
    drop(dumper);

    // Restart: the head to resume notifications from is the last durable record.
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    assert_eq!(
        dumper.last_dumped(),
        Some((node.a[2].number(), node.a[2].hash()))
    );
    // A notification that overlaps what is dumped appends only the new blocks.
    let outcome = commit(&mut dumper, &node.a, &node.a[2..]).unwrap();
    assert_eq!(
        outcome,
        CommitOutcome {
            dumped: 3,
            already_dumped: 1,
            skipped: 0
        }
    );

    // Re-execution gives exactly what the generator recorded: block, senders, BAL, pre-state and
    // the 256 hashes.
    assert_eq!(dumped(dir.path()), node.expected);
    // Opening for another chain is refused (once this writer has let go of the dump's lock).
    drop(dumper);
    let err = ChainDumper::open(dir.path(), 5, BlockRange::default()).unwrap_err();
    assert!(err.to_string().contains("chain 1"), "{err}");
}

#[test]
fn a_reorg_cuts_back_to_the_fork_point_then_dumps_the_new_branch() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    commit(&mut dumper, &node.a, &node.a).unwrap();

    // Committing a block of the other branch without reverting is refused, whether it replaces the
    // last block or skips ahead; nothing is written.
    let last_b = node.b.last().unwrap();
    assert!(matches!(
        commit(&mut dumper, &node.branch_b(), std::slice::from_ref(last_b)),
        Err(ExexError::Diverged { .. })
    ));
    assert_eq!(dumped(dir.path()).len(), node.a.len());

    // The reorg: revert A's blocks after the fork, commit B's.
    let removed = dumper.revert(node.b[0].number()).unwrap();
    assert_eq!(removed as usize, node.a.len() - FORK - 1);
    assert_eq!(
        dumper.last_dumped(),
        Some((node.a[FORK].number(), node.a[FORK].hash()))
    );
    let outcome = commit(&mut dumper, &node.branch_b(), &node.b).unwrap();
    assert_eq!(outcome.dumped as usize, node.b.len());

    let records = dumped(dir.path());
    let hashes: Vec<B256> = records.iter().map(|r| r.block.header.hash_slow()).collect();
    let expected: Vec<B256> = node.branch_b().iter().map(|b| b.hash()).collect();
    assert_eq!(hashes, expected);
    for (i, (record, a)) in records[FORK + 1..]
        .iter()
        .zip(&node.expected[FORK + 1..])
        .enumerate()
    {
        // Same transactions over the same state: same BAL and pre-state; past B's first block the
        // hash window holds B's hashes.
        assert_eq!(record.bal, a.bal);
        assert_eq!(record.pre_state, a.pre_state);
        assert_eq!(
            i == 0,
            record.block_hashes == a.block_hashes,
            "block {}",
            record.number()
        );
        assert_eq!(
            record.block_hashes.last().unwrap().hash,
            record.block.header.parent_hash
        );
    }
    // And it survives a restart.
    drop(dumper);
    let dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    assert_eq!(dumper.last_dumped().map(|l| l.1), expected.last().copied());
}

#[test]
fn a_block_that_skips_ahead_is_refused() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    commit(&mut dumper, &node.a, &node.a[..2]).unwrap();
    let err = commit(&mut dumper, &node.a, &node.a[3..4]).unwrap_err();
    assert!(
        matches!(err, ExexError::Unlinked { number, .. } if number == node.a[3].number()),
        "{err}"
    );
    assert_eq!(dumped(dir.path()).len(), 2);
}

#[test]
fn a_block_whose_header_disagrees_with_execution_is_never_dumped() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    commit(&mut dumper, &node.a, &node.a[..1]).unwrap();
    let mut bad = node.a[1].clone();
    bad.block.header.gas_used += 1;
    let err = commit(&mut dumper, &node.a, &[bad]).unwrap_err();
    match err {
        ExexError::Record {
            block,
            source: RecordError::Header(mismatch),
        } => {
            assert_eq!(block, node.a[1].number());
            assert_eq!(mismatch.field, "gasUsed");
            assert_eq!(mismatch.got, node.a[1].block.header.gas_used.to_string());
        }
        other => panic!("expected a header mismatch, got {other}"),
    }
    assert_eq!(dumped(dir.path()).len(), 1);
}

#[test]
fn blocks_outside_the_range_are_skipped() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let from = node.a[1].number();
    let to = node.a[3].number();
    let mut dumper = ChainDumper::open(
        dir.path(),
        1,
        BlockRange {
            from: Some(from),
            to: Some(to),
        },
    )
    .unwrap();
    let outcome = commit(&mut dumper, &node.a, &node.a).unwrap();
    assert_eq!(
        outcome,
        CommitOutcome {
            dumped: 3,
            already_dumped: 0,
            skipped: 3
        }
    );
    assert_eq!(dumped(dir.path()), node.expected[1..=3].to_vec());
}

#[test]
fn a_historical_range_dump_runs_in_parallel_appends_in_order_and_resumes() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let by_number: HashMap<u64, &TestBlock> = node.a.iter().map(|b| (b.number(), b)).collect();
    let record = |n: u64| node.record(&node.a, by_number[&n]);
    let first = node.a[0].number();
    let last = node.a.last().unwrap().number();

    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    assert_eq!(
        dump_range(&mut dumper, first, first + 2, 2, record, None).unwrap(),
        3
    );
    drop(dumper);
    // An interrupted run continues after its last durable block.
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    assert_eq!(
        dump_range(&mut dumper, first, last, 2, record, None).unwrap(),
        3
    );
    assert_eq!(
        dump_range(&mut dumper, first, last, 2, record, None).unwrap(),
        0
    );
    assert_eq!(dumped(dir.path()), node.expected);
    assert!(matches!(
        dump_range(&mut dumper, last, first, 2, record, None),
        Err(ExexError::BadRange { .. })
    ));
}

#[test]
fn a_range_ending_at_the_last_u64_block_is_dumped_and_ends() {
    // Two of the node's records renumbered as the last two blocks a u64 counts, still linked.
    let node = node();
    let mut below_max = node.expected[0].clone();
    below_max.block.header.number = u64::MAX - 1;
    let mut max = node.expected[1].clone();
    max.block.header.number = u64::MAX;
    max.block.header.parent_hash = below_max.block.header.hash_slow();
    let by_number: HashMap<u64, &BlockRecord> =
        [(u64::MAX - 1, &below_max), (u64::MAX, &max)].into();
    let record = |n: u64| Ok(by_number[&n].clone());
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();

    assert_eq!(
        dump_range(&mut dumper, u64::MAX - 1, u64::MAX - 1, 1, record, None).unwrap(),
        1
    );
    // The whole u64 range, resumed after the last durable block, with a progress bar.
    let bar = indicatif::ProgressBar::hidden();
    assert_eq!(
        dump_range(&mut dumper, 0, u64::MAX, 2, record, Some(&bar)).unwrap(),
        1
    );
    assert_eq!(bar.length(), Some(u64::MAX));
    assert_eq!(bar.position(), u64::MAX);
    assert_eq!(
        dump_range(&mut dumper, 0, u64::MAX, 2, record, None).unwrap(),
        0
    );
    assert_eq!(dumped(dir.path()), vec![below_max.clone(), max.clone()]);

    // Nothing can follow block u64::MAX, and it stays when it is canonical.
    assert!(matches!(
        dumper.append_record(below_max),
        Err(ExexError::Unlinked { last: u64::MAX, .. })
    ));
    let max_hash = max.block.header.hash_slow();
    assert_eq!(
        dumper
            .rewind_to_canonical(u64::MAX, |n| Ok::<_, Infallible>(
                (n == u64::MAX).then_some(max_hash)
            ))
            .unwrap(),
        0
    );
    assert_eq!(dumper.last_dumped(), Some((u64::MAX, max_hash)));
}

#[test]
fn at_start_the_dump_is_cut_back_to_what_the_node_has() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    commit(&mut dumper, &node.a, &node.a).unwrap();

    // An older block of the other branch is recognised as a divergence too, not as dumped.
    assert!(matches!(
        commit(&mut dumper, &node.branch_b(), &node.b[..1]),
        Err(ExexError::Diverged { number, .. }) if number == node.b[0].number()
    ));

    // The node persisted only up to A[3] before it stopped: blocks above are unknown to it.
    let known = node.a[3].number();
    let canonical = |n: u64| {
        Ok::<_, Infallible>(
            node.a
                .iter()
                .find(|b| b.number() == n && n <= known)
                .map(|b| b.hash()),
        )
    };
    assert_eq!(
        dumper.rewind_to_canonical(known, canonical).unwrap() as usize,
        node.a.len() - 4
    );
    assert_eq!(dumper.last_dumped(), Some((known, node.a[3].hash())));

    // The node is on branch B: cut back to the fork point.
    let branch = node.branch_b();
    let tip = branch.last().unwrap().number();
    let canonical =
        |n: u64| Ok::<_, Infallible>(branch.iter().find(|b| b.number() == n).map(|b| b.hash()));
    assert_eq!(dumper.rewind_to_canonical(tip, canonical).unwrap(), 1);
    assert_eq!(
        dumper.last_dumped(),
        Some((node.a[FORK].number(), node.a[FORK].hash()))
    );
    // Already on the node's chain: nothing to do.
    assert_eq!(dumper.rewind_to_canonical(tip, canonical).unwrap(), 0);

    // A node past the dump that has none of its blocks (another chain, or a fork below the dump):
    // an error naming both tips, and the dump is kept whole.
    let err = dumper
        .rewind_to_canonical(tip, |_| Ok::<_, Infallible>(None))
        .unwrap_err();
    match &err {
        ExexError::OffChain {
            dump_tip,
            dump_tip_hash,
            oldest,
            node_tip,
            ..
        } => {
            assert_eq!(*dump_tip, node.a[FORK].number());
            assert_eq!(*dump_tip_hash, node.a[FORK].hash());
            assert_eq!(*oldest, node.a[0].number());
            assert_eq!(*node_tip, tip);
        }
        other => panic!("expected OffChain, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );
    assert!(
        message.contains(&format!("node's canonical chain, whose tip is block {tip}")),
        "{message}"
    );
    assert_eq!(
        dumper.last_dumped(),
        Some((node.a[FORK].number(), node.a[FORK].hash()))
    );
    assert_eq!(dumped(dir.path()), node.expected[..=FORK].to_vec());
}

#[test]
fn a_node_behind_the_whole_dump_stops_the_dumper_and_the_dump_is_kept() {
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    commit(&mut dumper, &node.a, &node.a).unwrap();
    drop(dumper);

    // A node resynced from scratch (or restored from an older snapshot) knows only the blocks
    // before the dump's first.
    let first = node.a[0].number();
    let node_tip = first - 1;
    let before_the_dump = |n: u64| {
        Ok::<_, Infallible>(
            node.pre_hashes
                .iter()
                .find(|e| e.number == n && n <= node_tip)
                .map(|e| e.hash),
        )
    };
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    let err = dumper
        .rewind_to_canonical(node_tip, before_the_dump)
        .unwrap_err();
    let last = node.a.last().unwrap();
    match &err {
        ExexError::NodeBehind {
            dir: in_dir,
            dump_tip,
            dump_tip_hash,
            oldest,
            node_tip: reported,
        } => {
            assert_eq!(in_dir, &dir.path().display().to_string());
            assert_eq!((*dump_tip, *dump_tip_hash), (last.number(), last.hash()));
            assert_eq!(*oldest, first);
            assert_eq!(*reported, node_tip);
        }
        other => panic!("expected NodeBehind, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "its tip is block {} ({}) but the node's is block {node_tip}",
            last.number(),
            last.hash()
        )),
        "{message}"
    );
    // Nothing was removed, on disk or in the dumper.
    assert_eq!(dumper.last_dumped(), Some((last.number(), last.hash())));
    assert_eq!(dumped(dir.path()), node.expected);
    drop(dumper);

    // Once the node has caught up to a block of the dump, the dump is cut back to that block
    // and no further.
    let caught_up = node.a[2].number();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    let removed = dumper
        .rewind_to_canonical(caught_up, |n: u64| {
            Ok::<_, Infallible>(
                node.a
                    .iter()
                    .find(|b| b.number() == n && n <= caught_up)
                    .map(|b| b.hash()),
            )
        })
        .unwrap();
    assert_eq!(removed as usize, node.a.len() - 3);
    assert_eq!(dumped(dir.path()), node.expected[..3].to_vec());
}

#[test]
fn two_dumpers_on_one_directory_are_refused() {
    // The ExEx and `reth-bal dump --out` on one directory, or two nodes.
    let node = node();
    let dir = tempfile::tempdir().unwrap();
    let mut first = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    commit(&mut first, &node.a, &node.a[..2]).unwrap();
    match ChainDumper::open(dir.path(), 1, BlockRange::default()) {
        Err(ExexError::Dump(DumpError::Locked { path, holder })) => {
            assert_eq!(path, dir.path());
            assert_eq!(holder, Some(std::process::id()));
        }
        Err(other) => panic!("expected a locked dump, got {other}"),
        Ok(_) => panic!("a second dumper opened the dump"),
    }
    // The first goes on undisturbed.
    commit(&mut first, &node.a, &node.a[2..]).unwrap();
    drop(first);
    assert_eq!(dumped(dir.path()), node.expected);
}
