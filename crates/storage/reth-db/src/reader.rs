//! The read side: reth's MDBX environment, its layout, and the decoding of its Compact values
//! (reth's own `Compact` implementations: `reth-primitives-traits` with its `reth-codec` feature).

use std::{
    borrow::Cow,
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
};

use alloy_primitives::{B256, KECCAK256_EMPTY, hex};
use libmdbx::{Database, DatabaseOptions, Mode, NoWriteMap, RO, Table, Transaction};
use reth_codecs::Compact;
use reth_primitives_traits::{Account, Bytecode, StorageEntry};

use bal_replay_state::{FlatAccount, KeyScheme};

use crate::RethDbError;

/// reth's table names (`crates/storage/db-api/src/tables/mod.rs`).
pub mod table {
    /// v1: address (20) -> `Account`.
    pub const PLAIN_ACCOUNT_STATE: &str = "PlainAccountState";
    /// v1, DupSort: address (20) -> `StorageEntry` (slot (32) ++ Compact value).
    pub const PLAIN_STORAGE_STATE: &str = "PlainStorageState";
    /// v2: keccak(address) (32) -> `Account`.
    pub const HASHED_ACCOUNTS: &str = "HashedAccounts";
    /// v2, DupSort: keccak(address) (32) -> `StorageEntry` (keccak(slot) (32) ++ Compact value).
    pub const HASHED_STORAGES: &str = "HashedStorages";
    /// Both layouts: code hash (32) -> `Bytecode`.
    pub const BYTECODES: &str = "Bytecodes";
    /// String key -> value; `storage_settings` holds the layout.
    pub const METADATA: &str = "Metadata";
    /// Stage id (string) -> `StageCheckpoint`.
    pub const STAGE_CHECKPOINTS: &str = "StageCheckpoints";
    /// Block number (u64 big-endian, 8) -> canonical block hash (32). reth v2 keeps headers in
    /// static files, so this table may be empty.
    pub const CANONICAL_HEADERS: &str = "CanonicalHeaders";
    /// Block hash (32) -> block number (u64, SCALE: 8 bytes little-endian), for every canonical
    /// block; kept in MDBX by reth v2 too.
    pub const HEADER_NUMBERS: &str = "HeaderNumbers";
}

/// The `Metadata` key under which reth v2.5.1 records its `StorageSettings`.
const STORAGE_SETTINGS_KEY: &[u8] = b"storage_settings";
/// The stage whose checkpoint is the height the plain/hashed state is at.
const EXECUTION_STAGE: &[u8] = b"Execution";

/// Which of reth v2.5.1's two state layouts a database uses (`StorageSettings::storage_v2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Layout {
    /// Legacy: canonical state keyed by address and slot (`PlainAccountState`, `PlainStorageState`).
    #[cfg_attr(feature = "clap", value(name = "v1"))]
    V1,
    /// Default for new nodes: state keyed by keccak(address) and keccak(slot) (`HashedAccounts`,
    /// `HashedStorages`).
    #[cfg_attr(feature = "clap", value(name = "v2"))]
    V2,
}

impl Layout {
    /// The name recorded in the destination's metadata (`v1` / `v2`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
        }
    }

    /// The source table of `kind` in this layout.
    pub const fn table(self, kind: TableKind) -> &'static str {
        match (self, kind) {
            (Self::V1, TableKind::Accounts) => table::PLAIN_ACCOUNT_STATE,
            (Self::V1, TableKind::Storage) => table::PLAIN_STORAGE_STATE,
            (Self::V2, TableKind::Accounts) => table::HASHED_ACCOUNTS,
            (Self::V2, TableKind::Storage) => table::HASHED_STORAGES,
            (_, TableKind::Bytecodes) => table::BYTECODES,
        }
    }

    /// The key scheme of a flat state holding this layout's keys as they are (a v2 source's keys
    /// are hashes: the addresses and slots behind them are not in the source at all).
    pub const fn key_scheme(self) -> KeyScheme {
        match self {
            Self::V1 => KeyScheme::Plain,
            Self::V2 => KeyScheme::Hashed,
        }
    }

    /// The layout whose keys a flat state of `scheme` holds.
    pub const fn of_key_scheme(scheme: KeyScheme) -> Self {
        match scheme {
            KeyScheme::Plain => Self::V1,
            KeyScheme::Hashed => Self::V2,
        }
    }

    /// Length of an account key in this layout (an address, or its hash).
    pub const fn account_key_len(self) -> usize {
        match self {
            Self::V1 => 20,
            Self::V2 => 32,
        }
    }
}

