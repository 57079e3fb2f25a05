//! Execution errors.

use alloy_primitives::{Address, B256, U256};

/// Why a block could not be executed or did not verify.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The block has a different number of senders than transactions.
    #[error("block {block}: {senders} senders for {txs} transactions")]
    SenderCount {
        /// Block number.
        block: u64,
        /// Senders given.
        senders: usize,
        /// Transactions in the block.
        txs: usize,
    },
    /// alloy-evm rejected the block or one of its transactions.
    #[error("block {block}: execution failed: {message}")]
    Execution {
        /// Block number.
        block: u64,
        /// The executor's error.
        message: String,
    },
    /// A transaction replayed over the BAL failed to execute.
    #[error("block {block}, tx {tx_index}: replay over the BAL failed: {message}")]
    BalReplay {
        /// Block number.
        block: u64,
        /// Transaction index in the block.
        tx_index: usize,
        /// The executor's error.
        message: String,
    },
    /// A transaction replayed over the BAL wrote something other than the BAL says.
    #[error(
        "block {block}, tx {tx_index}: account {address}{slot}: BAL says {expected}, execution wrote {got}",
        slot = slot.map(|s| format!(" slot {s:#x}")).unwrap_or_default()
    )]
    BalMismatch {
        /// Block number.
        block: u64,
        /// Transaction index in the block.
        tx_index: usize,
        /// The account.
        address: Address,
        /// The slot, for a storage write.
        slot: Option<U256>,
        /// What the BAL says (field and value).
        expected: String,
        /// What execution wrote.
        got: String,
    },
    /// The BAL's code change carries bytecode revm cannot decode.
    #[error("block {block}: BAL code for {code_hash} is invalid: {message}")]
    BalCode {
        /// Block number.
        block: u64,
        /// Code hash.
        code_hash: B256,
        /// The decoder's error.
        message: String,
    },
}
