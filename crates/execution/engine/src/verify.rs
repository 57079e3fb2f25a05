//! Per-block checks against the header.

use crate::EngineError;
use alloy_primitives::{B256, Bloom};
use bal_replay_dump::BlockRecord;
use bal_replay_executor::{
    BlockOutput, ChainConfig, ExecError, check_bal_hash, check_header, check_writes,
    writes_by_index,
};

/// Checks a block's gas used, logs bloom and (from Byzantium on) receipts root against its header
/// (see [`bal_replay_executor::check_header`]), and from Amsterdam on that the record's BAL is the
/// one the header commits to ([`check_bal_hash`]): the BAL a replay trusts is the network's.
pub fn check_block(
    config: &ChainConfig,
    record: &BlockRecord,
    gas_used: u64,
    receipts_root: B256,
    logs_bloom: Bloom,
) -> Result<(), EngineError> {
    check_header(
        config,
        &record.block.header,
        gas_used,
        receipts_root,
        logs_bloom,
    )?;
    check_bal_hash(&record.block.header, &record.bal, None).map_err(ExecError::from)?;
    Ok(())
}

/// Checks that the writes a run produced for every BAL index of a block equal the record's BAL.
pub fn check_block_bal(
    record: &BlockRecord,
    built: &alloy_eip7928::BlockAccessList,
) -> Result<(), EngineError> {
    let n = record.tx_count();
    let expected = writes_by_index(record.number(), &record.bal, n + 2)?;
    let got = writes_by_index(record.number(), built, n + 2)?;
    for (index, (e, g)) in expected.iter().zip(&got).enumerate() {
        check_writes(record.number(), index as u64, n, e, g)?;
    }
    Ok(())
}

/// Checks an executed block (run with [`bal_replay_executor::ExecOptions::for_verify`]) against its
/// record: the header's gas used, logs bloom and receipts root ([`check_block`]), and the BAL's
/// writes for every index ([`check_block_bal`]).
pub fn check_output(
    config: &ChainConfig,
    record: &BlockRecord,
    output: &BlockOutput,
) -> Result<(), EngineError> {
    check_block(
        config,
        record,
        output.gas_used,
        output.receipts_root,
        output.logs_bloom,
    )?;
    let none = Vec::new();
    check_block_bal(record, output.bal.as_ref().unwrap_or(&none))
}
