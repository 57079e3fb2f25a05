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
    /// A dump is for a chain this build has no hardfork schedule for.
    #[error("dump {dir} is for chain {chain_id}, which this build has no hardfork schedule for")]
    UnknownChain {
        /// The dump directory.
        dir: std::path::PathBuf,
        /// The manifest's chain id.
        chain_id: u64,
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
    /// A transaction (or system call) replayed over the BAL wrote something other than the BAL says.
    #[error(
        "block {block}, {position}: account {address}{slot}: BAL says {expected}, execution wrote {got}",
        position = describe_bal_index(*bal_index, *tx_count),
        slot = slot.map(|s| format!(" slot {s:#x}")).unwrap_or_default()
    )]
    BalMismatch {
        /// Block number.
        block: u64,
        /// BAL index within the block (0: pre-block system calls, i + 1: tx i, n + 1: post-block).
        bal_index: u64,
        /// Transactions in the block (to name the post-block index).
        tx_count: usize,
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

/// "tx 3", "pre-block system calls" or "post-block changes" for a BAL index.
pub fn describe_bal_index(bal_index: u64, tx_count: usize) -> String {
    match bal_index {
        0 => "pre-block system calls (BAL index 0)".to_string(),
        i if i == tx_count as u64 + 1 => format!("post-block changes (BAL index {i})"),
        i => format!("tx {} (BAL index {i})", i - 1),
    }
}
