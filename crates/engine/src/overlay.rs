//! The changes of a batch so far, as a database layer (sequential batches).

use alloy_primitives::{
    Address, B256, Bytes, U256,
    map::{HashMap, HashSet},
};
use bal_replay_state::{AccountFlat, StateChanges};
use revm::{
    DatabaseRef,
    bytecode::Bytecode,
    primitives::{StorageKey, StorageValue},
    state::AccountInfo,
};
use std::collections::BTreeMap;

/// Accumulated changes of the blocks executed so far in a batch.
///
/// Applying changes keeps the commit order of [`StateChanges`] (wipes, then accounts and slots), so
/// [`BatchOverlay::to_changes`] is the batch's net change, committed once at its end.
#[derive(Debug, Default, Clone)]
pub struct BatchOverlay {
    accounts: HashMap<Address, Option<AccountFlat>>,
    storage: HashMap<(Address, U256), U256>,
    wiped: HashSet<Address>,
    codes: HashMap<B256, Bytes>,
    block_hashes: BTreeMap<u64, B256>,
}

impl BatchOverlay {
    /// Applies one block's changes on top of the earlier ones.
    pub fn apply(&mut self, changes: &StateChanges) {
        for address in &changes.wiped_storage {
            self.wiped.insert(*address);
            self.storage.retain(|(a, _), _| a != address);
        }
        for (address, account) in &changes.accounts {
            self.accounts.insert(*address, *account);
        }
        for (address, slot, value) in &changes.storage {
            self.storage.insert((*address, *slot), *value);
        }
        for (hash, code) in &changes.codes {
            self.codes.insert(*hash, code.clone());
        }
        for (number, hash) in &changes.block_hashes {
            self.block_hashes.insert(*number, *hash);
        }
    }

    /// The net change of everything applied, in deterministic order.
    pub fn to_changes(&self) -> StateChanges {
        let mut changes = StateChanges {
            accounts: self.accounts.iter().map(|(a, v)| (*a, *v)).collect(),
            wiped_storage: self.wiped.iter().copied().collect(),
            storage: self
                .storage
                .iter()
                .map(|((a, s), v)| (*a, *s, *v))
                .collect(),
            codes: self.codes.iter().map(|(h, c)| (*h, c.clone())).collect(),
            block_hashes: self.block_hashes.iter().map(|(n, h)| (*n, *h)).collect(),
        };
        changes.accounts.sort_unstable_by_key(|(a, _)| *a);
        changes.wiped_storage.sort_unstable();
        changes.storage.sort_unstable_by_key(|(a, s, _)| (*a, *s));
        changes.codes.sort_unstable_by_key(|(h, _)| *h);
        changes
    }

    /// A database reading this overlay over `inner`.
    pub fn over<'a, D>(&'a self, inner: &'a D) -> OverlayDb<'a, D> {
        OverlayDb {
            overlay: self,
            inner,
        }
    }
}

/// [`BatchOverlay`] over another database.
#[derive(Debug)]
pub struct OverlayDb<'a, D> {
    overlay: &'a BatchOverlay,
    inner: &'a D,
}

impl<D: DatabaseRef> DatabaseRef for OverlayDb<'_, D> {
    type Error = D::Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        match self.overlay.accounts.get(&address) {
            Some(account) => Ok(account.map(|a| a.to_account_info())),
            None => self.inner.basic_ref(address),
        }
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        match self.overlay.codes.get(&code_hash) {
            Some(code) => Ok(Bytecode::new_raw(code.clone())),
            None => self.inner.code_by_hash_ref(code_hash),
        }
    }

    fn storage_ref(
        &self,
        address: Address,
        index: StorageKey,
    ) -> Result<StorageValue, Self::Error> {
        if let Some(value) = self.overlay.storage.get(&(address, index)) {
            return Ok(*value);
        }
        if self.overlay.wiped.contains(&address) {
            return Ok(U256::ZERO);
        }
        self.inner.storage_ref(address, index)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        match self.overlay.block_hashes.get(&number) {
            Some(hash) => Ok(*hash),
            None => self.inner.block_hash_ref(number),
        }
    }
}