/// The three kinds of state a layout has a table for, in the order a migration copies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// Accounts.
    Accounts,
    /// Storage slots.
    Storage,
    /// Contract code.
    Bytecodes,
}

impl TableKind {
    /// All kinds.
    pub const ALL: [Self; 3] = [Self::Accounts, Self::Storage, Self::Bytecodes];

    /// Short name, used in progress keys and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Accounts => "accounts",
            Self::Storage => "storage",
            Self::Bytecodes => "bytecodes",
        }
    }
}

/// A reth database opened read-only.
pub struct RethDb {
    db: Database<NoWriteMap>,
    path: PathBuf,
    layout: Layout,
}

impl std::fmt::Debug for RethDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RethDb")
            .field("path", &self.path)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl RethDb {
    /// Opens `path`, which is either reth's datadir (holding `db/`) or the `db` directory itself
    /// (holding `mdbx.dat`), read-only, and detects its layout.
    ///
    /// Read-only mode never writes the data file, so a live node's database or a read-only copy can
    /// be read; MDBX still registers this process as a reader in `mdbx.lck` when it can.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, RethDbError> {
        Self::open_with(path.as_ref(), false)
    }

    /// [`RethDb::open`] without the kernel's readahead, as reth itself opens its database: a
    /// random read of a cold page faults in that page, not the device's readahead window (8 MiB
    /// on this machine's disk). For replays and point reads; a migration keeps the default open,
    /// because a read-only opener asking for this flag sets the environment's mode in `mdbx.lck`,
    /// and MDBX then refuses a later writer with lazy sync modes (MDBX_INCOMPATIBLE).
    pub fn open_for_random_reads(path: impl AsRef<Path>) -> Result<Self, RethDbError> {
        Self::open_with(path.as_ref(), true)
    }

    fn open_with(given: &Path, no_readahead: bool) -> Result<Self, RethDbError> {
        if !given.is_dir() {
            return Err(RethDbError::SourceMissing {
                path: given.to_path_buf(),
            });
        }
        let path = if given.join("mdbx.dat").is_file() {
            given.to_path_buf()
        } else if given.join("db").join("mdbx.dat").is_file() {
            given.join("db")
        } else {
            return Err(RethDbError::NotMdbx {
                path: given.to_path_buf(),
                reason: "neither it nor its db/ holds an mdbx.dat".into(),
            });
        };
        let db = Database::<NoWriteMap>::open_with_options(
            &path,
            DatabaseOptions {
                mode: Mode::ReadOnly,
                // reth opens ~30 named tables; MDBX refuses named tables unless this is set.
                max_tables: Some(256),
                no_rdahead: no_readahead,
                ..Default::default()
            },
        )
        .map_err(|e| match e {
            // A valid database this process cannot open right now, or not with these rights.
            libmdbx::Error::Busy
            | libmdbx::Error::Access
            | libmdbx::Error::ReadersFull
            | libmdbx::Error::DuplicatedLck
            | libmdbx::Error::OutOfMemory => RethDbError::Open {
                path: path.clone(),
                source: e,
            },
            // Everything else (bad magic, short file, wrong version, corruption): not a database.
            e => RethDbError::NotMdbx {
                path: path.clone(),
                reason: e.to_string(),
            },
        })?;
        let mut this = Self {
            db,
            path,
            layout: Layout::V1,
        };
        this.layout = this.detect_layout()?;
        Ok(this)
    }

    /// The `db` directory opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layout recorded in the database's `Metadata` table.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The source as of one moment: a read transaction, with the height and layout read in it.
    /// Everything a migration (or a verification) reads, it reads in this snapshot, so a node that
    /// keeps writing cannot make it see two heights.
    pub fn snapshot(&self) -> Result<Snapshot<'_>, RethDbError> {
        let txn = self.begin_read()?;
        let id = txn.id();
        let layout = self.layout_in(&txn)?;
        if layout != self.layout {
            return Err(RethDbError::UnknownLayout {
                path: self.path.clone(),
                reason: format!(
                    "the layout changed from {} to {} while opening",
                    self.layout.name(),
                    layout.name()
                ),
            });
        }
        let height = self.execution_height_in(&txn)?;
        let block_hash = self.canonical_hash_in(&txn, height)?;
        Ok(Snapshot {
            txn,
            id,
            height,
            block_hash,
        })
    }

    /// A new read transaction: a consistent snapshot of its own. A migration shares one
    /// ([`RethDb::snapshot`]) across its workers instead: two transactions begun one after the
    /// other see two states of a database that is being written.
    pub fn begin_read(&self) -> Result<Transaction<'_, RO, NoWriteMap>, RethDbError> {
        self.db.begin_ro_txn().map_err(|e| RethDbError::Mdbx {
            table: "-",
            source: e,
        })
    }

    /// Opens `name` in `txn`, failing with [`RethDbError::MissingTable`] if it does not exist.
    pub fn open_table<'txn>(
        &self,
        txn: &'txn Transaction<'_, RO, NoWriteMap>,
        name: &'static str,
    ) -> Result<Table<'txn>, RethDbError> {
        txn.open_table(Some(name)).map_err(|e| match e {
            libmdbx::Error::NotFound => RethDbError::MissingTable {
                table: name,
                path: self.path.clone(),
            },
            source => RethDbError::Mdbx {
                table: name,
                source,
            },
        })
    }

    /// Number of entries (for DupSort tables: of key/value pairs) of `name`.
    pub fn entries(&self, name: &'static str) -> Result<u64, RethDbError> {
        let txn = self.begin_read()?;
        let table = self.open_table(&txn, name)?;
        let stat = txn.table_stat(&table).map_err(|source| RethDbError::Mdbx {
            table: name,
            source,
        })?;
        Ok(stat.entries() as u64)
    }

    /// Number of entries of `name` in `txn`'s snapshot.
    pub fn entries_in(
        &self,
        txn: &Transaction<'_, RO, NoWriteMap>,
        name: &'static str,
    ) -> Result<u64, RethDbError> {
        let table = self.open_table(txn, name)?;
        let stat = txn.table_stat(&table).map_err(|source| RethDbError::Mdbx {
            table: name,
            source,
        })?;
        Ok(stat.entries() as u64)
    }

    fn get_in(
        &self,
        txn: &Transaction<'_, RO, NoWriteMap>,
        name: &'static str,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, RethDbError> {
        let table = self.open_table(txn, name)?;
        txn.get::<Cow<'_, [u8]>>(&table, key)
            .map(|v| v.map(Cow::into_owned))
            .map_err(|source| RethDbError::Mdbx {
                table: name,
                source,
            })
    }

    /// The hash `CanonicalHeaders` holds for block `number` in `txn`'s snapshot. `None` where the
    /// table or the entry is missing: reth v2 keeps headers in static files and may leave the table
    /// empty, so a missing hash is not an error here.
    pub fn canonical_hash_in(
        &self,
        txn: &Transaction<'_, RO, NoWriteMap>,
        number: u64,
    ) -> Result<Option<B256>, RethDbError> {
        let raw = match self.get_in(txn, table::CANONICAL_HEADERS, &number.to_be_bytes()) {
            Ok(raw) => raw,
            Err(RethDbError::MissingTable { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        raw.map(|raw| {
            B256::try_from(raw.as_slice()).map_err(|_| RethDbError::Decode {
                table: table::CANONICAL_HEADERS,
                key: number.to_string(),
                reason: format!("a hash of {} bytes, expected 32", raw.len()),
            })
        })
        .transpose()
    }

    /// Reads `StorageSettings` from `Metadata`. reth v2.5.1 stores it as JSON
    /// (`{"storage_v2":bool}`) inside a SCALE-encoded byte vector (reth's codec for `Vec<u8>` values).
    fn detect_layout(&self) -> Result<Layout, RethDbError> {
        self.layout_in(&self.begin_read()?)
    }

    fn layout_in(&self, txn: &Transaction<'_, RO, NoWriteMap>) -> Result<Layout, RethDbError> {
        let unknown = |reason: String| RethDbError::UnknownLayout {
            path: self.path.clone(),
            reason,
        };
        let raw = match self.get_in(txn, table::METADATA, STORAGE_SETTINGS_KEY) {
            Ok(Some(raw)) => raw,
            Ok(None) => return Err(unknown("Metadata has no storage_settings entry".into())),
            Err(RethDbError::MissingTable { .. }) => {
                return Err(unknown("no Metadata table (reth older than v2?)".into()));
            }
            Err(e) => return Err(e),
        };
        parse_storage_settings(&raw).map_err(unknown)
    }

    /// The block the state tables are at: the `Execution` stage's checkpoint, in a snapshot of its
    /// own (see [`RethDb::snapshot`] for the height of the state one reads).
    pub fn execution_height(&self) -> Result<u64, RethDbError> {
        self.execution_height_in(&self.begin_read()?)
    }

    /// The `Execution` stage's checkpoint in `txn`'s snapshot.
    pub fn execution_height_in(
        &self,
        txn: &Transaction<'_, RO, NoWriteMap>,
    ) -> Result<u64, RethDbError> {
        let raw = self
            .get_in(txn, table::STAGE_CHECKPOINTS, EXECUTION_STAGE)?
            .ok_or(RethDbError::MissingCheckpoint { stage: "Execution" })?;
        decode_stage_block_number(&raw).ok_or_else(|| RethDbError::Decode {
            table: table::STAGE_CHECKPOINTS,
            key: "Execution".into(),
            reason: format!("not a StageCheckpoint: {}", hex::encode(&raw)),
        })
    }
}

/// One read transaction of a [`RethDb`] and what it says: every worker of a migration reads this
/// state (through it, or through a transaction of its own with the same id). libmdbx opens every environment with `MDBX_NOSTICKYTHREADS` and serializes the calls on a
/// transaction with a mutex, so one read transaction is `Sync` and may be shared by threads (each
/// opens its own cursors); MDBX's own per-thread reader slots are not involved.
pub struct Snapshot<'db> {
    txn: Transaction<'db, RO, NoWriteMap>,
    id: u64,
    height: u64,
    block_hash: Option<B256>,
}

impl std::fmt::Debug for Snapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("id", &self.id)
            .field("height", &self.height)
            .field("block_hash", &self.block_hash)
            .finish_non_exhaustive()
    }
}

