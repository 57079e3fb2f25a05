//! Execution errors.

use alloy_evm::block::{BlockExecutionError, InternalBlockExecutionError};
use alloy_primitives::{Address, B256, U256};
use bal_replay_state::StateError;
use revm::{context::result::EVMError, database_interface::bal::EvmDatabaseError};
use std::error::Error;

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
    /// A BAL is not the one the block's header commits to (Amsterdam on).
    #[error(transparent)]
    BalHash(#[from] crate::BalHashMismatch),
    /// A dump carries no fork schedule and is for a chain this build has none for.
    #[error(
        "dump {dir} is for chain {chain_id}, which this build has no hardfork schedule for, \
         and its manifest carries none (\"schedule\")"
    )]
    UnknownChain {
        /// The dump directory.
        dir: std::path::PathBuf,
        /// The manifest's chain id.
        chain_id: u64,
    },
    /// A dump's manifest carries a fork schedule this build cannot use.
    #[error("dump {dir}: invalid \"schedule\" in manifest.json: {reason}")]
    InvalidSchedule {
        /// The dump directory.
        dir: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// alloy-evm rejected the block or one of its transactions (for reasons other than a failed
    /// read, which are [`ExecError::Store`] and [`ExecError::PreValueMissing`]).
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
    /// A BAL change names an index past the block's last one (a crafted or corrupt dump). A block
    /// with `n` transactions has the indices `0..=n + 1`.
    #[error(
        "block {block}: account {address} has a BAL change at index {index}, outside the block's indices 0..={last} ({tx_count} transactions)",
        last = *tx_count as u64 + 1
    )]
    BalIndexOutOfRange {
        /// Block number.
        block: u64,
        /// The account whose change names the index.
        address: Address,
        /// The index the BAL names.
        index: u64,
        /// Transactions in the block (its last index is `tx_count + 1`).
        tx_count: usize,
    },
    /// A BAL does not have the shape EIP-7928 requires: accounts, slots or a change list's
    /// indices out of order or listed twice, or an index past the block
    /// ([`bal_replay_dump::check_bal`]).
    #[error("block {block}: malformed BAL: {defect}")]
    MalformedBal {
        /// Block number.
        block: u64,
        /// What is wrong, naming the account and slot.
        #[source]
        defect: bal_replay_dump::BalDefect,
    },
    /// A record's pre-state carries code revm cannot load ([`bal_replay_dump::check_code`]).
    #[error("block {block}: pre-state code {hash}: {defect}")]
    MalformedPreCode {
        /// Block number.
        block: u64,
        /// The code's hash as the record lists it.
        hash: alloy_primitives::B256,
        /// What is wrong with it.
        #[source]
        defect: bal_replay_dump::MalformedCode,
    },
    /// The state store failed while a block executed or a batch was read for its commit: an I/O
    /// or store error, not a verification failure. The store's error is the `source()`.
    #[error("block {block}, {position}: the state store failed", position = describe_read_at(*bal_index, *tx_count))]
    Store {
        /// Block number.
        block: u64,
        /// BAL index within the block that was executing; `None` for the reads of a batch's commit.
        bal_index: Option<u64>,
        /// Transactions in the block (to name the post-block index).
        tx_count: usize,
        /// The store's error.
        #[source]
        source: StateError,
    },
    /// Execution read a key the dump's pre-block values do not carry (the dump is incomplete): a
    /// fault of the dump, not of the BAL's values. The missing key is the `source()`.
    #[error("block {block}, {position}: {source}", position = describe_read_at(*bal_index, *tx_count))]
    PreValueMissing {
        /// Block number.
        block: u64,
        /// BAL index within the block that was executing; `None` for the reads of a batch's commit.
        bal_index: Option<u64>,
        /// Transactions in the block (to name the post-block index).
        tx_count: usize,
        /// The key that is missing.
        #[source]
        source: PreValueMissing,
    },
    /// Execution returned no access list or pre-state although both were asked for (see
    /// [`execute_for_dump`](crate::execute_for_dump)).
    #[error("block {block}: execution returned no {what}")]
    MissingOutput {
        /// Block number.
        block: u64,
        /// `"BAL"` or `"pre-state"`.
        what: &'static str,
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

impl ExecError {
    /// Whether this error says the block does not verify against its record: a BAL or execution
    /// mismatch, an invalid BAL, or a record lacking a pre-block value execution reads. Not a
    /// failed store ([`ExecError::Store`]) or a setup error.
    pub const fn is_verification_failure(&self) -> bool {
        matches!(
            self,
            Self::Execution { .. }
                | Self::BalReplay { .. }
                | Self::BalMismatch { .. }
                | Self::BalIndexOutOfRange { .. }
                | Self::MalformedBal { .. }
                | Self::MalformedPreCode { .. }
                | Self::PreValueMissing { .. }
                | Self::BalCode { .. }
                | Self::BalHash(_)
        )
    }

    /// The error of a failed read of a database with error type `E`, at `bal_index` of `block`:
    /// [`ExecError::Store`] for a [`StateError`], [`ExecError::PreValueMissing`] for a
    /// [`PreValueMissing`], each kept as the `source()`; any other type only by its message.
    pub fn from_read<E: Error + Send + Sync + 'static>(
        block: u64,
        bal_index: Option<u64>,
        tx_count: usize,
        error: E,
    ) -> Self {
        let error: Box<dyn Error + Send + Sync> = Box::new(error);
        let error = match error.downcast::<StateError>() {
            Ok(source) => {
                return Self::Store {
                    block,
                    bal_index,
                    tx_count,
                    source: *source,
                };
            }
            Err(other) => other,
        };
        match error.downcast::<PreValueMissing>() {
            Ok(source) => Self::PreValueMissing {
                block,
                bal_index,
                tx_count,
                source: *source,
            },
            Err(other) => Self::Execution {
                block,
                message: format!("{}: {other}", describe_read_at(bal_index, tx_count)),
            },
        }
    }

    /// The error of alloy-evm's executor at `bal_index` of `block`, over a database with error type
    /// `E` (under revm's `State`). A failed read of the database becomes [`ExecError::from_read`]'s
    /// typed error; anything else is [`ExecError::Execution`] with the executor's message.
    ///
    /// alloy-evm keeps a transaction's EVM error boxed, so the database error is recovered by type.
    /// The system calls' errors (EIP-2935, EIP-4788, EIP-7002, EIP-7251) reach us as text only, so
    /// a failed read inside one of them stays [`ExecError::Execution`].
    pub fn from_execution<E: Error + Send + Sync + 'static>(
        block: u64,
        bal_index: u64,
        tx_count: usize,
        error: BlockExecutionError,
    ) -> Self {
        let message = |e: &dyn std::fmt::Display| Self::Execution {
            block,
            message: format!("{}: {e}", describe_bal_index(bal_index, tx_count)),
        };
        match error {
            BlockExecutionError::Internal(InternalBlockExecutionError::EVM { hash, error }) => {
                match error.downcast::<EVMError<EvmDatabaseError<E>>>() {
                    Ok(evm) => match *evm {
                        EVMError::Database(EvmDatabaseError::Database(e)) => {
                            Self::from_read(block, Some(bal_index), tx_count, e)
                        }
                        other => message(&format!(
                            "internal EVM error occurred when executing transaction {hash}: {other}"
                        )),
                    },
                    Err(error) => message(&format!(
                        "internal EVM error occurred when executing transaction {hash}: {error}"
                    )),
                }
            }
            other => message(&other),
        }
    }
}

