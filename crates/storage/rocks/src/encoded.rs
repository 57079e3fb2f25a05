//! Access to a [`RocksStore`] by its stores' own keys and encoded values (see [`cf`]), for the tools
//! that move whole tables (the migration's bulk copy and its verification, the point-read bench)
//! without decoding every entry into a [`FlatContents`](bal_replay_state::FlatContents). The encodings stay `bal_replay_state::codec`'s: callers
//! name tables by [`cf`] and pass values encoded by [`FlatAccount::to_bytes`] and
//! [`encode_storage_value`](bal_replay_state::encode_storage_value).

use alloy_primitives::{B256, Keccak256, U256};
use rocksdb::{ColumnFamily, DB, DBRawIteratorWithThreadMode, IteratorMode, Snapshot, WriteBatch};

use bal_replay_state::{ACCOUNT_VALUE_LEN, FlatAccount, StateError, cf, codec};

use crate::store::{RocksStore, decode_slot, hex_key};

/// Entries to write into one table of a [`RocksStore`] at once ([`RocksStore::write_encoded`]),
/// keys and values already in the table's encoding. Nothing else is written with them: no applied
/// height, no metadata. For bulk loading by a tool that records its own progress.
pub struct EncodedBatch<'a> {
    table: &'static str,
    cf: &'a ColumnFamily,
    batch: WriteBatch,
}

impl std::fmt::Debug for EncodedBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedBatch")
            .field("table", &self.table)
            .field("entries", &self.batch.len())
            .finish_non_exhaustive()
    }
}

impl EncodedBatch<'_> {
    /// Adds `key` -> `value`; a later put of the same key wins.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.batch.put_cf(self.cf, key, value);
    }

    /// The table the batch writes to.
    pub fn table(&self) -> &'static str {
        self.table
    }

    /// Entries put so far.
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// Whether nothing was put.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }
}

/// A consistent view of a [`RocksStore`] (one RocksDB snapshot): every read through it sees the
/// same contents, however many commits or batches land meanwhile.
pub struct EncodedSnapshot<'a> {
    store: &'a RocksStore,
    snapshot: Snapshot<'a>,
}

impl std::fmt::Debug for EncodedSnapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedSnapshot")
            .field("store", &self.store.path())
            .finish_non_exhaustive()
    }
}

/// The entries of one table in key order, read through an [`EncodedSnapshot`]. A cursor, not an
/// iterator, so walking a table allocates nothing: [`EncodedCursor::key`] and
/// [`EncodedCursor::value`] borrow the current entry until [`EncodedCursor::advance`].
pub struct EncodedCursor<'a> {
    table: &'static str,
    iter: DBRawIteratorWithThreadMode<'a, DB>,
}

impl std::fmt::Debug for EncodedCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedCursor")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl EncodedCursor<'_> {
    /// The current entry's key; `None` past the last entry (or after a read error, which
    /// [`EncodedCursor::finish`] reports).
    pub fn key(&self) -> Option<&[u8]> {
        self.iter.key()
    }

    /// The current entry's value.
    pub fn value(&self) -> Option<&[u8]> {
        self.iter.value()
    }

    /// Moves to the next entry.
    pub fn advance(&mut self) {
        self.iter.next();
    }

    /// Whether the walk ended because of a read error rather than at the table's end.
    pub fn finish(&self) -> Result<(), StateError> {
        self.iter.status().map_err(|source| StateError::Read {
            table: self.table,
            key: String::new(),
            source: source.into(),
        })
    }
}