impl<'db> Snapshot<'db> {
    /// The MDBX transaction id of the snapshot: it changes with every write the source commits.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The `Execution` checkpoint in this snapshot: the height of the state it holds.
    pub fn height(&self) -> u64 {
        self.height
    }

    /// The hash of block [`Snapshot::height`] in this snapshot's `CanonicalHeaders`, where the
    /// table has it (see [`RethDb::canonical_hash_in`]).
    pub fn block_hash(&self) -> Option<B256> {
        self.block_hash
    }

    /// The read transaction.
    pub fn txn(&self) -> &Transaction<'db, RO, NoWriteMap> {
        &self.txn
    }
}

/// The layout named by a raw `storage_settings` value, or why there is none.
fn parse_storage_settings(raw: &[u8]) -> Result<Layout, String> {
    let json = scale_bytes(raw).ok_or_else(|| {
        format!(
            "storage_settings is not a byte vector: {}",
            hex::encode(raw)
        )
    })?;
    let settings: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("storage_settings is not JSON: {e}"))?;
    let obj = settings
        .as_object()
        .ok_or_else(|| format!("storage_settings is not an object: {settings}"))?;
    // reth's field is `#[serde(default)]`: absent means the legacy layout.
    match obj.get("storage_v2") {
        None | Some(serde_json::Value::Bool(false)) => Ok(Layout::V1),
        Some(serde_json::Value::Bool(true)) => Ok(Layout::V2),
        Some(other) => Err(format!("storage_v2 is {other}, not a bool")),
    }
}

