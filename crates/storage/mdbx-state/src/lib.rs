//! reth's MDBX state read in place, through the flat state's [`StateReader`].
//!
//! [`MdbxStore`] answers [`StateReader`] from a reth v2.5.1 database without copying it: v1 layout
//! (`PlainAccountState`, `PlainStorageState`) by address and slot, v2 layout (`HashedAccounts`,
//! `HashedStorages`) by keccak256(address) and keccak256(slot), exactly as a RocksDB flat state with
//! the matching [`KeyScheme`] does; code from `Bytecodes`, block hashes from `CanonicalHeaders`, the
//! applied height from the `Execution` stage checkpoint. Table names, layout detection and the
//! decoding of reth's `Compact` values are `bal-replay-reth-db`'s ([`RethDb`]), as are those of
//! `bal-replay-migrate`, so a migrated RocksDB state and this reader agree by construction; the
//! tests check that they do.
//!
//! Invariant: every read of one [`MdbxStore`] sees one MDBX snapshot. Each reading thread has its
//! own long-lived read transaction (see [`MdbxStore`] for why); each is checked, when it starts, to
//! be at the snapshot the store opened on, so a database changing underneath (a node still writing
//! it) is an error, never a mix of two states.
//!
//! The store is read-only: wrap it in [`bal_replay_state::MemOverlay`] to replay over it (commits
//! stay in memory), as [`with_mdbx_overlay`] does.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod overlay;
mod spec;

use std::borrow::Cow;

use alloy_primitives::{Address, B256, Bytes, U256, hex};
use bal_replay_reth_db::{
    Layout, TableKind, decode_account_flat, decode_bytecode, decode_storage,
    table::CANONICAL_HEADERS,
};
use bal_replay_state::{FlatAccount, KeyScheme, StateError, StateReader};
use libmdbx::{NoWriteMap, RO, Table, Transaction};
use thread_local::ThreadLocal;

/// The database an [`MdbxStore`] reads, and why opening one fails (`bal-replay-reth-db`'s).
pub use bal_replay_reth_db::{RethDb, RethDbError};
pub use overlay::{MdbxOverlayError, with_mdbx_overlay};
pub use spec::StateSpec;

/// A key and value as MDBX hands them out (borrowed from the map in a read transaction).
type Entry<'txn> = (Cow<'txn, [u8]>, Cow<'txn, [u8]>);

/// A reth database's state, read in place. Implements [`StateReader`]; shared by `&` across threads.
///
/// # Read transactions
///
/// An MDBX read transaction is a snapshot; readers never block each other or the writer. But the
/// `libmdbx` crate puts every call on a [`Transaction`] behind that transaction's mutex, so one
/// transaction shared by all threads would serialize every read. A transaction per read is no better:
/// beginning one takes a reader slot in the lock file and allocates. So each thread that reads gets
/// its own transaction, begun on its first read and kept for the store's life ([`ThreadLocal`]:
/// per-object, per-thread storage; a slot freed by an exited thread is reused by the next one, so
/// there are at most as many transactions as threads alive at once, well under MDBX's reader limit).
/// The crate opens every database with `MDBX_NOSTICKYTHREADS`, so a transaction may be ended from
/// any thread when the store is dropped.
///
/// Long-lived readers pin their snapshot: a node writing the database meanwhile could not reuse the
/// pages they see and its file would grow. Replays read a stopped node's database (or a copy), and
/// each new transaction is checked to be at the store's snapshot.
///
/// Storage reads open a cursor on the thread's transaction (DupSort lookups need one); that is a
/// small allocation, as in reth's own reads.
pub struct MdbxStore<'db> {
    db: &'db RethDb,
    layout: Layout,
    scheme: KeyScheme,
    accounts: Table<'db>,
    storage: Table<'db>,
    bytecodes: Table<'db>,
    /// `None`: the database has no such table. The flag: whether it holds any entry.
    canonical_headers: Option<(Table<'db>, bool)>,
    height: u64,
    snapshot: u64,
    txns: ThreadLocal<Transaction<'db, RO, NoWriteMap>>,
}

impl std::fmt::Debug for MdbxStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdbxStore")
            .field("path", &self.db.path())
            .field("layout", &self.layout)
            .field("height", &self.height)
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

/// An MDBX error on `table` at `key`, as the flat state's error.
fn mdbx_error(table: &'static str, key: &[u8], source: libmdbx::Error) -> StateError {
    StateError::Backend {
        table,
        key: hex::encode_prefixed(key),
        source: Box::new(source),
    }
}

/// A decoding (or other) error of the reader, as the flat state's error.
fn from_reader(table: &'static str, key: &[u8], e: RethDbError) -> StateError {
    match e {
        RethDbError::Decode { table, key, reason } => StateError::Corrupt { table, key, reason },
        RethDbError::Mdbx { table, source } => mdbx_error(table, key, source),
        e => StateError::Backend {
            table,
            key: hex::encode_prefixed(key),
            source: Box::new(e),
        },
    }
}

