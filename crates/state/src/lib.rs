//! Flat state: the account, storage, code and block-hash tables a replay reads, behind one interface.
//!
//! A flat state maps each key straight to its value (no trie). Two stores implement it:
//! [`RocksStore`] (on disk, tuned for point reads from many threads) and [`MemStore`] (in memory, for
//! tests and in-memory baselines). [`MemOverlay`] makes any read-only store (reth's MDBX, read in
//! place by `bal-replay-mdbx-state`) committable by keeping commits in memory. Callers depend on the
//! [`StateReader`] / [`StateWriter`] traits, never on a store, and get revm's `DatabaseRef` through
//! [`StateDatabase`].
//!
//! Invariant of [`StateWriter::commit`]: the changes of a whole batch and the new applied block number
//! land together or not at all. A reader sees either the state before the commit or after it.
//!
//! # On-disk layout
//!
//! [`RocksStore`] keeps one RocksDB column family per table (names in [`cf`]). Integers are
//! big-endian, so key order is numeric order. Under [`KeyScheme::Hashed`] (reth's v2 layout) the
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
//! stored key ([`RocksStore::account_by_key`]), never through RocksDB itself, so the encodings above
//! live in this crate alone.
//!
//! [`MemStore`] has the same semantics; [`MemStore::dump_all`] and [`RocksStore::dump_all`] return
//! the same [`FlatContents`] (keys encoded as above) for the same history, and
//! [`FlatContents::digest`] fingerprints it.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod cf;
mod change_map;
mod codec;
mod contents;
mod database;
mod encoded;
mod error;
mod ingest;
pub mod io_uring;
mod mem;
mod overlay;
mod rocks;
mod types;

pub use change_map::ChangeMap;
pub use codec::{
    ACCOUNT_VALUE_LEN, StateKey, StorageValueBytes, decode_code, encode_storage_value,
};
pub use contents::FlatContents;
pub use database::StateDatabase;
pub use encoded::{EncodedBatch, EncodedCursor, EncodedSnapshot};
pub use error::StateError;
pub use mem::MemStore;
pub use overlay::MemOverlay;
pub use rocks::{FlatEntry, RocksOptions, RocksReadCounters, RocksStore};
pub use types::{AppliedBlock, FlatAccount, KeyScheme, StateChanges};

use alloy_primitives::{Address, B256, Bytes, U256};

/// Read access to a flat state. Implementations are safe to share across threads.
pub trait StateReader: Send + Sync {
    /// The account at `address`, or `None` if it does not exist.
    fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError>;
    /// The value of `slot` of `address` (zero when absent).
    fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError>;
    /// The code whose keccak256 is `hash`, or `None` if unknown.
    fn code(&self, hash: B256) -> Result<Option<Bytes>, StateError>;
    /// The same code analysed for revm ([`decode_code`]); a store that keeps analysed code (the
    /// in-memory one) overrides it, so revm's jump-table analysis runs once per code, not per block.
    fn bytecode(&self, hash: B256) -> Result<Option<revm::bytecode::Bytecode>, StateError> {
        self.code(hash)?
            .map(|bytes| decode_code(hash, bytes))
            .transpose()
    }
    /// The hash of block `number`, or `None` if unknown.
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError>;
    /// The number of the last block whose changes this state holds, if any.
    fn applied_block(&self) -> Result<Option<u64>, StateError>;

    /// The hash of the block at [`StateReader::applied_block`], if the store recorded it. `None` for
    /// stores that do not know it (reth's MDBX read in place, states written before the hash was
    /// recorded, commits that named no hash).
    fn applied_block_hash(&self) -> Result<Option<B256>, StateError> {
        Ok(None)
    }

    /// The chain whose blocks this state holds, if the store recorded it.
    fn chain_id(&self) -> Result<Option<u64>, StateError> {
        Ok(None)
    }

    /// Where the state lives (its directory), for errors that must name it; `None` for a state
    /// in memory.
    fn location(&self) -> Option<&std::path::Path> {
        None
    }

    /// The accounts of `addresses`, in order. Stores that can batch lookups (RocksDB multi-get)
    /// override this; the default reads one by one.
    fn accounts_many(&self, addresses: &[Address]) -> Result<Vec<Option<FlatAccount>>, StateError> {
        addresses.iter().map(|a| self.account(*a)).collect()
    }

    /// The values of `(address, slot)` pairs, in order (zero when absent). Batched where the store
    /// can; the default reads one by one.
    fn storage_many(&self, slots: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        slots.iter().map(|(a, s)| self.storage(*a, *s)).collect()
    }
}

/// Write access: one atomic commit of a batch of changes together with the new applied height.
pub trait StateWriter {
    /// Applies `changes` and records `block` (height, hash, chain), atomically.
    fn commit_block(&self, changes: &StateChanges, block: AppliedBlock) -> Result<(), StateError>;

    /// Applies `changes` and records `applied_block` with no hash, atomically (a hash recorded for
    /// an earlier height is removed, so it can never be taken for this height's).
    fn commit(&self, changes: &StateChanges, applied_block: u64) -> Result<(), StateError> {
        self.commit_block(changes, AppliedBlock::number(applied_block))
    }
}

/// `StateReader` for a pointer to one: every method forwards, so the batched reads a store
/// overrides (RocksDB's multi-gets) stay its own.
macro_rules! forward_state_reader {
    ($($pointer:ty),+) => {$(
        impl<T: StateReader + ?Sized> StateReader for $pointer {
            fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
                (**self).account(address)
            }
            fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
                (**self).storage(address, slot)
            }
            fn code(&self, hash: B256) -> Result<Option<Bytes>, StateError> {
                (**self).code(hash)
            }
            fn bytecode(
                &self,
                hash: B256,
            ) -> Result<Option<revm::bytecode::Bytecode>, StateError> {
                (**self).bytecode(hash)
            }
            fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
                (**self).block_hash(number)
            }
            fn applied_block(&self) -> Result<Option<u64>, StateError> {
                (**self).applied_block()
            }
            fn applied_block_hash(&self) -> Result<Option<B256>, StateError> {
                (**self).applied_block_hash()
            }
            fn chain_id(&self) -> Result<Option<u64>, StateError> {
                (**self).chain_id()
            }
            fn location(&self) -> Option<&std::path::Path> {
                (**self).location()
            }
            fn accounts_many(
                &self,
                addresses: &[Address],
            ) -> Result<Vec<Option<FlatAccount>>, StateError> {
                (**self).accounts_many(addresses)
            }
            fn storage_many(&self, slots: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
                (**self).storage_many(slots)
            }
        }
    )+};
}

forward_state_reader!(std::sync::Arc<T>, &T);