/// The payload of a SCALE-encoded `Vec<u8>`: a compact length prefix (mode in the low two bits),
/// then the bytes. Only the modes a metadata value can need (up to 2^30 bytes) are accepted.
fn scale_bytes(raw: &[u8]) -> Option<&[u8]> {
    let first = *raw.first()?;
    let (len, skip) = match first & 0b11 {
        0b00 => (usize::from(first >> 2), 1),
        0b01 => (
            usize::from(u16::from_le_bytes([first, *raw.get(1)?]) >> 2),
            2,
        ),
        0b10 => {
            let b: [u8; 4] = raw.get(..4)?.try_into().ok()?;
            ((u32::from_le_bytes(b) >> 2) as usize, 4)
        }
        _ => return None,
    };
    let body = raw.get(skip..)?;
    (body.len() == len).then_some(body)
}

/// `StageCheckpoint { block_number: u64, stage_checkpoint: Option<StageUnitCheckpoint> }` derives
/// `Compact`: a one-byte bitfield header (low 4 bits: byte length of `block_number`, bit 4: whether
/// the unit checkpoint is present), then `block_number` as Compact u64. Only the block number is
/// needed; `reth-stages-types` is not on crates.io, so the header is read here and the integer by
/// reth-codecs.
fn decode_stage_block_number(raw: &[u8]) -> Option<u64> {
    let header = *raw.first()?;
    let len = usize::from(header & 0x0f);
    let body = raw.get(1..)?;
    if len > 8 || body.len() < len {
        return None;
    }
    let (number, _) = u64::from_compact(body, len);
    Some(number)
}

