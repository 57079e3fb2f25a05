//! The changes of a batch so far, as a database layer (sequential batches).

use alloy_primitives::{Address, B256};
use bal_replay_state::{ChangeMap, StateChanges};
use revm::{
    DatabaseRef,
    bytecode::Bytecode,
    primitives::{StorageKey, StorageValue},
    state::AccountInfo,
};

/// Accumulated changes of the blocks executed so far in a batch: the state crate's
/// [`ChangeMap`] (so [`ChangeMap::to_changes`] is the batch's net change, committed once at its
/// end), readable by revm over the pre-batch state with [`BatchOverlay::over`].
#[derive(Debug, Default, Clone)]
pub struct BatchOverlay(ChangeMap);

impl BatchOverlay {
    /// Applies one block's changes on top of the earlier ones.
    pub fn apply(&mut self, changes: &StateChanges) {
        self.0.apply(changes);
    }

    /// The net change of everything applied, in deterministic order.
    pub fn to_changes(&self) -> StateChanges {
        self.0.to_changes()
    }

    /// A database reading this overlay over `inner`.
    pub fn over<'a, D>(&'a self, inner: &'a D) -> OverlayDb<'a, D> {
        OverlayDb {
            overlay: &self.0,
            inner,
        }
    }
}

/// [`BatchOverlay`] over another database.
#[derive(Debug)]
pub struct OverlayDb<'a, D> {
    overlay: &'a ChangeMap,
    inner: &'a D,
}

impl<D: DatabaseRef> DatabaseRef for OverlayDb<'_, D> {
    type Error = D::Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        match self.overlay.account(address) {
            Some(account) => Ok(account.map(|a| a.to_account_info())),
            None => self.inner.basic_ref(address),
        }
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        match self.overlay.code(code_hash) {
            // Committed code was deployed by execution or set by a BAL `check_bal` accepted.
            Some(code) => Ok(Bytecode::new_raw(code.clone())),
            None => self.inner.code_by_hash_ref(code_hash),
        }
    }

    fn storage_ref(
        &self,
        address: Address,
        index: StorageKey,
    ) -> Result<StorageValue, Self::Error> {
        if let Some(value) = self.overlay.storage(address, index) {
            return Ok(value);
        }
        self.inner.storage_ref(address, index)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        match self.overlay.block_hash(number) {
            Some(hash) => Ok(hash),
            None => self.inner.block_hash_ref(number),
        }
    }
}
