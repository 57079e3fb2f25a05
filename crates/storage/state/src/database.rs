//! [`StateDatabase`]: any [`StateReader`] as revm's `DatabaseRef` (and `Database`).

use alloy_primitives::{Address, B256};
use revm::{
    bytecode::Bytecode,
    database_interface::{Database, DatabaseRef},
    primitives::{KECCAK_EMPTY, StorageKey, StorageValue},
    state::AccountInfo,
};

use crate::{StateError, StateReader};

/// Presents a flat state to revm. Reads go straight to the store; caching is left to revm's
/// `State` / `CacheDB` on top, which know what a block has already touched.
#[derive(Debug, Clone, Default)]
pub struct StateDatabase<S> {
    inner: S,
}

impl<S: StateReader> StateDatabase<S> {
    /// Wraps `inner`.
    pub const fn new(inner: S) -> Self {
        Self { inner }
    }

    /// The wrapped store.
    pub const fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: StateReader> DatabaseRef for StateDatabase<S> {
    type Error = StateError;

    /// The account without its code: revm fetches code through `code_by_hash_ref` only when it
    /// runs or inspects it, which most touched accounts (transfers, balance reads) never need.
    /// Accounts without code carry the empty bytecode, so revm does not ask for it at all.
    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, StateError> {
        Ok(self.inner.account(address)?.map(|a| a.to_account_info()))
    }

    /// The code with hash `code_hash`. A hash the state lacks is an error, not empty code: an
    /// account points at it, so the flat state is incomplete and executing on would diverge.
    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, StateError> {
        if code_hash == KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        self.inner
            .bytecode(code_hash)?
            .ok_or(StateError::MissingCode { hash: code_hash })
    }

    fn storage_ref(&self, address: Address, index: StorageKey) -> Result<StorageValue, StateError> {
        self.inner.storage(address, index)
    }

    /// The hash of block `number`; unknown numbers are an error, since BLOCKHASH within range must
    /// return the real hash and the state is expected to hold the last 256.
    fn block_hash_ref(&self, number: u64) -> Result<B256, StateError> {
        self.inner
            .block_hash(number)?
            .ok_or(StateError::MissingBlockHash { number })
    }
}

// Delegates to `DatabaseRef`, so the wrapper also plugs in where revm wants a `Database` by value
// (e.g. `State::builder().with_database(..)`) without `WrapDatabaseRef`.
impl<S: StateReader> Database for StateDatabase<S> {
    type Error = StateError;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, StateError> {
        self.basic_ref(address)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, StateError> {
        self.code_by_hash_ref(code_hash)
    }

    fn storage(&mut self, address: Address, index: StorageKey) -> Result<StorageValue, StateError> {
        self.storage_ref(address, index)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, StateError> {
        self.block_hash_ref(number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemStore, StateChanges};
    use alloy_primitives::{Bytes, keccak256};

    /// Code starting with EIP-7702's marker that is no designation: revm's `Bytecode::new_raw`
    /// panics on it, so a state holding it is reported corrupt, by hash.
    #[test]
    fn code_revm_cannot_load_is_a_corrupt_state_not_a_panic() {
        let bad = Bytes::from_static(&[0xef, 0x01, 0x00, 0x60, 0x00]);
        let good = Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0xf3]);
        let changes = StateChanges {
            codes: vec![
                (keccak256(&bad), bad.clone()),
                (keccak256(&good), good.clone()),
            ],
            ..Default::default()
        };
        let db = StateDatabase::new(MemStore::from_changes(&changes, 0));
        match db.code_by_hash_ref(keccak256(&bad)) {
            Err(StateError::MalformedCode { hash, defect }) => {
                assert_eq!(hash, keccak256(&bad));
                assert_eq!((defect.len, defect.version), (5, Some(0)));
            }
            other => panic!("expected a malformed code error, got {other:?}"),
        }
        assert_eq!(
            db.code_by_hash_ref(keccak256(&good))
                .unwrap()
                .original_bytes(),
            good
        );
    }

    /// The in-memory store analyses each code once: every later load, through a reference as
    /// the executor holds it, gets the same jump table, not a new analysis.
    #[test]
    fn the_in_memory_store_analyses_each_code_once() {
        let code = Bytes::from_static(&[0x60, 0x04, 0x56, 0x00, 0x5b, 0x00]);
        let changes = StateChanges {
            codes: vec![(keccak256(&code), code.clone())],
            ..Default::default()
        };
        let store = MemStore::from_changes(&changes, 0);
        let first = StateDatabase::new(&store)
            .code_by_hash_ref(keccak256(&code))
            .unwrap();
        let again = StateDatabase::new(&store)
            .code_by_hash_ref(keccak256(&code))
            .unwrap();
        assert_eq!(first.original_bytes(), code);
        let (a, b) = (
            first.legacy_jump_table().unwrap(),
            again.legacy_jump_table().unwrap(),
        );
        assert!(a.is_valid(4) && !a.is_valid(1));
        assert!(std::ptr::eq(a.as_slice().as_ptr(), b.as_slice().as_ptr()));
        assert!(matches!(
            StateDatabase::new(&store).code_by_hash_ref(B256::repeat_byte(1)),
            Err(StateError::MissingCode { .. })
        ));
    }
}
