//! A chain fixture (genesis + blocks, with the network's receipts and BALs) into a chained dump
//! and the genesis state it replays from, every block checked against what the network says.

use crate::ImportError;
use alloy_primitives::{B256, Bytes};
use bal_replay_dump::{BlockHashEntry, DumpMeta, DumpWriter, Manifest, WriterOptions};
use bal_replay_executor::{
    BalHashMismatch, BlockCheck, ChainConfig, ExecError, ExecOptions, HeaderFields, decode_bal,
    execute_block, first_bal_difference, record_from_output,
};
use bal_replay_fixtures::{ChainBlock, ChainFixture};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{AppliedBlock, MemStore, StateChanges, StateDatabase, StateWriter};
use std::path::Path;

/// The most recent block hashes a record carries (what `BLOCKHASH` can ask for).
const HASH_WINDOW: usize = 256;

/// A transaction's receipt differs from the network's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("block {block}, tx {tx}: receipt {field} is {got}, the network's is {expected}")]
pub struct ReceiptMismatch {
    /// Block number.
    pub block: u64,
    /// Transaction index in the block.
    pub tx: usize,
    /// `status` or `gasUsed`.
    pub field: &'static str,
    /// The network's value.
    pub expected: String,
    /// Ours.
    pub got: String,
}

/// What [`import_chain`] did: every block's outcome, and the dump it wrote.
#[derive(Debug)]
pub struct ChainImport {
    /// Each block's check, or why it failed, in block order.
    pub blocks: Vec<(u64, Result<BlockCheck, ImportError>)>,
    /// The dump's manifest: the blocks before the first failure.
    pub manifest: Manifest,
}

impl ChainImport {
    /// Blocks that passed every check.
    pub fn passed(&self) -> usize {
        self.blocks.iter().filter(|(_, r)| r.is_ok()).count()
    }

    /// Blocks that did not.
    pub fn failed(&self) -> usize {
        self.blocks.len() - self.passed()
    }
}

/// Executes `fixture` from its genesis, block after block, and checks each against the network:
/// gas used, logs bloom and receipts root against the header; each receipt's status and gas
/// against the network's receipts; the BAL we build byte for byte against the network's (so its
/// hash is the header's `blockAccessListHash`; a difference names the first account, slot or
/// index where the two differ).
///
/// Writes a chained dump in `out` (its manifest carries the genesis config's fork schedule), and a
/// RocksDB state in `state` holding the genesis state at block 0, from which any replay design
/// replays the dump. Records are written up to the first block that fails; later blocks are still
/// executed and checked (over our own post-state), so the outcome lists every block.
/// `on_block` is called after each block.
///
/// Fails before writing anything if `out` or `state` exists; stops at a block that does not
/// execute at all (no post-state to go on from). A dump cut at a failed block is still a whole
/// chained dump of the blocks before it.
pub fn import_chain(
    fixture: &ChainFixture,
    out: &Path,
    state: &Path,
    mut on_block: impl FnMut(u64, &Result<BlockCheck, ImportError>),
) -> Result<ChainImport, ImportError> {
    for path in [out, state] {
        if path.exists() {
            return Err(ImportError::AlreadyExists { path: path.into() });
        }
    }
    let config = ChainConfig::from_genesis(&fixture.genesis);
    let genesis_hash = fixture.genesis_hash();
    let mut genesis = StateChanges::from_pre_state(
        &fixture.genesis_state(),
        &[BlockHashEntry {
            number: 0,
            hash: genesis_hash,
        }],
    );
    genesis.block_hashes = vec![(0, genesis_hash)];
    let rocks = RocksStore::create(state, Default::default(), &RocksOptions::default())?;
    rocks.commit_block(
        &genesis,
        AppliedBlock {
            number: 0,
            hash: Some(genesis_hash),
            chain_id: Some(config.chain_id),
        },
    )?;
    drop(rocks);

    let meta = DumpMeta {
        chain_id: config.chain_id,
        chained: true,
        source: "chain-fixture".into(),
        schedule: Some(config.spec.to_schedule()),
    };
    let mut writer = DumpWriter::create(out, meta, WriterOptions::default())?;
    let parent = MemStore::from_changes(&genesis, 0);
    let mut hashes = vec![BlockHashEntry {
        number: 0,
        hash: genesis_hash,
    }];
    let mut blocks = Vec::with_capacity(fixture.blocks.len());
    let mut writing = true;
    for block in &fixture.blocks {
        let number = block.number();
        let window = hashes[hashes.len().saturating_sub(HASH_WINDOW)..].to_vec();
        let (outcome, changes) = import_block(&config, &parent, block, window);
        let outcome = match (outcome, writing) {
            (Ok((record, check)), true) => {
                writer.append(&record).map(|()| check).map_err(Into::into)
            }
            (outcome, _) => outcome.map(|(_, check)| check),
        };
        writing &= outcome.is_ok();
        on_block(number, &outcome);
        blocks.push((number, outcome));
        let Some(mut changes) = changes else {
            // Nothing to go on from: the blocks after it cannot be checked.
            break;
        };
        changes.block_hashes.push((number, block.hash));
        parent.commit_block(
            &changes,
            AppliedBlock {
                number,
                hash: Some(block.hash),
                chain_id: Some(config.chain_id),
            },
        )?;
        hashes.push(BlockHashEntry {
            number,
            hash: block.hash,
        });
    }
    let manifest = writer.finish()?;
    Ok(ChainImport { blocks, manifest })
}

