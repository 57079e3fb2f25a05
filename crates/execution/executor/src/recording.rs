//! A database layer that records the first value read of every key.

use alloy_primitives::{
    Address, B256, U256,
    map::{B256Map, HashMap},
};
use bal_replay_dump::{AccountPre, BlockHashEntry, CodePre, PreState, StoragePre};
use revm::{
    Database, DatabaseRef,
    bytecode::Bytecode,
    primitives::{KECCAK_EMPTY, StorageKey, StorageValue},
    state::AccountInfo,
};
use std::collections::BTreeMap;

/// Wraps a [`DatabaseRef`] and remembers the first value returned for each key.
///
/// Placed under revm's `State` (which caches every key after its first read), the first read of a key
/// is its pre-block value, so after a block the recording is exactly the pre-state the block needs.
/// With recording off it is a plain pass-through, so one executor path serves both uses.
#[derive(Debug)]
pub struct RecordingDb<D> {
    inner: D,
    enabled: bool,
    accounts: HashMap<Address, Option<AccountInfo>>,
    storage: HashMap<(Address, U256), U256>,
    codes: B256Map<Bytecode>,
    block_hashes: BTreeMap<u64, B256>,
}

impl<D> RecordingDb<D> {
    /// Wraps `inner`; records only when `enabled`.
    pub fn new(inner: D, enabled: bool) -> Self {
        Self {
            inner,
            enabled,
            accounts: HashMap::default(),
            storage: HashMap::default(),
            codes: B256Map::default(),
            block_hashes: BTreeMap::new(),
        }
    }

    /// The recorded pre-state and block hashes, in canonical order.
    pub fn into_recorded(self) -> (PreState, Vec<BlockHashEntry>) {
        let mut pre = PreState::default();
        for (address, info) in self.accounts {
            match info {
                Some(info) => pre.accounts.push(AccountPre {
                    address,
                    nonce: info.nonce,
                    balance: info.balance,
                    code_hash: info.code_hash,
                }),
                None => pre.absent.push(address),
            }
        }
        pre.storage = self
            .storage
            .into_iter()
            .map(|((address, slot), value)| StoragePre {
                address,
                slot,
                value,
            })
            .collect();
        pre.codes = self
            .codes
            .into_iter()
            .filter(|(hash, _)| *hash != KECCAK_EMPTY)
            .map(|(hash, code)| CodePre {
                hash,
                code: code.original_bytes(),
            })
            .collect();
        pre.sort();
        let hashes = self
            .block_hashes
            .into_iter()
            .map(|(number, hash)| BlockHashEntry { number, hash })
            .collect();
        (pre, hashes)
    }
}

impl<D: DatabaseRef> Database for RecordingDb<D> {
    type Error = D::Error;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let mut info = self.inner.basic_ref(address)?;
        if self.enabled {
            // Code is loaded through `code_by_hash` (recorded there); an account read may carry it.
            if let Some(info) = info.as_mut()
                && let Some(code) = &info.code
                && info.code_hash != KECCAK_EMPTY
            {
                self.codes
                    .entry(info.code_hash)
                    .or_insert_with(|| code.clone());
            }
            self.accounts.entry(address).or_insert_with(|| info.clone());
        }
        Ok(info)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        let code = self.inner.code_by_hash_ref(code_hash)?;
        if self.enabled {
            self.codes.entry(code_hash).or_insert_with(|| code.clone());
        }
        Ok(code)
    }

    fn storage(
        &mut self,
        address: Address,
        index: StorageKey,
    ) -> Result<StorageValue, Self::Error> {
        let value = self.inner.storage_ref(address, index)?;
        if self.enabled {
            self.storage.entry((address, index)).or_insert(value);
        }
        Ok(value)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Self::Error> {
        let hash = self.inner.block_hash_ref(number)?;
        if self.enabled {
            self.block_hashes.insert(number, hash);
        }
        Ok(hash)
    }
}