/// Runs a reth `from_compact`, which panics on malformed input, turning a panic into an error that
/// names the table and key.
fn decode_with<T>(
    table: &'static str,
    key: &[u8],
    f: impl FnOnce() -> T,
) -> Result<T, RethDbError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "malformed Compact value".into());
        RethDbError::Decode {
            table,
            key: hex::encode_prefixed(key),
            reason,
        }
    })
}

/// Decodes an account value.
pub fn decode_account(
    table: &'static str,
    key: &[u8],
    value: &[u8],
) -> Result<Account, RethDbError> {
    decode_with(table, key, || Account::from_compact(value, value.len()).0)
}

/// Decodes a storage value (sub-key included).
pub fn decode_storage(
    table: &'static str,
    key: &[u8],
    value: &[u8],
) -> Result<StorageEntry, RethDbError> {
    if value.len() < 32 || value.len() > 64 {
        return Err(RethDbError::Decode {
            table,
            key: hex::encode_prefixed(key),
            reason: format!("StorageEntry of {} bytes (expected 32..=64)", value.len()),
        });
    }
    decode_with(table, key, || {
        StorageEntry::from_compact(value, value.len()).0
    })
}

/// Decodes a bytecode value.
pub fn decode_bytecode(
    table: &'static str,
    key: &[u8],
    value: &[u8],
) -> Result<Bytecode, RethDbError> {
    decode_with(table, key, || Bytecode::from_compact(value, value.len()).0)
}

/// Decodes an account value as the flat state's account (no code hash: the empty code's).
pub fn decode_account_flat(
    table: &'static str,
    key: &[u8],
    value: &[u8],
) -> Result<FlatAccount, RethDbError> {
    decode_account(table, key, value).map(|account| FlatAccount {
        nonce: account.nonce,
        balance: account.balance,
        code_hash: account.bytecode_hash.unwrap_or(KECCAK256_EMPTY),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_prefix_and_stage_checkpoint_decode() {
        assert_eq!(scale_bytes(b"\x0cabc"), Some(&b"abc"[..]));
        assert_eq!(scale_bytes(b"\x0cab"), None);
        assert_eq!(decode_stage_block_number(&[0x01, 0x13]), Some(19));
        assert_eq!(decode_stage_block_number(&[0x02, 0x01, 0x00]), Some(256));
        assert_eq!(decode_stage_block_number(&[0x00]), Some(0));
        assert_eq!(decode_stage_block_number(&[0x03, 0x01]), None);
    }

    #[test]
    fn storage_settings_name_the_layout_or_say_why_not() {
        let scale = |s: &str| [&[(s.len() as u8) << 2][..], s.as_bytes()].concat();
        assert_eq!(
            parse_storage_settings(&scale(r#"{"storage_v2":false}"#)),
            Ok(Layout::V1)
        );
        assert_eq!(
            parse_storage_settings(&scale(r#"{"storage_v2":true}"#)),
            Ok(Layout::V2)
        );
        assert_eq!(parse_storage_settings(&scale("{}")), Ok(Layout::V1));
        assert!(
            parse_storage_settings(&scale(r#"{"storage_v2":3}"#))
                .unwrap_err()
                .contains("not a bool")
        );
        assert!(
            parse_storage_settings(&scale("[1]"))
                .unwrap_err()
                .contains("not an object")
        );
        assert!(
            parse_storage_settings(b"\x50{")
                .unwrap_err()
                .contains("byte vector")
        );
    }

    #[test]
    fn malformed_values_are_errors_naming_the_key() {
        let err = decode_bytecode(table::BYTECODES, &[0xab; 32], &[0, 0, 0, 9, 1]).unwrap_err();
        assert!(err.to_string().contains("Bytecodes"), "{err}");
        assert!(err.to_string().contains("0xabab"), "{err}");
        assert!(decode_storage(table::PLAIN_STORAGE_STATE, &[1; 20], &[0; 10]).is_err());
    }
}