impl<'db> MdbxStore<'db> {
    /// Reads `db`'s state in place: checks that its layout's tables exist, and takes the snapshot
    /// every read will see.
    pub fn new(db: &'db RethDb) -> Result<Self, RethDbError> {
        let layout = db.layout();
        let txn = db.begin_read()?;
        // The height from the same snapshot as the state: on a node that is writing, a second
        // transaction could see a later checkpoint than the tables it describes.
        let height = db.execution_height_in(&txn)?;
        let snapshot = txn.id();
        for kind in TableKind::ALL {
            let table = db.open_table(&txn, layout.table(kind))?;
            txn.prime_for_permaopen(table);
        }
        let canonical = match txn.open_table(Some(CANONICAL_HEADERS)) {
            Ok(table) => {
                let stat = txn.table_stat(&table).map_err(|source| RethDbError::Mdbx {
                    table: CANONICAL_HEADERS,
                    source,
                })?;
                txn.prime_for_permaopen(table);
                Some(stat.entries() > 0)
            }
            Err(libmdbx::Error::NotFound) => None,
            Err(source) => {
                return Err(RethDbError::Mdbx {
                    table: CANONICAL_HEADERS,
                    source,
                });
            }
        };
        // Committing a read transaction ends it and makes the tables it opened valid for the
        // environment's life, in the order they were primed.
        let (_, tables) = txn
            .commit_and_rebind_open_dbs()
            .map_err(|source| RethDbError::Mdbx { table: "-", source })?;
        let mut tables = tables.into_iter();
        let mut next = |name: &'static str| {
            tables.next().ok_or(RethDbError::MissingTable {
                table: name,
                path: db.path().to_path_buf(),
            })
        };
        let accounts = next(layout.table(TableKind::Accounts))?;
        let storage = next(layout.table(TableKind::Storage))?;
        let bytecodes = next(layout.table(TableKind::Bytecodes))?;
        let canonical_headers = match canonical {
            Some(non_empty) => Some((next(CANONICAL_HEADERS)?, non_empty)),
            None => None,
        };
        Ok(Self {
            db,
            layout,
            scheme: layout.key_scheme(),
            accounts,
            storage,
            bytecodes,
            canonical_headers,
            height,
            snapshot,
            txns: ThreadLocal::new(),
        })
    }

    /// The database's layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The key scheme of the layout ([`KeyScheme::Hashed`] for v2): how addresses and slots become
    /// keys, as in a RocksDB flat state migrated from this database.
    pub fn key_scheme(&self) -> KeyScheme {
        self.scheme
    }

    /// The `Execution` stage checkpoint: the block the state is at.
    pub fn height(&self) -> u64 {
        self.height
    }

    /// The database read.
    pub fn db(&self) -> &'db RethDb {
        self.db
    }

    /// This thread's read transaction, begun on first use and checked to be at the store's snapshot.
    fn txn(&self) -> Result<&Transaction<'db, RO, NoWriteMap>, StateError> {
        self.txns.get_or_try(|| {
            let txn = self.db.begin_read().map_err(|e| from_reader("-", &[], e))?;
            let id = txn.id();
            if id != self.snapshot {
                return Err(StateError::Unavailable {
                    reason: format!(
                        "the MDBX database at {} changed while being read (snapshot {} when \
                         opened, {id} now); stop the node writing it, or read a copy",
                        self.db.path().display(),
                        self.snapshot
                    ),
                });
            }
            Ok(txn)
        })
    }

    /// The account under `key`: an address (v1) or keccak256 of one (v2).
    pub fn account_by_key(&self, key: &[u8]) -> Result<Option<FlatAccount>, StateError> {
        let table = self.layout.table(TableKind::Accounts);
        let txn = self.txn()?;
        let value: Option<Cow<'_, [u8]>> = txn
            .get(&self.accounts, key)
            .map_err(|e| mdbx_error(table, key, e))?;
        value
            .map(|v| decode_account_flat(table, key, &v).map_err(|e| from_reader(table, key, e)))
            .transpose()
    }

    /// The value of the slot `slot_key` (a slot, or keccak256 of one under v2) of the account
    /// `account_key`; zero when absent.
    pub fn storage_by_key(&self, account_key: &[u8], slot_key: &[u8]) -> Result<U256, StateError> {
        let txn = self.txn()?;
        let table = self.layout.table(TableKind::Storage);
        let mut cursor = txn
            .cursor(&self.storage)
            .map_err(|e| mdbx_error(table, account_key, e))?;
        self.seek_slot(&mut cursor, account_key, slot_key)
    }

    /// A DupSort lookup: the first value of `account_key` at or after `slot_key` (values are
    /// slot ++ Compact value, sorted by bytes), which is the slot's entry if its sub-key matches.
    fn seek_slot(
        &self,
        cursor: &mut libmdbx::Cursor<'_, RO>,
        account_key: &[u8],
        slot_key: &[u8],
    ) -> Result<U256, StateError> {
        let table = self.layout.table(TableKind::Storage);
        let value: Option<Cow<'_, [u8]>> = cursor
            .get_both_range(account_key, slot_key)
            .map_err(|e| mdbx_error(table, account_key, e))?;
        match value {
            Some(v) if v.starts_with(slot_key) => {
                let key = [account_key, slot_key].concat();
                decode_storage(table, &key, &v)
                    .map(|entry| entry.value)
                    .map_err(|e| from_reader(table, &key, e))
            }
            _ => Ok(U256::ZERO),
        }
    }

    /// Calls `f` with every account key of the state, in key order (for sampling keys).
    pub fn for_each_account_key(&self, mut f: impl FnMut(&[u8])) -> Result<(), StateError> {
        let table = self.layout.table(TableKind::Accounts);
        let txn = self.txn()?;
        let mut cursor = txn
            .cursor(&self.accounts)
            .map_err(|e| mdbx_error(table, &[], e))?;
        let mut entry: Option<(Cow<'_, [u8]>, ())> =
            cursor.first().map_err(|e| mdbx_error(table, &[], e))?;
        while let Some((key, ())) = entry {
            f(&key);
            entry = cursor.next().map_err(|e| mdbx_error(table, &key, e))?;
        }
        Ok(())
    }

    /// Calls `f` with every (account key, slot key) of the state, in key order (for sampling keys).
    pub fn for_each_slot_key(&self, mut f: impl FnMut(&[u8], &[u8])) -> Result<(), StateError> {
        let table = self.layout.table(TableKind::Storage);
        let txn = self.txn()?;
        let mut cursor = txn
            .cursor(&self.storage)
            .map_err(|e| mdbx_error(table, &[], e))?;
        let mut entry: Option<Entry<'_>> = cursor.first().map_err(|e| mdbx_error(table, &[], e))?;
        while let Some((key, value)) = entry {
            if let Some(slot) = value.get(..32) {
                f(&key, slot);
            }
            entry = cursor.next().map_err(|e| mdbx_error(table, &key, e))?;
        }
        Ok(())
    }
}