impl<'a> EncodedSnapshot<'a> {
    /// The store this is a view of.
    pub fn store(&self) -> &'a RocksStore {
        self.store
    }

    /// A cursor at the first entry of `table`.
    pub fn cursor(&self, table: &'static str) -> Result<EncodedCursor<'_>, StateError> {
        let mut iter = self.snapshot.raw_iterator_cf(self.store.cf(table)?);
        iter.seek_to_first();
        Ok(EncodedCursor { table, iter })
    }

    /// The encoded value under `key` in `table`.
    pub fn get(&self, table: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.snapshot
            .get_pinned_cf(self.store.cf(table)?, key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|source| StateError::Read {
                table,
                key: hex_key(key),
                source: source.into(),
            })
    }

    /// The applied height in this snapshot (`None` when the store has none, or a malformed one).
    pub fn applied_block(&self) -> Result<Option<u64>, StateError> {
        Ok(self
            .get(cf::META, cf::META_APPLIED_BLOCK)?
            .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
            .map(u64::from_be_bytes))
    }

    /// Entries of `table` in this snapshot.
    fn count(&self, table: &'static str) -> Result<u64, StateError> {
        let mut cursor = self.cursor(table)?;
        let mut n = 0u64;
        while cursor.key().is_some() {
            n += 1;
            cursor.advance();
        }
        cursor.finish()?;
        Ok(n)
    }

    /// [`FlatContents::digest`](bal_replay_state::FlatContents::digest) of this snapshot's contents, with
    /// `applied` as the applied height, computed while streaming the tables, so fingerprinting a
    /// mainnet-sized state does not load it into memory ([`RocksStore::content_digest`] does).
    /// Equal to it by construction of the same serialization; the migration's tests check both agree.
    pub fn content_digest(&self, applied: Option<u64>) -> Result<B256, StateError> {
        let corrupt = |table: &'static str, key: &[u8], reason: &str| StateError::Corrupt {
            table,
            key: hex_key(key),
            reason: reason.to_string(),
        };
        let mut h = Keccak256::new();
        let name = self.store.key_scheme().name().as_bytes();
        h.update([name.len() as u8]);
        h.update(name);
        for table in [cf::ACCOUNTS, cf::STORAGE, cf::CODE, cf::BLOCK_HASHES] {
            // The serialization puts each table's count before its entries: count first, then hash.
            h.update(self.count(table)?.to_be_bytes());
            let mut cursor = self.cursor(table)?;
            while let (Some(k), Some(v)) = (cursor.key(), cursor.value()) {
                match table {
                    cf::ACCOUNTS => {
                        if v.len() != ACCOUNT_VALUE_LEN {
                            return Err(corrupt(table, k, "account value is not 72 bytes"));
                        }
                        h.update((k.len() as u32).to_be_bytes());
                        h.update(k);
                        h.update(v);
                    }
                    cf::STORAGE => {
                        if v.is_empty() || v.len() > 32 || v[0] == 0 {
                            return Err(corrupt(table, k, "slot value is not trimmed big-endian"));
                        }
                        let mut word = [0u8; 32];
                        word[32 - v.len()..].copy_from_slice(v);
                        h.update((k.len() as u32).to_be_bytes());
                        h.update(k);
                        h.update(word);
                    }
                    cf::CODE => {
                        h.update(k);
                        h.update((v.len() as u64).to_be_bytes());
                        h.update(v);
                    }
                    _ => {
                        h.update(k);
                        h.update(v);
                    }
                }
                cursor.advance();
            }
            cursor.finish()?;
        }
        match applied {
            None => h.update([0u8]),
            Some(n) => {
                h.update([1u8]);
                h.update(n.to_be_bytes());
            }
        }
        Ok(h.finalize())
    }
}

impl RocksStore {
    /// An empty batch of encoded entries for `table` (one of [`cf`]).
    pub fn encoded_batch(&self, table: &'static str) -> Result<EncodedBatch<'_>, StateError> {
        Ok(EncodedBatch {
            table,
            cf: self.cf(table)?,
            batch: WriteBatch::default(),
        })
    }

    /// Writes `batch` atomically, with the write options of commits (without the write-ahead log
    /// when the store was opened with [`RocksOptions::write_without_wal`]: then only a
    /// [`RocksStore::flush`] makes it durable).
    ///
    /// [`RocksOptions::write_without_wal`]: crate::RocksOptions::write_without_wal
    pub fn write_encoded(&self, batch: EncodedBatch<'_>) -> Result<(), StateError> {
        let (table, entries) = (batch.table, batch.batch.len());
        self.db()
            .write_opt(batch.batch, &self.write_options())
            .map_err(|source| StateError::WriteBatch {
                table,
                entries,
                source: source.into(),
            })
    }

    /// A consistent view of the whole store, read by encoded key.
    pub fn encoded_snapshot(&self) -> EncodedSnapshot<'_> {
        EncodedSnapshot {
            store: self,
            snapshot: self.db().snapshot(),
        }
    }

    /// Calls `f` with every key of `table`, in key order (for sampling keys).
    pub fn for_each_key(
        &self,
        table: &'static str,
        mut f: impl FnMut(&[u8]),
    ) -> Result<(), StateError> {
        for item in self.db().iterator_cf(self.cf(table)?, IteratorMode::Start) {
            let (key, _) = item.map_err(|source| StateError::Read {
                table,
                key: String::new(),
                source: source.into(),
            })?;
            f(&key);
        }
        Ok(())
    }

    /// The account under its stored key: an address, or keccak256 of one under
    /// [`KeyScheme::Hashed`](bal_replay_state::KeyScheme::Hashed).
    pub fn account_by_key(&self, key: &[u8]) -> Result<Option<FlatAccount>, StateError> {
        self.get(cf::ACCOUNTS, key, |v| {
            codec::decode_account(cf::ACCOUNTS, key, v)
        })
    }

    /// The slot under its stored key, given as the account's key and the slot's (a slot, or
    /// keccak256 of one when hashed); zero when absent.
    pub fn storage_by_key(&self, account_key: &[u8], slot_key: &[u8]) -> Result<U256, StateError> {
        let mut key = [0u8; 64];
        let len = account_key.len() + slot_key.len();
        let key = key.get_mut(..len).ok_or_else(|| StateError::Corrupt {
            table: cf::STORAGE,
            key: hex_key(&[account_key, slot_key].concat()),
            reason: format!("storage key of {len} bytes"),
        })?;
        key[..account_key.len()].copy_from_slice(account_key);
        key[account_key.len()..].copy_from_slice(slot_key);
        let key = &*key;
        Ok(self
            .get(cf::STORAGE, key, |v| decode_slot(key, v))?
            .unwrap_or(U256::ZERO))
    }
}