/// One block over its parent's state: the record and its check, or why it failed; and its state
/// changes whenever it executed (even if a check then failed).
#[allow(clippy::type_complexity)]
fn import_block(
    config: &ChainConfig,
    parent: &MemStore,
    block: &ChainBlock,
    block_hashes: Vec<BlockHashEntry>,
) -> (
    Result<(bal_replay_dump::BlockRecord, BlockCheck), ImportError>,
    Option<StateChanges>,
) {
    let output = match execute_block(
        config,
        StateDatabase::new(parent),
        &block.block,
        &block.senders,
        ExecOptions::for_dump(),
    ) {
        Ok(output) => output,
        Err(e) => return (Err(e.into()), None),
    };
    let changes = output.changes.clone();
    let checked = check_receipts(block, &output.receipts)
        .and_then(|()| check_network_bal(block, output.bal.as_deref().unwrap_or_default()))
        .and_then(|()| {
            let recorded = record_from_output::<ImportError>(
                config,
                block.block.clone(),
                block.senders.clone(),
                block_hashes,
                output,
                HeaderFields::Check,
            )?;
            let check = BlockCheck::new(config, &recorded.record, recorded.output.gas_used);
            Ok((recorded.record, check))
        });
    (checked, Some(changes))
}

/// Each receipt's status and gas against the network's.
fn check_receipts(
    block: &ChainBlock,
    receipts: &[alloy_consensus::ReceiptEnvelope],
) -> Result<(), ImportError> {
    let mut previous = 0u64;
    for (tx, (ours, network)) in receipts.iter().zip(&block.receipts).enumerate() {
        let mismatch = |field, expected: String, got: String| ReceiptMismatch {
            block: block.number(),
            tx,
            field,
            expected,
            got,
        };
        if ours.status() != network.success {
            return Err(mismatch(
                "status",
                u8::from(network.success).to_string(),
                u8::from(ours.status()).to_string(),
            )
            .into());
        }
        let gas = ours.cumulative_gas_used() - previous;
        previous = ours.cumulative_gas_used();
        if gas != network.gas_used || ours.cumulative_gas_used() != network.cumulative_gas_used {
            return Err(mismatch("gasUsed", network.gas_used.to_string(), gas.to_string()).into());
        }
    }
    Ok(())
}

/// Our BAL's RLP against the network's bytes; a difference names the first account, slot or index.
fn check_network_bal(
    block: &ChainBlock,
    ours: &[alloy_eip7928::AccountChanges],
) -> Result<(), ImportError> {
    let mut encoded = Vec::new();
    alloy_rlp::encode_list(ours, &mut encoded);
    let encoded = Bytes::from(encoded);
    if encoded == block.bal_rlp {
        return Ok(());
    }
    let network = decode_bal(&block.bal_rlp).map_err(|e| ImportError::NetworkBal {
        block: block.number(),
        path: block.dir.join("bal.rlp.hex"),
        reason: e.to_string(),
    })?;
    let expected = block
        .block
        .header
        .block_access_list_hash
        .unwrap_or_else(|| B256::from(alloy_primitives::keccak256(&block.bal_rlp)));
    Err(ExecError::from(BalHashMismatch {
        block: block.number(),
        expected,
        got: alloy_primitives::keccak256(&encoded),
        first_difference: first_bal_difference(&network, ours),
    })
    .into())
}
