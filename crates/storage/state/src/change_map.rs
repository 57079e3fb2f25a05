//! [`ChangeMap`]: changes applied one [`StateChanges`] after another, readable by key.

use std::collections::{BTreeMap, HashMap, HashSet};

use alloy_primitives::{Address, B256, Bytes, U256};

use crate::{FlatAccount, StateChanges};

/// What a sequence of commits changed, relative to the state under them: the one in-memory form
/// of "changes so far" that both [`crate::MemOverlay`] (commits over a read-only store) and the
/// engine's sequential batches (a batch's earlier blocks) read through.
///
/// [`ChangeMap::apply`] keeps the commit order of [`StateChanges`] (wipes, then accounts and
/// slots), so the lookups answer as a store that received the same commits would, and
/// [`ChangeMap::to_changes`] is their net change.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChangeMap {
    /// `None`: the account was deleted.
    accounts: HashMap<Address, Option<FlatAccount>>,
    /// Accounts whose whole earlier storage was wiped: their slots not in `storage` read zero.
    wiped: HashSet<Address>,
    /// Slot values written, zeros included (a zero hides the value under it).
    storage: HashMap<(Address, U256), U256>,
    codes: HashMap<B256, Bytes>,
    block_hashes: BTreeMap<u64, B256>,
}

impl ChangeMap {
    /// Applies one commit's changes on top of the earlier ones.
    pub fn apply(&mut self, changes: &StateChanges) {
        if !changes.wiped_storage.is_empty() {
            let wiped: HashSet<Address> = changes.wiped_storage.iter().copied().collect();
            self.storage
                .retain(|(address, _), _| !wiped.contains(address));
            self.wiped.extend(wiped);
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
        self.insert_block_hashes(changes.block_hashes.iter().copied());
    }

    /// Adds block hashes without other changes.
    pub fn insert_block_hashes(&mut self, hashes: impl IntoIterator<Item = (u64, B256)>) {
        self.block_hashes.extend(hashes);
    }

    /// The account as changed: `Some(None)` if deleted, `None` if not changed here.
    pub fn account(&self, address: Address) -> Option<Option<FlatAccount>> {
        self.accounts.get(&address).copied()
    }

    /// The slot as changed: its written value, zero if its account was wiped since, `None` if not
    /// changed here.
    pub fn storage(&self, address: Address, slot: U256) -> Option<U256> {
        match self.storage.get(&(address, slot)) {
            Some(value) => Some(*value),
            None => self.wiped.contains(&address).then_some(U256::ZERO),
        }
    }

    /// A code added here.
    pub fn code(&self, hash: B256) -> Option<&Bytes> {
        self.codes.get(&hash)
    }

    /// A block hash added here.
    pub fn block_hash(&self, number: u64) -> Option<B256> {
        self.block_hashes.get(&number).copied()
    }

    /// Distinct keys held (accounts, slots, codes, block hashes).
    pub fn len(&self) -> usize {
        self.accounts.len() + self.storage.len() + self.codes.len() + self.block_hashes.len()
    }

    /// Whether nothing was applied or inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.wiped.is_empty()
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
}
