//! Bulk loading of large states: entries given in key order are written to SST files in a fresh
//! directory inside the store and ingested, which skips the memtable, the write-ahead log and
//! compaction. It is how a state of hundreds of millions of entries is made in minutes and in
//! bounded memory (one SST file's index and filter at a time).

use bal_replay_state::{FlatAccount, KeyScheme, StateError, cf, codec::encode_storage_value};

use crate::{RocksStore, store};
use alloy_primitives::{Address, U256};
use rocksdb::{IngestExternalFileOptions, SstFileWriter};
use std::path::{Path, PathBuf};

/// Size at which an SST file is finished and the next begun.
const SST_FILE_BYTES: u64 = 256 << 20;

impl RocksStore {
    /// Loads `accounts`, given in strictly increasing address order, by SST ingestion. Calls
    /// `progress` with the entries written so far every 65,536 entries. Plain key scheme only
    /// (hashed keys would not keep the given order). Keys must not be in the store yet: ingestion
    /// places the files below everything the store holds, so it is meant for an empty store.
    pub fn ingest_accounts(
        &self,
        accounts: impl IntoIterator<Item = (Address, FlatAccount)>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, StateError> {
        self.require_plain_keys()?;
        let entries = accounts.into_iter().map(|(address, account)| {
            (
                KeyScheme::Plain.account_key(address),
                account.to_bytes().to_vec(),
            )
        });
        self.ingest_sorted(cf::ACCOUNTS, entries, progress)
    }

    /// Loads storage slots `(account, slot, value)`, in strictly increasing (account, slot) order,
    /// by SST ingestion; zero values are skipped (the flat state stores none). As
    /// [`RocksStore::ingest_accounts`].
    pub fn ingest_storage(
        &self,
        slots: impl IntoIterator<Item = (Address, U256, U256)>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, StateError> {
        self.require_plain_keys()?;
        let entries = slots
            .into_iter()
            .filter(|(_, _, value)| !value.is_zero())
            .map(|(address, slot, value)| {
                (
                    KeyScheme::Plain.storage_key(address, slot),
                    encode_storage_value(value).as_ref().to_vec(),
                )
            });
        self.ingest_sorted(cf::STORAGE, entries, progress)
    }

    fn require_plain_keys(&self) -> Result<(), StateError> {
        if self.key_scheme() == KeyScheme::Plain {
            Ok(())
        } else {
            Err(StateError::SchemeMismatch {
                path: self.path().to_path_buf(),
                found: self.key_scheme(),
                expected: KeyScheme::Plain,
            })
        }
    }

    fn ingest_sorted(
        &self,
        table: &'static str,
        entries: impl Iterator<Item = (bal_replay_state::StateKey, Vec<u8>)>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, StateError> {
        let scratch = IngestDir::create(self.path())?;
        let options = store::sst_options(self.table_layout());
        let mut files: Vec<PathBuf> = Vec::new();
        let mut writer: Option<SstFileWriter<'_>> = None;
        let mut last: Option<bal_replay_state::StateKey> = None;
        let mut written = 0u64;
        let write_err =
            |key: &bal_replay_state::StateKey, source: rocksdb::Error| StateError::Write {
                table,
                key: key.to_hex(),
                source: source.into(),
            };
        for (key, value) in entries {
            if let Some(last) = &last
                && last.as_slice() >= key.as_slice()
            {
                return Err(StateError::Corrupt {
                    table,
                    key: key.to_hex(),
                    reason: format!(
                        "bulk load needs strictly increasing keys; it follows {}",
                        last.to_hex()
                    ),
                });
            }
            let full = writer
                .as_ref()
                .is_some_and(|w| w.file_size() >= SST_FILE_BYTES);
            if full && let Some(mut done) = writer.take() {
                done.finish().map_err(|e| write_err(&key, e))?;
            }
            if writer.is_none() {
                let path = scratch.path.join(format!("{table}-{:05}.sst", files.len()));
                let w = SstFileWriter::create(&options);
                w.open(&path).map_err(|e| write_err(&key, e))?;
                files.push(path);
                writer = Some(w);
            }
            if let Some(w) = writer.as_mut() {
                w.put(key.as_slice(), &value)
                    .map_err(|e| write_err(&key, e))?;
            }
            written += 1;
            if written.is_multiple_of(65_536) {
                progress(written);
            }
            last = Some(key);
        }
        if let (Some(mut done), Some(key)) = (writer.take(), last) {
            done.finish().map_err(|e| write_err(&key, e))?;
        }
        progress(written);
        if files.is_empty() {
            return Ok(0);
        }
        let mut ingest = IngestExternalFileOptions::default();
        // The files are ours and in the store's directory: moved (hard-linked), not copied.
        ingest.set_move_files(true);
        self.db()
            .ingest_external_file_cf_opts(self.cf(table)?, &ingest, files)
            .map_err(|source| StateError::Write {
                table,
                key: "(SST ingestion)".into(),
                source: source.into(),
            })?;
        tracing::debug!(table, entries = written, "ingested sorted entries");
        Ok(written)
    }
}

/// A fresh directory inside the store for the SST files being written, removed (with only the
/// files this process wrote) when dropped.
struct IngestDir {
    path: PathBuf,
}

impl IngestDir {
    fn create(store: &Path) -> Result<Self, StateError> {
        for n in 0u32.. {
            let path = store.join(format!("bulk-load-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => continue,
                Err(source) => return Err(StateError::Io { path, source }),
            }
        }
        unreachable!("the loop returns")
    }
}

impl Drop for IngestDir {
    fn drop(&mut self) {
        // Only the `.sst` files written here (ingestion moved them: usually none are left).
        if let Ok(entries) = std::fs::read_dir(&self.path) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "sst") {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        let _ = std::fs::remove_dir(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use crate::{RocksOptions, RocksStore};
    use alloy_primitives::{Address, B256, U256};
    use bal_replay_state::{FlatAccount, StateChanges, StateReader, StateWriter};

    /// The `i`-th test account's address and value.
    fn address(i: u64) -> Address {
        Address::left_padding_from(&(i * 7919 + 1).to_be_bytes())
    }

    fn account(i: u64) -> FlatAccount {
        FlatAccount {
            nonce: i,
            balance: U256::from(i * 1000 + 1),
            code_hash: revm_empty_code_hash(),
        }
    }

    #[test]
    fn bulk_loaded_entries_read_back_and_unsorted_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(
            dir.path(),
            &RocksOptions {
                create_if_missing: true,
                ..RocksOptions::default()
            },
        )
        .unwrap();
        let mut seen = Vec::new();
        let n = store
            .ingest_accounts((0..100_000).map(|i| (address(i), account(i))), &mut |n| {
                seen.push(n)
            })
            .unwrap();
        assert_eq!(n, 100_000);
        assert_eq!(seen.last(), Some(&100_000));
        for i in [0, 1, 4_242, 99_999] {
            assert_eq!(store.account(address(i)).unwrap(), Some(account(i)));
        }
        assert_eq!(store.account(address(100_000)).unwrap(), None);
        let token = Address::repeat_byte(0xee);
        let slots = (0..1_000u64).map(|i| (token, U256::from(i * 3), U256::from(i % 5)));
        // Zero values are not stored: 1,000 slots, 200 of them zero.
        assert_eq!(store.ingest_storage(slots, &mut |_| {}).unwrap(), 800);
        assert_eq!(store.storage(token, U256::from(21)).unwrap(), U256::from(2));
        assert_eq!(store.storage(token, U256::from(15)).unwrap(), U256::ZERO);

        let unsorted = [(address(5), account(5)), (address(3), account(3))];
        let err = store
            .ingest_accounts(unsorted, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("strictly increasing keys"), "{err}");
        // No scratch directory is left in the store.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("bulk-load-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn pinned_metadata_leaves_only_data_blocks_to_read() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = RocksStore::open(
                dir.path(),
                &RocksOptions {
                    create_if_missing: true,
                    ..RocksOptions::default()
                },
            )
            .unwrap();
            store
                .ingest_accounts((0..200_000).map(|i| (address(i), account(i))), &mut |_| {})
                .unwrap();
        }
        // A 1 MiB block cache with statistics, the index and filters pinned or not.
        let open = |pin_metadata: bool| {
            RocksStore::open(
                dir.path(),
                &RocksOptions {
                    block_cache_bytes: 1 << 20,
                    statistics: true,
                    pin_metadata,
                    ..RocksOptions::default()
                },
            )
            .unwrap()
        };
        // Reads 500 keys spread over the file and returns (pinned bytes at open, block-cache
        // misses, data-block misses).
        let read_spread = |pin_metadata: bool| {
            let store = open(pin_metadata);
            let pinned = store.block_cache_pinned_bytes().unwrap();
            let before = store.read_counters().unwrap();
            for i in (0..200_000).step_by(400) {
                assert_eq!(store.account(address(i)).unwrap(), Some(account(i)));
            }
            let read = store.read_counters().unwrap().since(&before);
            (
                pinned,
                read.block_cache_misses,
                read.block_cache_data_misses,
            )
        };
        let (pinned_top, misses, data_misses) = read_spread(false);
        // Unpinned, a lookup also misses its index and filter partitions.
        assert!(misses > data_misses, "{misses} misses, {data_misses} data");
        let (pinned_all, misses, data_misses) = read_spread(true);
        // Pinned at open: every partition (200,000 keys: hundreds of KiB of index and filters,
        // more than the top levels alone), and every miss is a data block.
        assert!(
            pinned_all > pinned_top + (100 << 10),
            "pinned {pinned_all} bytes, top levels {pinned_top}"
        );
        assert_eq!(misses, data_misses);
        assert!(
            data_misses >= 400,
            "{data_misses} data-block misses for 500 keys"
        );
        // The 1 MiB bound is for data blocks, beyond the pinned partitions: 100 keys' blocks
        // read again are all served from the cache.
        let store = open(true);
        let read_100 = || {
            let before = store.read_counters().unwrap();
            for i in (0..200_000).step_by(2_000) {
                assert_eq!(store.account(address(i)).unwrap(), Some(account(i)));
            }
            store.read_counters().unwrap().since(&before)
        };
        assert!(read_100().block_cache_data_misses >= 90);
        let again = read_100();
        assert_eq!(again.block_cache_misses, 0);
        assert!(again.block_cache_hits >= 100, "{again:?}");
    }

    #[test]
    fn keys_found_in_files_count_multi_gets_once_and_not_the_memtable() {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(
            dir.path(),
            &RocksOptions {
                create_if_missing: true,
                statistics: true,
                ..RocksOptions::default()
            },
        )
        .unwrap();
        // 1,000 accounts in an SST file, 10 more only in the memtable.
        store
            .ingest_accounts((0..1_000).map(|i| (address(i), account(i))), &mut |_| {})
            .unwrap();
        let fresh = StateChanges {
            accounts: (1_000..1_010)
                .map(|i| (address(i), Some(account(i))))
                .collect(),
            ..StateChanges::default()
        };
        store.commit(&fresh, 1).unwrap();
        let before = store.read_counters().unwrap();
        // A multi-get of 100 keys in the file, the 10 in the memtable and 5 absent ones...
        let keys: Vec<Address> = (0..100).chain(1_000..1_015).map(address).collect();
        let found = store.multi_get_accounts(&keys).unwrap();
        assert_eq!(found.iter().filter(|a| a.is_some()).count(), 110);
        // ...and point reads of 20 more in the file and one in the memtable.
        for i in (500..520).chain([1_003]) {
            assert_eq!(store.account(address(i)).unwrap(), Some(account(i)));
        }
        let read = store.read_counters().unwrap().since(&before);
        assert_eq!(read.keys_read, 136);
        assert_eq!(read.keys_found_in_files, 120);
    }

    fn revm_empty_code_hash() -> B256 {
        alloy_primitives::keccak256([])
    }
}
