//! A contract created in one block of a batch and called again in a later block of the same batch,
//! as on the live Amsterdam dev node: the later block's record claims the slot
//! value the earlier block wrote (its pre-block value), which the state before the batch cannot
//! hold, since the account did not exist. Every design must replay it verified, full-verify
//! included, whatever the batch size.

use alloy_consensus::{Block, BlockBody, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{U256, address};
use bal_replay_dump::{
    BlockHashEntry, BlockRecord, DumpMeta, DumpReader, DumpWriter, WriterOptions,
};
use bal_replay_engine::{ExecMode, IoDesign, ReplayOptions, replay};
use bal_replay_executor::{ChainConfig, HeaderFields, RecordedBlock, execute_for_dump};
use bal_replay_fixtures::{ChainFixture, default_amsterdam_dev_dir};
use bal_replay_state::{
    AppliedBlock, MemStore, StateChanges, StateDatabase, StateReader, StateWriter,
};
use bal_replay_synth::node::{DEV_KEY, dev_transactions};
use std::num::NonZeroUsize;

/// Blocks 1 and 2 on the Amsterdam dev genesis (headers after the fixture's): block 1 deploys the
/// counter and calls it (slot 0 becomes 1), block 2 sends two transfers and calls it again (slot 0
/// read as 1, becomes 2). Returns the records and the genesis state.
fn two_blocks(fixture: &ChainFixture) -> (Vec<BlockRecord>, StateChanges) {
    let config = ChainConfig::from_genesis(&fixture.genesis);
    let genesis = StateChanges::from_pre_state(&fixture.genesis_state(), &[]);
    let store = MemStore::from_changes(&genesis, 0);
    let sender = address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    let (raw, _) = dev_transactions(config.chain_id, DEV_KEY, 0, 5, 20_000_000_000).unwrap();
    let txs: Vec<TxEnvelope> = raw
        .iter()
        .map(|tx| TxEnvelope::decode_2718(&mut tx.as_ref()).unwrap())
        .collect();
    let mut hashes = vec![BlockHashEntry {
        number: 0,
        hash: fixture.genesis_hash(),
    }];
    let mut records = Vec::new();
    for (template, txs) in fixture.blocks[..2].iter().zip([&txs[..2], &txs[2..]]) {
        let mut header = template.block.header.clone();
        header.parent_hash = hashes.last().unwrap().hash;
        let block = Block {
            header,
            body: BlockBody {
                transactions: txs.to_vec(),
                ommers: Vec::new(),
                withdrawals: template.block.body.withdrawals.clone(),
            },
        };
        let RecordedBlock { record, output, .. } =
            execute_for_dump::<_, bal_replay_synth::SynthError>(
                &config,
                StateDatabase::new(&store),
                block,
                vec![sender; txs.len()],
                hashes.clone(),
                HeaderFields::Seal,
            )
            .unwrap();
        assert!(output.receipts.iter().all(|r| r.status()));
        let (number, hash) = (record.number(), record.block.header.hash_slow());
        let mut changes = output.changes;
        changes.block_hashes.push((number, hash));
        store
            .commit_block(&changes, AppliedBlock::new(number, hash, config.chain_id))
            .unwrap();
        hashes.push(BlockHashEntry { number, hash });
        records.push(record);
    }
    (records, genesis)
}

#[test]
fn a_contract_created_earlier_in_the_batch_replays_verified_in_every_design() {
    let dir = default_amsterdam_dev_dir()
        .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
    let fixture = ChainFixture::read(&dir).unwrap();
    let config = ChainConfig::from_genesis(&fixture.genesis);
    let (records, genesis) = two_blocks(&fixture);
    let counter = address!("5FbDB2315678afecb367f032d93F642f64180aa3");
    // The shape of the case: block 1 lists the counter as absent, block 2 claims its slot 0 was 1.
    assert!(records[0].pre_state.absent.contains(&counter));
    assert!(
        records[1]
            .pre_state
            .storage
            .iter()
            .any(|s| (s.address, s.slot, s.value) == (counter, U256::ZERO, U256::from(1)))
    );

    let tmp = tempfile::tempdir().unwrap();
    let dump_dir = tmp.path().join("dump");
    let mut writer = DumpWriter::create(
        &dump_dir,
        DumpMeta {
            chain_id: config.chain_id,
            chained: true,
            source: "test".into(),
            schedule: Some(config.spec.to_schedule()),
        },
        WriterOptions::default(),
    )
    .unwrap();
    for record in &records {
        writer.append(record).unwrap();
    }
    writer.finish().unwrap();
    let dump = DumpReader::open(&dump_dir).unwrap();

    let mut runs = Vec::new();
    for design in IoDesign::ALL {
        runs.push((ExecMode::Sequential, design, 2));
        runs.push((ExecMode::Parallel, design, 2));
        runs.push((ExecMode::Parallel, design, 1));
    }
    for (mode, design, batch) in runs {
        let store = MemStore::from_changes(&genesis, 0);
        // The genesis on the fixture's chain: the state a replay checks the dump against.
        store
            .commit_block(
                &StateChanges::default(),
                AppliedBlock::new(0, records[0].block.header.parent_hash, config.chain_id),
            )
            .unwrap();
        let options = ReplayOptions {
            mode,
            design,
            threads: NonZeroUsize::new(2).unwrap(),
            batch: NonZeroUsize::new(batch).unwrap(),
            io_threads: NonZeroUsize::new(2).unwrap(),
            ..ReplayOptions::default()
        };
        let report = replay(&config, &dump, &store, &options, |_| {})
            .unwrap_or_else(|e| panic!("{mode:?}/{design}, batch {batch}: {e}"));
        assert_eq!((report.blocks, report.txs), (2, 5), "{mode:?}/{design}");
        assert_eq!(
            store.storage(counter, U256::ZERO).unwrap(),
            U256::from(2),
            "{mode:?}/{design}, batch {batch}"
        );
    }
}
