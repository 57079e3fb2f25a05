//! The flat state on disk: [`RocksStore`], RocksDB tuned for point reads from many threads,
//! implementing `bal-replay-state`'s [`StateReader`](bal_replay_state::StateReader) and
//! [`StateWriter`](bal_replay_state::StateWriter).
//!
//! # On-disk layout
//!
//! One RocksDB column family per table (names in [`bal_replay_state::cf`]). Integers are
//! big-endian, so key order is numeric order. Under `KeyScheme::Hashed` (reth's v2 layout) the
//! address and slot in keys are replaced by their keccak256; values are the same in both schemes.
//!
//! | column family  | key (plain)                 | key (hashed)                        | value                                                |
//! |----------------|-----------------------------|-------------------------------------|------------------------------------------------------|
//! | `accounts`     | address (20)                | keccak(address) (32)                | nonce u64 (8) ++ balance (32) ++ code hash (32) = 72 |
//! | `storage`      | address (20) ++ slot (32)   | keccak(address) ++ keccak(slot) (64)| value, leading zero bytes trimmed (1..=32); zero = absent |
//! | `code`         | code hash (32)              | same                                | raw code                                             |
//! | `block_hashes` | block number u64 (8)        | same                                | block hash (32)                                      |
//! | `meta`         | `applied_block`             | same                                | u64 (8)                                              |
//! |                | `applied_block_hash`        | same                                | hash of the applied block (32); absent when unknown  |
//! |                | `chain_id`                  | same                                | u64 (8); absent until a commit names the chain       |
//! |                | `key_scheme`                | same                                | `plain` / `hashed`                                   |
//! |                | `format_version`            | same                                | u32 (4), currently 1                                 |
//!
//! A replay refuses a state lacking `applied_block_hash` or `chain_id` unless told to trust it
//! (`bal-replay --trust-state`): without them nothing shows a dump builds on the state.
//!
//! Every storage key of an account is its account key followed by exactly 32 bytes, so wiping an
//! account's storage is one range deletion. A commit is one `WriteBatch`: wipes, accounts, slots,
//! codes, block hashes and `applied_block` with its hash (and the chain id when the commit names it),
//! in that order, so the recorded height and hash never disagree.
//!
//! Tools that move whole tables (the migration's bulk copy and its verification, the point-read
//! bench) do it through [`RocksStore::encoded_batch`], [`RocksStore::encoded_snapshot`] and reads by
//! stored key ([`RocksStore::account_by_key`]), never through RocksDB itself, so the encodings stay
//! those of `bal_replay_state::codec`. [`RocksStore::dump_all`] equals the in-memory store's
//! `dump_all` for the same history.
//!
//! [`ScratchState`] is a run's throwaway copy of a state (a checkpoint beside it), so every run of a
//! bench or `run --rewind` starts from the same pre-state.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod encoded;
mod ingest;
pub mod io_uring;
mod scratch;
mod store;

pub use encoded::{EncodedBatch, EncodedCursor, EncodedSnapshot};
pub use scratch::{ScratchError, ScratchState};
pub use store::{FlatEntry, RocksOptions, RocksReadCounters, RocksStore, TableLayout};