impl StateReader for MdbxStore<'_> {
    fn location(&self) -> Option<&std::path::Path> {
        Some(self.db.path())
    }

    fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
        self.account_by_key(&self.scheme.account_key(address))
    }

    fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
        let key = self.scheme.storage_key(address, slot);
        let (account_key, slot_key) = key.split_at(self.scheme.account_key_len());
        self.storage_by_key(account_key, slot_key)
    }

    /// One cursor for all the slots.
    fn storage_many(&self, slots: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        let txn = self.txn()?;
        let table = self.layout.table(TableKind::Storage);
        let mut cursor = txn
            .cursor(&self.storage)
            .map_err(|e| mdbx_error(table, &[], e))?;
        slots
            .iter()
            .map(|(address, slot)| {
                let key = self.scheme.storage_key(*address, *slot);
                let (account_key, slot_key) = key.split_at(self.scheme.account_key_len());
                self.seek_slot(&mut cursor, account_key, slot_key)
            })
            .collect()
    }

    fn code(&self, hash: B256) -> Result<Option<Bytes>, StateError> {
        let table = self.layout.table(TableKind::Bytecodes);
        let txn = self.txn()?;
        let value: Option<Cow<'_, [u8]>> = txn
            .get(&self.bytecodes, hash)
            .map_err(|e| mdbx_error(table, hash.as_slice(), e))?;
        value
            .map(|v| {
                decode_bytecode(table, hash.as_slice(), &v)
                    .map(|code| Bytes::copy_from_slice(code.original_bytes().as_ref()))
                    .map_err(|e| from_reader(table, hash.as_slice(), e))
            })
            .transpose()
    }

    /// From `CanonicalHeaders`. reth v2 keeps headers in static files, where this reader does not
    /// look, and may leave the table empty: then, and when there is no table, this is an error
    /// saying so (a replay takes the hashes from its dump instead, see
    /// [`bal_replay_state::MemOverlay::insert_block_hashes`]).
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        let unavailable = |why: &str| StateError::Unavailable {
            reason: format!(
                "no hash for block {number}: the MDBX database at {} {why} (reth keeps headers in \
                 static files, which this reader does not read)",
                self.db.path().display()
            ),
        };
        let (table, non_empty) = self
            .canonical_headers
            .as_ref()
            .ok_or_else(|| unavailable("has no CanonicalHeaders table"))?;
        if !non_empty {
            return Err(unavailable("has an empty CanonicalHeaders table"));
        }
        let key = number.to_be_bytes();
        let txn = self.txn()?;
        let value: Option<Cow<'_, [u8]>> = txn
            .get(table, key)
            .map_err(|e| mdbx_error(CANONICAL_HEADERS, &key, e))?;
        value
            .map(|v| {
                B256::try_from(v.as_ref()).map_err(|_| StateError::Corrupt {
                    table: CANONICAL_HEADERS,
                    key: hex::encode_prefixed(key),
                    reason: format!("hash of {} bytes, expected 32", v.len()),
                })
            })
            .transpose()
    }

    fn applied_block(&self) -> Result<Option<u64>, StateError> {
        Ok(Some(self.height))
    }
}
