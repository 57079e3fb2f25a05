//! Per-block checks against the header.

use crate::EngineError;
use alloy_consensus::{ReceiptEnvelope, proofs::calculate_receipt_root};
use alloy_hardforks::EthereumHardforks;
use bal_replay_dump::BlockRecord;
use bal_replay_exec::{ChainConfig, check_writes, writes_by_index};

/// Checks a block's gas used and receipts root against its header. Receipts roots are compared from
/// Byzantium on (earlier receipts embed intermediate state roots the replay does not compute).
pub fn check_block(
    config: &ChainConfig,
    record: &BlockRecord,
    gas_used: u64,
    receipts: &[ReceiptEnvelope],
) -> Result<(), EngineError> {
    let header = &record.block.header;
    let mismatch = |field, expected: String, got: String| EngineError::HeaderMismatch {
        block: header.number,
        field,
        expected,
        got,
    };
    if gas_used != header.gas_used {
        return Err(mismatch(
            "gasUsed",
            header.gas_used.to_string(),
            gas_used.to_string(),
        ));
    }
    if config.spec.is_byzantium_active_at_block(header.number) {
        let root = calculate_receipt_root(receipts);
        if root != header.receipts_root {
            return Err(mismatch(
                "receiptsRoot",
                header.receipts_root.to_string(),
                root.to_string(),
            ));
        }
    }
    Ok(())
}

/// Checks that the writes a run produced for every BAL index of a block equal the record's BAL.
pub fn check_block_bal(
    record: &BlockRecord,
    built: &alloy_eip7928::BlockAccessList,
) -> Result<(), EngineError> {
    let n = record.tx_count();
    let expected = writes_by_index(&record.bal, n + 2);
    let got = writes_by_index(built, n + 2);
    for (index, (e, g)) in expected.iter().zip(&got).enumerate() {
        check_writes(record.number(), index as u64, n, e, g)?;
    }
    Ok(())
}