/// A read the full-BAL design could not answer from the dump's pre-block values: the error of the
/// engine's `PreValueDb`, here so that execution can keep it typed ([`ExecError::PreValueMissing`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreValueMissing {
    /// An account the dump does not list.
    #[error("the dump is incomplete: account {0} is read but has no pre-block value")]
    Account(Address),
    /// A slot the dump does not list.
    #[error("the dump is incomplete: slot {1:#x} of {0} is read but has no pre-block value")]
    Storage(Address, U256),
    /// Code the dump does not carry.
    #[error("the dump is incomplete: code {0} is loaded but not in the dump")]
    Code(B256),
    /// A block hash the dump does not carry.
    #[error("the dump is incomplete: BLOCKHASH({0}) is not in the dump")]
    BlockHash(u64),
}

impl revm::database_interface::DBErrorMarker for PreValueMissing {}

/// "tx 3", "pre-block system calls" or "post-block changes" for a BAL index. An index past the
/// block's last one (which a valid BAL never has) is named as such, not as a transaction.
pub fn describe_bal_index(bal_index: u64, tx_count: usize) -> String {
    let post = tx_count as u64 + 1;
    match bal_index {
        0 => "pre-block system calls (BAL index 0)".to_string(),
        i if i == post => format!("post-block changes (BAL index {i})"),
        i if i > post => format!("BAL index {i} (past the block's last index {post})"),
        i => format!("tx {} (BAL index {i})", i - 1),
    }
}

/// [`describe_bal_index`], or "the batch commit" for a read outside any index.
fn describe_read_at(bal_index: Option<u64>, tx_count: usize) -> String {
    match bal_index {
        Some(index) => describe_bal_index(index, tx_count),
        None => "reading the batch's pre-state for its commit".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_reads_keep_their_typed_source() {
        let store = StateError::MissingCode {
            hash: B256::repeat_byte(7),
        };
        let err = ExecError::from_read(9, Some(2), 3, store);
        assert!(matches!(
            &err,
            ExecError::Store { block: 9, bal_index: Some(2), tx_count: 3, source: StateError::MissingCode { hash } }
                if *hash == B256::repeat_byte(7)
        ));
        assert!(!err.is_verification_failure());
        assert_eq!(
            err.to_string(),
            "block 9, tx 1 (BAL index 2): the state store failed"
        );
        assert!(
            err.source()
                .and_then(|s| s.downcast_ref::<StateError>())
                .is_some()
        );

        let missing = PreValueMissing::Storage(Address::repeat_byte(1), U256::from(4));
        let err = ExecError::from_read(9, None, 3, missing.clone());
        assert!(matches!(
            &err,
            ExecError::PreValueMissing { block: 9, bal_index: None, source, .. } if *source == missing
        ));
        assert!(err.is_verification_failure());
        assert_eq!(
            err.source()
                .and_then(|s| s.downcast_ref::<PreValueMissing>()),
            Some(&missing)
        );

        // Any other database error is kept by its message.
        let other = std::io::Error::other("disk on fire");
        let err = ExecError::from_read(9, Some(4), 3, other);
        assert!(
            matches!(&err, ExecError::Execution { block: 9, message } if message.contains("disk on fire") && message.contains("post-block")),
            "{err}"
        );
    }

    #[test]
    fn indices_past_the_block_are_not_named_as_transactions() {
        assert_eq!(
            describe_bal_index(0, 2),
            "pre-block system calls (BAL index 0)"
        );
        assert_eq!(describe_bal_index(2, 2), "tx 1 (BAL index 2)");
        assert_eq!(describe_bal_index(3, 2), "post-block changes (BAL index 3)");
        assert_eq!(
            describe_bal_index(u64::MAX, 2),
            format!("BAL index {} (past the block's last index 3)", u64::MAX)
        );
    }
}
