//! One block to one dump record: re-execute over the parent's state, check, assemble.

use crate::RecordError;
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{Address, B256, keccak256};
use bal_replay_dump::{BlockHashEntry, BlockRecord};
use bal_replay_executor::{
    BalHashMismatch, ChainConfig, ExecError, HeaderFields, decode_bal, execute_for_dump,
    first_bal_difference,
};
use revm::{DatabaseRef, database_interface::DBErrorMarker};
use std::time::Instant;

/// How many preceding block hashes a record carries: all BLOCKHASH can reach.
pub const HASH_WINDOW: u64 = 256;

/// Executes `block` over `parent_state` (the state after its parent) with the BAL builder and the
/// pre-value recorder, checks gas used, logs bloom and receipts root against the header, and
/// returns the record with `block_hashes` (see [`last_block_hashes`]): [`execute_for_dump`], timed.
///
/// From Amsterdam on the header commits to the block's BAL: [`execute_for_dump`] requires ours to
/// hash to it, so the record's BAL is the network's byte for byte. `network_bal` is the block's
/// BAL in RLP as the node holds it (reth keeps recent ones), if it does: ours must equal it byte
/// for byte too, and a difference names the first account, slot or index where they differ. A
/// mismatch is an error, never a record.
pub fn record_block<D>(
    config: &ChainConfig,
    parent_state: D,
    block: Block<TxEnvelope>,
    senders: Vec<Address>,
    block_hashes: Vec<BlockHashEntry>,
    network_bal: Option<&[u8]>,
) -> Result<BlockRecord, RecordError>
where
    D: DatabaseRef + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let recorded = execute_for_dump::<_, RecordError>(
        config,
        parent_state,
        block,
        senders,
        block_hashes,
        HeaderFields::Check,
    )?;
    metrics::histogram!(bal_replay_metrics::EXEX_REEXECUTION_SECONDS)
        .record(started.elapsed().as_secs_f64());
    if let Some(network) = network_bal {
        check_network_bal(&recorded.record, network)?;
    }
    Ok(recorded.record)
}

/// The record's BAL against the network's RLP bytes.
fn check_network_bal(record: &BlockRecord, network: &[u8]) -> Result<(), RecordError> {
    let mut ours = Vec::new();
    alloy_rlp::encode_list(&record.bal, &mut ours);
    if ours == network {
        return Ok(());
    }
    let block = record.number();
    let decoded = decode_bal(network).map_err(|e| RecordError::Provider {
        block,
        message: format!("the node's BAL of the block does not decode: {e}"),
    })?;
    Err(ExecError::from(BalHashMismatch {
        block,
        expected: record
            .block
            .header
            .block_access_list_hash
            .unwrap_or_else(|| keccak256(network)),
        got: keccak256(&ours),
        first_difference: first_bal_difference(&decoded, &record.bal),
    })
    .into())
}

/// The hashes of the up to [`HASH_WINDOW`] blocks before `number`, ascending, from `hash_of`
/// (the node's canonical hash by number).
pub fn last_block_hashes<E: std::fmt::Display>(
    number: u64,
    mut hash_of: impl FnMut(u64) -> Result<Option<B256>, E>,
) -> Result<Vec<BlockHashEntry>, RecordError> {
    let first = number.saturating_sub(HASH_WINDOW);
    (first..number)
        .map(|n| {
            let provider = |message: String| RecordError::Provider {
                block: number,
                message,
            };
            match hash_of(n) {
                Ok(Some(hash)) => Ok(BlockHashEntry { number: n, hash }),
                Ok(None) => Err(provider(format!("no canonical hash for block {n}"))),
                Err(e) => Err(provider(format!("hash of block {n}: {e}"))),
            }
        })
        .collect()
}
