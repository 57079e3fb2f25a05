//! The dumper over a real Amsterdam chain (reth v2.5.1's dev chain, `../shared/fixtures/amsterdam-dev`):
//! every record's BAL is the network's byte for byte and the manifest carries the node's schedule;
//! a network BAL that differs from ours is an error naming the block and the first difference.

// Errors carry the block, index, account and slot of a mismatch: built once, on the failing path.
#![allow(clippy::result_large_err)]

use alloy_primitives::{B256, Bytes};
use bal_replay_dump::{BlockHashEntry, BlockRecord, DumpReader};
use bal_replay_executor::{ChainConfig, ExecError, ExecOptions, execute_block};
use bal_replay_exex::{BlockRange, ChainBlock, ChainDumper, RecordError, record_block};
use bal_replay_fixtures::{ChainFixture, default_amsterdam_dev_dir};
use bal_replay_state::{AppliedBlock, MemStore, StateChanges, StateDatabase, StateWriter};

struct Block<'a>(&'a bal_replay_fixtures::ChainBlock);

impl ChainBlock for Block<'_> {
    fn number(&self) -> u64 {
        self.0.number()
    }
    fn hash(&self) -> B256 {
        self.0.hash
    }
    fn parent_hash(&self) -> B256 {
        self.0.block.header.parent_hash
    }
}

/// The node's state after the genesis, and the dump's record of each block as the ExEx makes it,
/// with `network_bal` giving the node's BAL of a block.
fn dump_chain(
    fixture: &ChainFixture,
    dir: &std::path::Path,
    network_bal: impl Fn(&bal_replay_fixtures::ChainBlock) -> Bytes,
) -> Result<(), bal_replay_exex::ExexError> {
    let config = ChainConfig::from_genesis(&fixture.genesis);
    let genesis = StateChanges::from_pre_state(&fixture.genesis_state(), &[]);
    let store = MemStore::from_changes(&genesis, 0);
    let mut dumper = ChainDumper::open_with_schedule(
        dir,
        config.chain_id,
        Some(config.spec.to_schedule()),
        BlockRange::default(),
    )?;
    let mut hashes = vec![BlockHashEntry {
        number: 0,
        hash: fixture.genesis_hash(),
    }];
    let blocks: Vec<Block<'_>> = fixture.blocks.iter().map(Block).collect();
    dumper.commit(&blocks, |b| -> Result<BlockRecord, RecordError> {
        let block = b.0;
        let bal = network_bal(block);
        let record = record_block(
            &config,
            StateDatabase::new(&store),
            block.block.clone(),
            block.senders.clone(),
            hashes.clone(),
            Some(&bal),
        )?;
        // The node's state moves on to this block.
        let mut changes = execute_block(
            &config,
            StateDatabase::new(&store),
            &block.block,
            &block.senders,
            ExecOptions::default(),
        )?
        .changes;
        changes.block_hashes.push((block.number(), block.hash));
        store
            .commit_block(
                &changes,
                AppliedBlock::new(block.number(), block.hash, config.chain_id),
            )
            .map_err(|e| RecordError::Provider {
                block: block.number(),
                message: e.to_string(),
            })?;
        hashes.push(BlockHashEntry {
            number: block.number(),
            hash: block.hash,
        });
        Ok(record)
    })?;
    Ok(())
}

#[test]
fn the_exex_dumps_the_amsterdam_chain_with_the_networks_bal_and_the_nodes_schedule() {
    let dir = default_amsterdam_dev_dir()
        .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
    let fixture = ChainFixture::read(&dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    dump_chain(&fixture, tmp.path(), |b| b.bal_rlp.clone()).unwrap();
    let dump = DumpReader::open(tmp.path()).unwrap();
    let config = ChainConfig::from_genesis(&fixture.genesis);
    assert_eq!(
        dump.manifest().schedule.as_ref(),
        Some(&config.spec.to_schedule())
    );
    let records: Vec<BlockRecord> = dump.records().collect::<Result<_, _>>().unwrap();
    assert_eq!(records.len(), 80);
    for (record, block) in records.iter().zip(&fixture.blocks) {
        assert_eq!(alloy_rlp::encode(&record.bal), block.bal_rlp.to_vec());
    }
    // Resuming with another schedule (here: one without Amsterdam) is refused.
    let mut other = config.spec.to_schedule();
    other.forks.retain(|f| f.fork != "Amsterdam");
    let e = ChainDumper::open_with_schedule(tmp.path(), 1337, Some(other), BlockRange::default())
        .unwrap_err();
    assert!(e.to_string().contains("fork schedule differs"), "{e}");
}

#[test]
fn a_network_bal_other_than_ours_is_an_error_naming_the_first_difference() {
    let dir = default_amsterdam_dev_dir()
        .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
    let fixture = ChainFixture::read(&dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The node's BAL of block 60 without its last account.
    let e = dump_chain(&fixture, tmp.path(), |b| {
        if b.number() != 60 {
            return b.bal_rlp.clone();
        }
        let mut bal = bal_replay_executor::decode_bal(&b.bal_rlp).unwrap();
        let dropped = bal.pop().unwrap();
        assert!(!bal.iter().any(|a| a.address == dropped.address));
        alloy_rlp::encode(&bal).into()
    })
    .unwrap_err();
    let bal_replay_exex::ExexError::Record { block, source } = &e else {
        panic!("unexpected error: {e}");
    };
    assert_eq!(*block, 60);
    let RecordError::Exec(ExecError::BalHash(m)) = source else {
        panic!("unexpected error: {source}");
    };
    let network = bal_replay_executor::decode_bal(&fixture.blocks[59].bal_rlp).unwrap();
    let d = m.first_difference.clone().unwrap();
    assert_eq!(d.account, network.last().unwrap().address);
    assert_eq!(d.what, "our BAL lists the account, the network's does not");
    // Block 60 has no record.
    let last = DumpReader::open(tmp.path()).unwrap().manifest().last_block;
    assert!(last.is_none_or(|last| last < 60), "{last:?}");
}
