//! Checking an execution's result against the block header.

use crate::ChainConfig;
use alloy_consensus::{Header, ReceiptEnvelope, TxReceipt, proofs::calculate_receipt_root};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{B256, Bloom};

/// An executed block disagrees with its header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("block {block}: {field} mismatch: header has {expected}, execution gives {got}")]
pub struct HeaderMismatch {
    /// Block number.
    pub block: u64,
    /// Which header field (`gasUsed`, `logsBloom`, `receiptsRoot`).
    pub field: &'static str,
    /// The header's value.
    pub expected: String,
    /// The executed value.
    pub got: String,
}

/// What checking one executed block against its header and its record's BAL verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockCheck {
    /// Block number.
    pub number: u64,
    /// Transactions in the block.
    pub txs: usize,
    /// Gas used (equal to the header's).
    pub gas_used: u64,
    /// Whether the receipts root was checked (Byzantium on).
    pub receipts_root_checked: bool,
    /// Accounts in the BAL.
    pub bal_accounts: usize,
    /// RLP size of the BAL in bytes.
    pub bal_rlp_bytes: usize,
}

impl BlockCheck {
    /// The summary of `record`'s block, checked with `gas_used` equal to its header's.
    pub fn new(config: &ChainConfig, record: &bal_replay_dump::BlockRecord, gas_used: u64) -> Self {
        let number = record.number();
        Self {
            number,
            txs: record.tx_count(),
            gas_used,
            receipts_root_checked: config.spec.is_byzantium_active_at_block(number),
            bal_accounts: record.bal.len(),
            bal_rlp_bytes: record.bal_rlp_len(),
        }
    }
}

/// One line: block, transactions, gas, BAL accounts and bytes, and whether the receipts root was
/// checked.
impl std::fmt::Display for BlockCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "block {:>9}  txs {:>5}  gas {:>10}  bal accounts {:>5}  bal {:>7} B  receipts root {}",
            self.number,
            self.txs,
            self.gas_used,
            self.bal_accounts,
            self.bal_rlp_bytes,
            if self.receipts_root_checked {
                "checked"
            } else {
                "n/a (pre-Byzantium)"
            },
        )
    }
}

/// The receipts-trie root and the bloom of all logs of a block's receipts.
pub fn receipts_root_and_bloom(receipts: &[ReceiptEnvelope]) -> (B256, Bloom) {
    let root = calculate_receipt_root(receipts);
    let bloom = receipts.iter().fold(Bloom::ZERO, |mut bloom, r| {
        bloom.accrue_bloom(&r.bloom());
        bloom
    });
    (root, bloom)
}

/// Checks an execution's gas used, logs bloom and (from Byzantium on, since earlier receipts embed
/// intermediate state roots no replay computes) receipts root against the header. Returns whether
/// the receipts root was checked.
pub fn check_header(
    config: &ChainConfig,
    header: &Header,
    gas_used: u64,
    receipts_root: B256,
    logs_bloom: Bloom,
) -> Result<bool, HeaderMismatch> {
    let mismatch = |field, expected: String, got: String| HeaderMismatch {
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
    if logs_bloom != header.logs_bloom {
        return Err(mismatch(
            "logsBloom",
            header.logs_bloom.to_string(),
            logs_bloom.to_string(),
        ));
    }
    let byzantium = config.spec.is_byzantium_active_at_block(header.number);
    if byzantium && receipts_root != header.receipts_root {
        return Err(mismatch(
            "receiptsRoot",
            header.receipts_root.to_string(),
            receipts_root.to_string(),
        ));
    }
    Ok(byzantium)
}
