//! [`MemStore`]: the flat state in hash maps, with the same semantics as `bal_replay_rocks::RocksStore`.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use alloy_primitives::{Address, B256, Bytes, U256, map::HashMap};
use revm::bytecode::Bytecode;

use crate::{
    AppliedBlock, FlatAccount, FlatContents, KeyScheme, StateChanges, StateError, StateReader,
    StateWriter,
};

/// The maps behind one lock, so a commit replaces the whole state at once for readers.
#[derive(Debug, Default, Clone)]
struct Tables {
    accounts: HashMap<Address, FlatAccount>,
    /// Slots grouped by account, so wiping an account's storage is one removal.
    storage: HashMap<Address, HashMap<U256, U256>>,
    codes: HashMap<B256, Bytes>,
    block_hashes: HashMap<u64, B256>,
    applied_block: Option<u64>,
    applied_block_hash: Option<B256>,
    chain_id: Option<u64>,
}

impl Tables {
    /// Applies `changes` in the order [`StateChanges`] documents.
    fn apply(&mut self, changes: &StateChanges, block: AppliedBlock) {
        for address in &changes.wiped_storage {
            self.storage.remove(address);
        }
        for (address, account) in &changes.accounts {
            match account {
                Some(account) => {
                    self.accounts.insert(*address, *account);
                }
                None => {
                    self.accounts.remove(address);
                }
            }
        }
        for (address, slot, value) in &changes.storage {
            if value.is_zero() {
                if let Some(slots) = self.storage.get_mut(address) {
                    slots.remove(slot);
                    if slots.is_empty() {
                        self.storage.remove(address);
                    }
                }
            } else {
                self.storage
                    .entry(*address)
                    .or_default()
                    .insert(*slot, *value);
            }
        }
        for (hash, code) in &changes.codes {
            self.codes.insert(*hash, code.clone());
        }
        for (number, hash) in &changes.block_hashes {
            self.block_hashes.insert(*number, *hash);
        }
        self.applied_block = Some(block.number);
        self.applied_block_hash = block.hash;
        if block.chain_id.is_some() {
            self.chain_id = block.chain_id;
        }
    }
}

/// A flat state in memory, for tests and in-memory baselines. Safe to share across threads.
///
/// Keys are held as addresses and slots whatever the [`KeyScheme`]; the scheme only decides how
/// [`MemStore::dump_all`] encodes them, so the dump compares equal to a `bal_replay_rocks::RocksStore` of
/// that scheme.
#[derive(Debug, Default)]
pub struct MemStore {
    tables: RwLock<Tables>,
    key_scheme: KeyScheme,
    /// Codes analysed for revm, each once: a code's hash names its bytes for good, so an entry
    /// never goes stale, and a state executed again (a benchmark's warm repeats) analyses none.
    analysed: RwLock<HashMap<B256, Bytecode>>,
}

impl MemStore {
    /// An empty store whose dumps use [`KeyScheme::Plain`] keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose dumps use `key_scheme`.
    pub fn with_key_scheme(key_scheme: KeyScheme) -> Self {
        Self {
            tables: RwLock::default(),
            key_scheme,
            analysed: RwLock::default(),
        }
    }

    /// A plain-keyed store holding `changes` applied to an empty state, at `applied_block`.
    pub fn from_changes(changes: &StateChanges, applied_block: u64) -> Self {
        let mut tables = Tables::default();
        tables.apply(changes, AppliedBlock::number(applied_block));
        Self {
            analysed: RwLock::default(),
            tables: RwLock::new(tables),
            key_scheme: KeyScheme::Plain,
        }
    }

    /// A plain-keyed store holding exactly `contents` (e.g. a RocksDB state's `dump_all`), for
    /// in-memory baselines over the same state. Hashed contents cannot be turned back into addresses.
    pub fn from_contents(contents: &FlatContents) -> Result<Self, StateError> {
        if contents.key_scheme != KeyScheme::Plain {
            return Err(StateError::SchemeMismatch {
                path: "<in-memory>".into(),
                expected: KeyScheme::Plain,
                found: contents.key_scheme,
            });
        }
        let corrupt = |table, key: &[u8], reason: &str| StateError::Corrupt {
            table,
            key: alloy_primitives::hex::encode_prefixed(key),
            reason: reason.into(),
        };
        let mut changes = StateChanges::default();
        for (key, account) in &contents.accounts {
            let address: [u8; 20] = key.as_slice().try_into().map_err(|_| {
                corrupt(
                    crate::cf::ACCOUNTS,
                    key,
                    "plain account key is not 20 bytes",
                )
            })?;
            changes
                .accounts
                .push((Address::from(address), Some(*account)));
        }
        for (key, value) in &contents.storage {
            if key.len() != 52 {
                return Err(corrupt(
                    crate::cf::STORAGE,
                    key,
                    "plain storage key is not 52 bytes",
                ));
            }
            let address = Address::from_slice(&key[..20]);
            let slot = U256::from_be_slice(&key[20..]);
            changes.storage.push((address, slot, *value));
        }
        changes.codes = contents.codes.clone();
        changes.block_hashes = contents.block_hashes.clone();
        let mut tables = Tables::default();
        tables.apply(
            &changes,
            AppliedBlock::number(contents.applied_block.unwrap_or_default()),
        );
        if contents.applied_block.is_none() {
            tables.applied_block = None;
        }
        Ok(Self {
            analysed: RwLock::default(),
            tables: RwLock::new(tables),
            key_scheme: KeyScheme::Plain,
        })
    }

