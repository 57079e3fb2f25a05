//! Engine errors.

use alloy_primitives::{Address, B256, U256};
use bal_replay_dump::DumpError;
use bal_replay_executor::{ExecError, HeaderMismatch};
use bal_replay_state::StateError;

/// What [`EngineError::StateWithoutIdentity`] found missing, in words.
fn missing_identity(block: u64, no_chain_id: bool, no_block_hash: bool) -> String {
    let hash = format!("hash for its block {block}");
    match (no_chain_id, no_block_hash) {
        (true, true) => format!("chain id and no {hash}"),
        (true, false) => "chain id".into(),
        _ => hash,
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Reading the dump failed.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// The state store failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// Execution failed or did not match the BAL.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The state disagrees with a pre-block value the full BAL claims (the verifying full design).
    #[error(
        "block {block}{}: the BAL claims {address}{} was {claimed} before the batch, the state holds {state}",
        tx.map_or(String::new(), |tx| format!(", tx {tx}")),
        slot.map_or(String::new(), |slot| format!(" slot {slot:#x}"))
    )]
    PreValueMismatch {
        /// The first block of the batch whose record claims the value.
        block: u64,
        /// The first transaction of that block whose BAL entry writes the account or slot, if any.
        tx: Option<u64>,
        /// The account.
        address: Address,
        /// The slot, for a storage value.
        slot: Option<U256>,
        /// The value the BAL claims.
        claimed: String,
        /// The state's value.
        state: String,
    },
    /// The dump's BAL could not be turned into revm's form.
    #[error("block {block}: invalid BAL: {message}")]
    InvalidBal {
        /// First block of the batch.
        block: u64,
        /// Why.
        message: String,
    },
    /// A record is inconsistent with its own block (see [`crate::check_record`]).
    #[error("block {block}: {what}")]
    InvalidRecord {
        /// Block number.
        block: u64,
        /// What is wrong, naming the account or slot.
        what: String,
    },
    /// The executed block disagrees with its header.
    #[error(transparent)]
    HeaderMismatch(#[from] HeaderMismatch),
    /// The state is not at a height the dump can start or resume from: behind the block before
    /// its first, past its last, or of unknown height.
    #[error(
        "the state is at block {state:?} but the dump holds blocks {dump_first}..={dump_last} (needs the state at a block from {expected} to {dump_last})"
    )]
    StateHeight {
        /// Applied block of the state.
        state: Option<u64>,
        /// First block of the dump.
        dump_first: u64,
        /// Last block of the dump.
        dump_last: u64,
        /// The lowest height the dump applies to (the block before its first).
        expected: u64,
    },
    /// The dump is of another chain than the state.
    #[error("the state holds chain {state}, but the dump at {dir} is of chain {dump}")]
    ChainMismatch {
        /// The chain id the state recorded.
        state: u64,
        /// The dump's chain id.
        dump: u64,
        /// The dump directory.
        dir: String,
    },
    /// The state's block is not the dump's block at that height (another branch, or another state
    /// at the same height), so the dump does not build on this state.
    #[error(
        "the state is at block {number} with hash {state_hash}, but in the dump block {number} has hash {dump_hash}: the dump does not build on this state"
    )]
    BlockHashMismatch {
        /// The state's applied block.
        number: u64,
        /// Its hash, as the state recorded it.
        state_hash: B256,
        /// Its hash per the dump: the parent hash of the next block, or the hash of the dump's
        /// last block when the state is already there.
        dump_hash: B256,
    },
    /// The state recorded no chain id or no hash for its block, so nothing shows that the dump is
    /// of its chain and builds on its block; replaying over it needs
    /// [`crate::ReplayOptions::trust_state`].
    #[error(
        "the state {state} records no {}, so whether the dump is of its chain and builds on its \
         block cannot be checked; pass --trust-state to replay over it anyway",
        missing_identity(*block, *no_chain_id, *no_block_hash)
    )]
    StateWithoutIdentity {
        /// The state's directory, or `in memory`.
        state: String,
        /// The state's applied block.
        block: u64,
        /// It records no chain id.
        no_chain_id: bool,
        /// It records no hash for its block.
        no_block_hash: bool,
    },
    /// The dump's blocks are not a chain, so they cannot be replayed over one state.
    #[error(
        "the dump at {dir} holds independent blocks (chained = false); replay needs a chained dump"
    )]
    NotChained {
        /// The dump directory.
        dir: String,
    },
    /// Independent blocks were asked for, but the dump is a chain.
    #[error(
        "the dump at {dir} is a chain (chained = true); independent-block replay is for imported fixtures"
    )]
    Chained {
        /// The dump directory.
        dir: String,
    },
    /// Independent blocks each run over a state of their own, so a batch holds one block.
    #[error(
        "a dump of independent blocks replays in batches of 1 block (each over its own state), not {batch}"
    )]
    IndependentBatch {
        /// The batch size asked for.
        batch: usize,
    },
    /// The headers' gas used of consecutive blocks sums past `u64::MAX`: no real chain does, so
    /// the dump's headers are corrupt.
    #[error(
        "the header gas used of blocks {first}..={last} sums past {}",
        u64::MAX
    )]
    GasOverflow {
        /// The first block summed.
        first: u64,
        /// The block whose gas took the sum past `u64::MAX`.
        last: u64,
    },
    /// A worker thread panicked.
    #[error("a worker thread panicked: {0}")]
    WorkerPanic(String),
    /// The replay's prefetch reader threads could not be started.
    #[error("cannot start the replay's threads: {0}")]
    ThreadStart(String),
}

/// A read the full-BAL design could not answer from the dump's pre-block values (defined next to
/// the executor, which keeps it typed in [`ExecError::PreValueMissing`]).
pub use bal_replay_executor::PreValueMissing;

impl EngineError {
    /// Whether the replay stopped because a block did not match its record (BAL, header or
    /// execution mismatch): what `bal_replay_verification_failures_total` counts.
    pub fn is_verification_failure(&self) -> bool {
        match self {
            Self::Exec(e) => e.is_verification_failure(),
            Self::HeaderMismatch(_)
            | Self::InvalidBal { .. }
            | Self::InvalidRecord { .. }
            | Self::PreValueMismatch { .. } => true,
            _ => false,
        }
    }

    /// Whether the replay stopped because the state store failed (I/O, RocksDB, MDBX), reading or
    /// committing: what `bal_replay_store_errors_total` counts.
    pub fn is_store_error(&self) -> bool {
        matches!(self, Self::State(_) | Self::Exec(ExecError::Store { .. }))
    }
}
