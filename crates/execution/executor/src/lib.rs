//! Reference (sequential) block execution over a flat state.
//!
//! [`execute_block`] runs a whole Ethereum block with alloy-evm's Ethereum block executor: pre-block
//! system calls, every transaction in order, then withdrawals, ommer and block rewards, the DAO fork and
//! post-block system calls, all as alloy-evm implements them for mainnet's hardfork schedule. Nothing of
//! that is rewritten here. Transactions arrive with their senders (from the dump): no signature is
//! recovered on the replay path.
//!
//! On request it also builds the block's EIP-7928 access list with revm's BAL builder
//! (`State::with_bal_builder`) and records the pre-block value of every key the block reads
//! ([`RecordingDb`]): together, the two are what a dump record needs. [`execute_for_dump`] makes
//! one block into one record, with the one policy every producer of records follows.
//!
//! Invariant: the [`BlockOutput`] of a block depends only on the block, its senders and the values the
//! database returns; the same block over two stores holding the same values gives equal outputs.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Errors carry the block, index, account, slot and both values of a mismatch: they are built once,
// on the path that stops a run, so their size costs nothing where it matters.
#![allow(clippy::result_large_err)]

mod bal_hash;
mod bal_replay;
mod block;
mod changes;
mod config;
mod error;
mod header;
mod record;
mod recording;

pub use bal_hash::{
    BalDifference, BalHashMismatch, check_bal_hash, decode_bal, first_bal_difference,
};
pub use bal_replay::{
    TxWrites, check_bal, check_writes, replay_bal_per_tx, tx_writes_from_bal, writes_by_index,
};
pub use block::{BlockOutput, ExecOptions, execute_block, execution_ctx, step_execution_ctx};
pub use changes::state_changes_from_bundle;
pub use config::{ChainConfig, ForkSchedule, RETH_DEV_CHAIN_ID};
pub use error::{ExecError, PreValueMissing, describe_bal_index};
pub use header::{BlockCheck, HeaderMismatch, check_header, receipts_root_and_bloom};
pub use record::{HeaderFields, RecordedBlock, execute_for_dump, record_from_output};
pub use recording::RecordingDb;