    /// The scheme [`MemStore::dump_all`] encodes keys with.
    pub fn key_scheme(&self) -> KeyScheme {
        self.key_scheme
    }

    // A poisoned lock means a thread panicked while holding it, possibly halfway through a commit;
    // the contents may break the commit's atomicity, so they are refused rather than recovered.
    fn read(&self) -> Result<RwLockReadGuard<'_, Tables>, StateError> {
        self.tables.read().map_err(|_| StateError::Poisoned)
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Tables>, StateError> {
        self.tables.write().map_err(|_| StateError::Poisoned)
    }

    /// Every entry in the canonical order of [`FlatContents`], keys encoded in the store's scheme.
    pub fn dump_all(&self) -> Result<FlatContents, StateError> {
        let tables = self.read()?;
        let scheme = self.key_scheme;
        let mut accounts: Vec<_> = tables
            .accounts
            .iter()
            .map(|(address, account)| (scheme.account_key(*address).to_vec(), *account))
            .collect();
        let mut storage: Vec<_> = tables
            .storage
            .iter()
            .flat_map(|(address, slots)| {
                slots.iter().map(move |(slot, value)| {
                    (scheme.storage_key(*address, *slot).to_vec(), *value)
                })
            })
            .collect();
        let mut codes: Vec<_> = tables
            .codes
            .iter()
            .map(|(hash, code)| (*hash, code.clone()))
            .collect();
        let mut block_hashes: Vec<_> = tables
            .block_hashes
            .iter()
            .map(|(number, hash)| (*number, *hash))
            .collect();
        let applied_block = tables.applied_block;
        drop(tables);

        accounts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        storage.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        codes.sort_unstable_by_key(|(hash, _)| *hash);
        block_hashes.sort_unstable_by_key(|(number, _)| *number);
        Ok(FlatContents {
            key_scheme: scheme,
            accounts,
            storage,
            codes,
            block_hashes,
            applied_block,
        })
    }

    /// [`FlatContents::digest`] of [`MemStore::dump_all`].
    pub fn content_digest(&self) -> Result<B256, StateError> {
        Ok(self.dump_all()?.digest())
    }
}

impl StateReader for MemStore {
    fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
        Ok(self.read()?.accounts.get(&address).copied())
    }

    fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
        Ok(self
            .read()?
            .storage
            .get(&address)
            .and_then(|slots| slots.get(&slot))
            .copied()
            .unwrap_or(U256::ZERO))
    }

    fn code(&self, hash: B256) -> Result<Option<Bytes>, StateError> {
        Ok(self.read()?.codes.get(&hash).cloned())
    }

    fn bytecode(&self, hash: B256) -> Result<Option<Bytecode>, StateError> {
        if let Some(code) = self
            .analysed
            .read()
            .map_err(|_| StateError::Poisoned)?
            .get(&hash)
        {
            return Ok(Some(code.clone()));
        }
        let Some(bytes) = self.code(hash)? else {
            return Ok(None);
        };
        let code = crate::decode_code(hash, bytes)?;
        self.analysed
            .write()
            .map_err(|_| StateError::Poisoned)?
            .insert(hash, code.clone());
        Ok(Some(code))
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        Ok(self.read()?.block_hashes.get(&number).copied())
    }

    fn applied_block(&self) -> Result<Option<u64>, StateError> {
        Ok(self.read()?.applied_block)
    }

    fn applied_block_hash(&self) -> Result<Option<B256>, StateError> {
        Ok(self.read()?.applied_block_hash)
    }

    fn chain_id(&self) -> Result<Option<u64>, StateError> {
        Ok(self.read()?.chain_id)
    }
}

impl StateWriter for MemStore {
    /// Applies the changes under the write lock, so readers see all of them or none.
    fn commit_block(&self, changes: &StateChanges, block: AppliedBlock) -> Result<(), StateError> {
        self.write()?.apply(changes, block);
        Ok(())
    }
}
