//! The reth dump ExEx's logic, free of reth: how a node's canonical chain becomes a dump.
//!
//! `bin/reth-bal` (its own workspace, since reth is not on crates.io) only turns reth's
//! notifications and state providers into the calls below; everything that decides what lands in
//! the dump lives here, where CI tests it.
//!
//! # What the dump guarantees
//!
//! A [`ChainDumper`] keeps a *chained* dump equal to a prefix of the node's canonical chain:
//!
//! - **Every record was re-executed and checked.** [`record_block`] runs the block over its
//!   parent's state with revm's BAL builder and the pre-value recorder on (the reference executor,
//!   `bal_replay_executor::execute_block`), and the block's gas used, logs bloom and receipts root must
//!   equal its header's. From Amsterdam on the BAL it builds must hash to the header's
//!   `blockAccessListHash`, and equal byte for byte the node's copy of the block's BAL when the
//!   node still has one: the record's BAL is the network's. A mismatch is an error, never a
//!   silent record.
//! - **The dump carries the node's rules.** [`ChainDumper::open_with_schedule`] writes the node's
//!   fork schedule into the manifest, so a replay never guesses it from the chain id.
//! - **Records link.** Each record's parent hash is the previous record's hash; numbers go up by
//!   one. A block the dump already holds under another hash is a divergence (the node must revert
//!   first), not an overwrite.
//! - **Reverts cut back first.** On a revert or reorg the dump is truncated to the fork point
//!   (durably) before any block of the new branch is appended, so there is never a gap or a
//!   duplicate.
//! - **Never emptied because the node is behind.** At start, [`ChainDumper::rewind_to_canonical`]
//!   cuts the dump back only to a block the node has on its canonical chain; when the node has
//!   none of the dump's last blocks it stops with an error naming both tips
//!   ([`ExexError::NodeBehind`], [`ExexError::OffChain`]) and leaves the dump alone.
//! - **One writer per dump.** The dump's writer holds an OS lock on the directory for its
//!   lifetime, so a second node, or `reth-bal dump --out` on the ExEx's directory, fails at open
//!   ([`bal_replay_dump::DumpError::Locked`]) instead of interleaving records.
//! - **Durable before acknowledged.** [`ChainDumper::commit`] returns the height the node may
//!   consider finished (reth's `FinishedHeight`) only after the records are fsynced and the
//!   manifest covers them. After a crash, [`ChainDumper::open`] resumes from the last durable record
//!   and reports its number and hash, the head the node's notifications restart from.
//!
//! # Metrics
//!
//! `bal_exex_blocks_dumped_total`, `bal_exex_bytes_written_total` and
//! `bal_exex_reexecution_duration_seconds` are recorded here through the `metrics` facade (the
//! node's exporter serves them); the node sets `bal_exex_lag_blocks` with [`record_lag`].

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
#![allow(clippy::result_large_err)]

mod dumper;
mod error;
mod range;
mod record;

pub use dumper::{BlockRange, ChainBlock, ChainDumper, CommitOutcome, record_lag};
pub use error::{ExexError, RecordError};
pub use range::dump_range;
pub use record::{HASH_WINDOW, last_block_hashes, record_block};

#[cfg(test)]
use bal_replay_state as _;
#[cfg(test)]
use bal_replay_synth as _;
#[cfg(test)]
use tempfile as _;
