//! Flat state: the account, storage, code and block-hash tables a replay reads, behind one interface.
//!
//! A flat state maps each key straight to its value (no trie). Callers depend on the
//! [`StateReader`] / [`StateWriter`] traits, never on a store, and get revm's `DatabaseRef` through
//! [`StateDatabase`]. This crate holds the traits, the byte encodings every store shares
//! ([`codec`], table names in [`cf`]), [`MemStore`] (in memory, for tests and in-memory baselines)
//! and [`MemOverlay`] (makes any read-only store committable by keeping commits in memory). It
//! links no database: the RocksDB store is `bal-replay-rocks`, reth's MDBX read in place is
//! `bal-replay-mdbx-state`, so the executor and the engine build without either.
//!
//! Invariant of [`StateWriter::commit`]: the changes of a whole batch and the new applied block number
//! land together or not at all. A reader sees either the state before the commit or after it.
//!
//! Every store encodes keys and values as [`codec`] does (the layout table is in
//! `bal-replay-rocks`' crate doc): [`MemStore::dump_all`] and the RocksDB store's `dump_all` return
//! the same [`FlatContents`] for the same history, and [`FlatContents::digest`] fingerprints it.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod cf;
mod change_map;
pub mod codec;
mod contents;
mod database;
mod error;
mod mem;
mod overlay;
mod types;

pub use change_map::ChangeMap;
pub use codec::{
    ACCOUNT_VALUE_LEN, StateKey, StorageValueBytes, decode_code, encode_storage_value,
};
pub use contents::FlatContents;
pub use database::StateDatabase;
pub use error::{BackendError, StateError};
pub use mem::MemStore;
pub use overlay::MemOverlay;
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
