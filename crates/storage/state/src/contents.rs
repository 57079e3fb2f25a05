//! The whole content of a flat state in canonical order, to compare stores and to fingerprint them.

use alloy_primitives::{B256, Bytes, Keccak256, U256, hex, keccak256};

use crate::{FlatAccount, KeyScheme, StateError};

/// Everything a flat state holds, keyed and sorted the same way for every store, so two stores can
/// be compared whole with `==` (see [`crate::MemStore::dump_all`], `bal_replay_rocks::RocksStore::dump_all`).
///
/// Keys are the encoded keys of the store's [`KeyScheme`] (see [`KeyScheme::account_key`],
/// [`KeyScheme::storage_key`]); every list is sorted by key bytes (block hashes by number).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FlatContents {
    /// How the account and storage keys are encoded.
    pub key_scheme: KeyScheme,
    /// Accounts by encoded account key.
    pub accounts: Vec<(Vec<u8>, FlatAccount)>,
    /// Non-zero slot values by encoded storage key.
    pub storage: Vec<(Vec<u8>, U256)>,
    /// Codes by hash.
    pub codes: Vec<(B256, Bytes)>,
    /// Block hashes by number.
    pub block_hashes: Vec<(u64, B256)>,
    /// The applied height.
    pub applied_block: Option<u64>,
}

impl FlatContents {
    /// keccak256 over the canonical serialization of the contents, a fingerprint that is equal for
    /// equal contents whichever store holds them.
    ///
    /// Serialization (all integers big-endian): the scheme name's length (u8) and bytes; then
    /// for each of accounts, storage, codes, block hashes: the entry count (u64) and the entries —
    /// account: key length (u32) ++ key ++ the 72-byte account value; slot: key length (u32) ++ key
    /// ++ the value (32); code: hash (32) ++ length (u64) ++ bytes; block hash: number (u64) ++
    /// hash (32); finally the applied height as 0x00, or 0x01 ++ number (u64).
    pub fn digest(&self) -> B256 {
        let mut h = Keccak256::new();
        let name = self.key_scheme.name().as_bytes();
        h.update([name.len() as u8]);
        h.update(name);

        h.update((self.accounts.len() as u64).to_be_bytes());
        for (key, account) in &self.accounts {
            h.update((key.len() as u32).to_be_bytes());
            h.update(key);
            h.update(account.to_bytes());
        }
        h.update((self.storage.len() as u64).to_be_bytes());
        for (key, value) in &self.storage {
            h.update((key.len() as u32).to_be_bytes());
            h.update(key);
            h.update(value.to_be_bytes::<32>());
        }
        h.update((self.codes.len() as u64).to_be_bytes());
        for (hash, code) in &self.codes {
            h.update(hash);
            h.update((code.len() as u64).to_be_bytes());
            h.update(code);
        }
        h.update((self.block_hashes.len() as u64).to_be_bytes());
        for (number, hash) in &self.block_hashes {
            h.update(number.to_be_bytes());
            h.update(hash);
        }
        match self.applied_block {
            None => h.update([0u8]),
            Some(n) => {
                h.update([1u8]);
                h.update(n.to_be_bytes());
            }
        }
        h.finalize()
    }

    /// The same contents under [`KeyScheme::Hashed`]: what a plain-to-hashed migration must produce,
    /// so its result can be checked with `==` or [`FlatContents::digest`]. Hashed contents are
    /// returned as they are. Fails with [`StateError::Corrupt`] on a plain key of the wrong length.
    pub fn to_hashed(&self) -> Result<Self, StateError> {
        if self.key_scheme == KeyScheme::Hashed {
            return Ok(self.clone());
        }
        let bad_key = |table: &'static str, key: &[u8], expected: usize| StateError::Corrupt {
            table,
            key: hex::encode_prefixed(key),
            reason: format!("plain key is {} bytes, expected {expected}", key.len()),
        };
        let mut accounts = self
            .accounts
            .iter()
            .map(|(key, account)| {
                if key.len() != 20 {
                    return Err(bad_key(crate::cf::ACCOUNTS, key, 20));
                }
                Ok((keccak256(key).to_vec(), *account))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut storage = self
            .storage
            .iter()
            .map(|(key, value)| {
                if key.len() != 52 {
                    return Err(bad_key(crate::cf::STORAGE, key, 52));
                }
                let mut hashed = Vec::with_capacity(64);
                hashed.extend_from_slice(keccak256(&key[..20]).as_slice());
                hashed.extend_from_slice(keccak256(&key[20..]).as_slice());
                Ok((hashed, *value))
            })
            .collect::<Result<Vec<_>, _>>()?;
        accounts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        storage.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Self {
            key_scheme: KeyScheme::Hashed,
            accounts,
            storage,
            codes: self.codes.clone(),
            block_hashes: self.block_hashes.clone(),
            applied_block: self.applied_block,
        })
    }
}
