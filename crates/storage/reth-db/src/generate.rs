//! Test data: reth-layout databases written with the same table names, flags, key encodings and
//! `Compact` values as reth v2.5.1 writes, for benchmarks and for what the small fixtures lack.
//!
//! - [`generate_source`]: a synthetic state of any size. Its content is a pure function of the
//!   options (no randomness beyond keccak of counters), so two generated sources with the same
//!   options are identical.
//! - [`write_source_from_flat`] / [`write_source_from_store`]: a flat state's contents in reth's
//!   layout (the inverse of a migration), to replay over reth's layout in place.
//! - [`churn_source`]: a node writing to a generated database (never another), one height per
//!   round, for tests of reading a live source.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY, U256, keccak256};
use bal_replay_rocks::{FlatEntry, RocksOptions, RocksStore};
use bal_replay_state::FlatContents;
use libmdbx::{
    Database, DatabaseOptions, Mode, NoWriteMap, RW, ReadWriteOptions, SyncMode, Table, TableFlags,
    Transaction, WriteFlags,
};
use reth_codecs::Compact;
use reth_primitives_traits::{Account, Bytecode, StorageEntry};

use crate::{Layout, RethDb, RethDbError, TableKind, table};

/// What to generate (with the `clap` feature, `bal-migrate gen-source`'s options).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct GenerateOptions {
    /// Layout: v1 (plain) or v2 (hashed).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Layout::V2))]
    pub layout: Layout,
    /// State entries (accounts + slots + codes).
    ///
    /// Approximately: a quarter are accounts, one in sixteen of them a contract, the rest slots
    /// spread evenly over the contracts.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1_000_000))]
    pub entries: u64,
    /// Execution stage checkpoint to record.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub height: u64,
}

/// What was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerateSummary {
    /// The `db` directory written.
    pub db: PathBuf,
    /// Its layout.
    pub layout: Layout,
    /// Accounts written.
    pub accounts: u64,
    /// Slots written.
    pub slots: u64,
    /// Codes written.
    pub codes: u64,
    /// Time taken.
    pub elapsed: Duration,
}

impl std::fmt::Display for GenerateSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "generated {} ({}): {} accounts, {} slots, {} codes in {:.1} s",
            self.db.display(),
            self.layout.name(),
            self.accounts,
            self.slots,
            self.codes,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Distinct contract codes (contracts share them, as on mainnet).
const MAX_CODES: u64 = 64;
/// Entries per write transaction: bounds the dirty pages a transaction holds.
const ENTRIES_PER_TXN: u64 = 200_000;

/// The address of account `i`.
pub fn generated_address(i: u64) -> Address {
    Address::from_word(keccak256(i.to_be_bytes()))
}

fn code_of(k: u64) -> Bytes {
    // PUSH1 k, PUSH1 0, SSTORE, then k+1 JUMPDESTs (so codes differ in length too), STOP.
    let mut code = vec![0x60, k as u8, 0x60, 0x00, 0x55];
    code.extend(std::iter::repeat_n(0x5b, k as usize + 1));
    code.push(0x00);
    Bytes::from(code)
}

/// A SCALE-encoded byte vector (reth's encoding of `Metadata` values).
fn scale_bytes(payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut out = if len < 64 {
        vec![(len as u8) << 2]
    } else {
        // Two-byte mode (up to 2^14 bytes), which is all a settings value needs.
        (((len as u16) << 2) | 0b01).to_le_bytes().to_vec()
    };
    out.extend_from_slice(payload);
    out
}

struct Writer<'db> {
    db: &'db Database<NoWriteMap>,
    txn: Option<Transaction<'db, RW, NoWriteMap>>,
    in_txn: u64,
}

impl<'db> Writer<'db> {
    fn put(&mut self, name: &'static str, key: &[u8], value: &[u8]) -> Result<(), RethDbError> {
        let mdbx = |source| RethDbError::Mdbx {
            table: name,
            source,
        };
        let txn = match self.txn.take() {
            Some(txn) => txn,
            None => self.db.begin_rw_txn().map_err(mdbx)?,
        };
        let t: Table<'_> = txn.open_table(Some(name)).map_err(mdbx)?;
        txn.put(&t, key, value, WriteFlags::empty()).map_err(mdbx)?;
        self.txn = Some(txn);
        self.in_txn += 1;
        if self.in_txn >= ENTRIES_PER_TXN {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), RethDbError> {
        if let Some(txn) = self.txn.take() {
            txn.commit()
                .map_err(|source| RethDbError::Mdbx { table: "-", source })?;
        }
        self.in_txn = 0;
        Ok(())
    }
}

/// Read-write options for a generated database (a generated file is thrown away on a crash, so
/// durability would only slow it down).
/// Opens (creating if needed) the MDBX environment at `db_dir` for writing test data: no syncs
/// (a generated database is rebuilt, never recovered), room to grow to 1 TiB.
fn open_rw(db_dir: &Path) -> Result<Database<NoWriteMap>, RethDbError> {
    let options = DatabaseOptions {
        max_tables: Some(64),
        mode: Mode::ReadWrite(ReadWriteOptions {
            sync_mode: SyncMode::UtterlyNoSync,
            max_size: Some(1 << 40),
            growth_step: Some(1 << 28),
            ..ReadWriteOptions::default()
        }),
        ..DatabaseOptions::default()
    };
    Database::<NoWriteMap>::open_with_options(db_dir, options).map_err(|source| RethDbError::Open {
        path: db_dir.to_path_buf(),
        source,
    })
}

/// The Execution checkpoint value for `height` (`StageCheckpoint` without a unit checkpoint).
fn stage_checkpoint(height: u64) -> Vec<u8> {
    let mut checkpoint = Vec::new();
    let len = height.to_compact(&mut checkpoint);
    checkpoint.insert(0, len as u8);
    checkpoint
}

/// Accounts [`churn_source`] rewrites every round (generated accounts below this index, the
/// contracts among them excepted).
const CHURN_ACCOUNTS: u64 = 512;
/// Index of the generated address a churn round at height `h` creates: `CHURN_NEW + h`.
const CHURN_NEW: u64 = 1 << 40;

/// The file [`generate_source`] writes into the `db` directory it generated, once every entry is
/// committed. [`churn_source`] writes only where it finds one: a database it writes to is one of
/// this crate's test databases, never a node's.
pub const GENERATED_MARKER: &str = "bal-replay-generated";

/// Plays a node writing to a source [`generate_source`] wrote (`datadir` or its `db` directory
/// holding [`GENERATED_MARKER`]; anything else, a node's database above all, is refused with
/// [`RethDbError::NotGenerated`] before it is opened): each round is one write transaction that
/// advances the Execution checkpoint by one, to `h`, sets the nonce and balance of the generated
/// accounts below [`CHURN_ACCOUNTS`] (contracts excepted) to `h`, creates one account, and adds
/// one storage slot to the first contract, all functions of `h`.
/// So the state at any height is a pure function of the generated source and that height: a test
/// can rebuild the one a live migration read by churning a copy of the source up to it.
///
/// Runs `rounds` rounds, or until `stop` says so, pausing `pause` after each; returns the last
/// height written.
pub fn churn_source(
    datadir: &Path,
    rounds: Option<u64>,
    pause: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<u64, RethDbError> {
    // Checked before any open: even a read-only open writes MDBX's lock file.
    let db_dir = if datadir.join("mdbx.dat").is_file() {
        datadir.to_path_buf()
    } else {
        datadir.join("db")
    };
    let marker = db_dir.join(GENERATED_MARKER);
    if !marker.is_file() {
        return Err(RethDbError::NotGenerated { marker });
    }
    let (layout, mut height) = {
        let src = RethDb::open(&db_dir)?;
        (src.layout(), src.execution_height()?)
    };
    let db = open_rw(&db_dir)?;
    let key = |a: Address| -> Vec<u8> {
        match layout {
            Layout::V1 => a.to_vec(),
            Layout::V2 => keccak256(a).to_vec(),
        }
    };
    let contract = key(generated_address(0));
    let (acc_table, st_table) = (
        layout.table(TableKind::Accounts),
        layout.table(TableKind::Storage),
    );
    let mut done = 0u64;
    let mut buf = Vec::with_capacity(128);
    while rounds.is_none_or(|n| done < n) && !stop() {
        height += 1;
        let mut w = Writer {
            db: &db,
            txn: None,
            in_txn: 0,
        };
        let account = Account {
            nonce: height,
            balance: U256::from(height),
            bytecode_hash: None,
        };
        buf.clear();
        account.to_compact(&mut buf);
        for i in (0..CHURN_ACCOUNTS).filter(|i| i % 16 != 0) {
            w.put(acc_table, &key(generated_address(i)), &buf)?;
        }
        w.put(acc_table, &key(generated_address(CHURN_NEW + height)), &buf)?;
        let slot = B256::from(U256::from(CHURN_NEW + height));
        let entry = StorageEntry {
            key: match layout {
                Layout::V1 => slot,
                Layout::V2 => keccak256(slot),
            },
            value: U256::from(height),
        };
        buf.clear();
        entry.to_compact(&mut buf);
        w.put(st_table, &contract, &buf)?;
        w.put(
            table::STAGE_CHECKPOINTS,
            b"Execution",
            &stage_checkpoint(height),
        )?;
        w.commit()?;
        done += 1;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    Ok(height)
}

/// Creates a reth-layout database in `datadir/db` (which must not exist) with every table, the
/// layout's storage settings and the Execution checkpoint at `height`.
fn create_source(
    datadir: &Path,
    layout: Layout,
    height: u64,
) -> Result<(Database<NoWriteMap>, PathBuf), RethDbError> {
    let db_dir = datadir.join("db");
    if db_dir.exists() {
        return Err(RethDbError::AlreadyExists { path: db_dir });
    }
    std::fs::create_dir_all(&db_dir).map_err(|source| RethDbError::Create {
        path: db_dir.clone(),
        source,
    })?;
    let db = open_rw(&db_dir)?;
    {
        let txn = db
            .begin_rw_txn()
            .map_err(|source| RethDbError::Mdbx { table: "-", source })?;
        for (name, flags) in [
            (table::PLAIN_ACCOUNT_STATE, TableFlags::empty()),
            (table::PLAIN_STORAGE_STATE, TableFlags::DUP_SORT),
            (table::HASHED_ACCOUNTS, TableFlags::empty()),
            (table::HASHED_STORAGES, TableFlags::DUP_SORT),
            (table::BYTECODES, TableFlags::empty()),
            (table::METADATA, TableFlags::empty()),
            (table::STAGE_CHECKPOINTS, TableFlags::empty()),
            (table::CANONICAL_HEADERS, TableFlags::empty()),
        ] {
            txn.create_table(Some(name), flags)
                .map_err(|source| RethDbError::Mdbx {
                    table: name,
                    source,
                })?;
        }
        txn.commit()
            .map_err(|source| RethDbError::Mdbx { table: "-", source })?;
    }
    let mut w = Writer {
        db: &db,
        txn: None,
        in_txn: 0,
    };
    let v2 = layout == Layout::V2;
    let settings = format!("{{\"storage_v2\":{v2}}}");
    w.put(
        table::METADATA,
        b"storage_settings",
        &scale_bytes(settings.as_bytes()),
    )?;
    w.put(
        table::STAGE_CHECKPOINTS,
        b"Execution",
        &stage_checkpoint(height),
    )?;

    w.commit()?;
    drop(w);
    Ok((db, db_dir))
}

/// Writes a flat state's contents as a reth database in `datadir/db` (which must not exist): a
/// plain state as the v1 layout, a hashed one as v2, block hashes into `CanonicalHeaders`, the
/// applied height as the Execution checkpoint. The inverse of a migration, for tests that replay
/// over reth's layout in place.
pub fn write_source_from_flat(
    datadir: &Path,
    contents: &FlatContents,
) -> Result<PathBuf, RethDbError> {
    let layout = Layout::of_key_scheme(contents.key_scheme);
    let (db, db_dir) = create_source(datadir, layout, contents.applied_block.unwrap_or(0))?;
    let mut w = EntryWriter::new(&db, layout);
    for (hash, code) in &contents.codes {
        w.put(FlatEntry::Code { hash: *hash, code })?;
    }
    for (key, account) in &contents.accounts {
        w.put(FlatEntry::Account {
            key,
            account: *account,
        })?;
    }
    for (key, value) in &contents.storage {
        w.put(FlatEntry::Slot { key, value: *value })?;
    }
    for (number, hash) in &contents.block_hashes {
        w.put(FlatEntry::BlockHash {
            number: *number,
            hash: *hash,
        })?;
    }
    w.finish()?;
    Ok(db_dir)
}

/// Writes flat-state entries into a reth database's tables, in its layout's encodings.
struct EntryWriter<'db> {
    w: Writer<'db>,
    layout: Layout,
    buf: Vec<u8>,
    counts: [usize; 4],
}

impl<'db> EntryWriter<'db> {
    fn new(db: &'db Database<NoWriteMap>, layout: Layout) -> Self {
        Self {
            w: Writer {
                db,
                txn: None,
                in_txn: 0,
            },
            layout,
            buf: Vec::with_capacity(256),
            counts: [0; 4],
        }
    }

    fn put(&mut self, entry: FlatEntry<'_>) -> Result<(), RethDbError> {
        let buf = &mut self.buf;
        buf.clear();
        match entry {
            FlatEntry::Code { hash, code } => {
                Bytecode::new_raw(Bytes::copy_from_slice(code)).to_compact(buf);
                self.counts[2] += 1;
                self.w.put(table::BYTECODES, hash.as_slice(), buf)
            }
            FlatEntry::Account { key, account } => {
                Account {
                    nonce: account.nonce,
                    balance: account.balance,
                    bytecode_hash: (account.code_hash != KECCAK256_EMPTY)
                        .then_some(account.code_hash),
                }
                .to_compact(buf);
                self.counts[0] += 1;
                self.w.put(self.layout.table(TableKind::Accounts), key, buf)
            }
            FlatEntry::Slot { key, value } => {
                let (account, slot) = key.split_at(self.layout.account_key_len().min(key.len()));
                let table = self.layout.table(TableKind::Storage);
                StorageEntry {
                    key: B256::try_from(slot).map_err(|_| RethDbError::Decode {
                        table,
                        key: alloy_primitives::hex::encode_prefixed(key),
                        reason: format!("storage key of {} bytes", key.len()),
                    })?,
                    value,
                }
                .to_compact(buf);
                self.counts[1] += 1;
                self.w.put(table, account, buf)
            }
            FlatEntry::BlockHash { number, hash } => {
                self.counts[3] += 1;
                self.w.put(
                    table::CANONICAL_HEADERS,
                    &number.to_be_bytes(),
                    hash.as_slice(),
                )
            }
        }
    }

    /// Commits the last transaction; the entries written of each kind.
    fn finish(mut self) -> Result<[usize; 4], RethDbError> {
        self.w.commit()?;
        Ok(self.counts)
    }
}

/// Writes a RocksDB flat state's contents as a reth database in `datadir/db` (which must not
/// exist), streaming: one entry at a time from a snapshot, in memory no more than one MDBX write
/// transaction, so a state of any size is written. `progress` is told the entries written so far
/// every 100,000. On an error the database directory it created is removed.
pub fn write_source_from_store(
    datadir: &Path,
    state: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<WrittenSource, RethDbError> {
    let flat_state = |source| RethDbError::FlatState {
        path: state.to_path_buf(),
        source,
    };
    let store = RocksStore::open(state, &RocksOptions::default()).map_err(flat_state)?;
    let height = bal_replay_state::StateReader::applied_block(&store).map_err(flat_state)?;
    let layout = Layout::of_key_scheme(store.key_scheme());
    let (db, db_dir) = create_source(datadir, layout, height.unwrap_or(0))?;
    let written = (|| {
        let mut w = EntryWriter::new(&db, layout);
        let mut done = 0u64;
        store
            .visit_entries(|entry| {
                w.put(entry).map_err(StreamError::Write)?;
                done += 1;
                if done.is_multiple_of(100_000) {
                    progress(done);
                }
                Ok(())
            })
            .map_err(|e| match e {
                StreamError::State(source) => flat_state(source),
                StreamError::Write(e) => e,
            })?;
        progress(done);
        w.finish()
    })();
    drop(db);
    match written {
        Ok([accounts, slots, codes, block_hashes]) => Ok(WrittenSource {
            db: db_dir,
            accounts,
            slots,
            codes,
            block_hashes,
            height,
        }),
        Err(e) => {
            // create_source made `db_dir` new, so it is ours to remove.
            if let Err(rm) = std::fs::remove_dir_all(&db_dir) {
                tracing::warn!(dir = %db_dir.display(), "removing a half-written source: {rm}");
            }
            Err(e)
        }
    }
}

/// A failure while streaming a flat state into MDBX: reading the state, or writing.
enum StreamError {
    State(bal_replay_state::StateError),
    Write(RethDbError),
}

impl From<bal_replay_state::StateError> for StreamError {
    fn from(e: bal_replay_state::StateError) -> Self {
        Self::State(e)
    }
}

/// What [`write_source_from_store`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenSource {
    /// The `db` directory written.
    pub db: PathBuf,
    /// Accounts written.
    pub accounts: usize,
    /// Slots written.
    pub slots: usize,
    /// Codes written.
    pub codes: usize,
    /// Block hashes written (`CanonicalHeaders`).
    pub block_hashes: usize,
    /// The Execution checkpoint recorded (the state's applied block).
    pub height: Option<u64>,
}

impl std::fmt::Display for WrittenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "wrote {}: {} accounts, {} slots, {} codes, {} block hashes at height {:?}",
            self.db.display(),
            self.accounts,
            self.slots,
            self.codes,
            self.block_hashes,
            self.height
        )
    }
}

/// Writes a reth-layout database into `datadir/db`, which must not exist yet, and marks it as
/// generated ([`GENERATED_MARKER`]) so that [`churn_source`] may write to it.
pub fn generate_source(
    datadir: &Path,
    opts: &GenerateOptions,
) -> Result<GenerateSummary, RethDbError> {
    let started = Instant::now();
    let (db, db_dir) = create_source(datadir, opts.layout, opts.height)?;
    let mut w = Writer {
        db: &db,
        txn: None,
        in_txn: 0,
    };
    let v2 = opts.layout == Layout::V2;
    let accounts = (opts.entries / 4).max(1);
    let contracts = (accounts / 16).max(1);
    let codes = contracts.min(MAX_CODES);
    let slots = opts.entries.saturating_sub(accounts + codes);
    let (acc_table, st_table) = (
        opts.layout.table(TableKind::Accounts),
        opts.layout.table(TableKind::Storage),
    );
    let account_key = |a: Address| -> Vec<u8> {
        if v2 {
            keccak256(a).to_vec()
        } else {
            a.to_vec()
        }
    };
    let mut code_hashes = Vec::with_capacity(codes as usize);
    let mut buf = Vec::with_capacity(256);
    for k in 0..codes {
        let code = Bytecode::new_raw(code_of(k));
        let hash = keccak256(code.original_bytes());
        buf.clear();
        code.to_compact(&mut buf);
        w.put(table::BYTECODES, hash.as_slice(), &buf)?;
        code_hashes.push(hash);
    }
    for i in 0..accounts {
        // Accounts 0, 16, 32, ... are the contracts.
        let is_contract = i % 16 == 0 && i / 16 < contracts;
        let account = Account {
            nonce: if is_contract { 1 } else { i % 1000 },
            balance: U256::from(i) * U256::from(1_000_000_007u64),
            bytecode_hash: is_contract.then(|| code_hashes[((i / 16) % codes) as usize]),
        };
        buf.clear();
        account.to_compact(&mut buf);
        w.put(acc_table, &account_key(generated_address(i)), &buf)?;
    }
    let per_contract = slots / contracts;
    let extra = slots % contracts;
    for c in 0..contracts {
        let key = account_key(generated_address(c * 16));
        let n = per_contract + u64::from(c < extra);
        for s in 0..n {
            let slot = B256::from(U256::from(s));
            let entry = StorageEntry {
                key: if v2 { keccak256(slot) } else { slot },
                // Never zero: reth does not store zero slots.
                value: U256::from(s + 1) * U256::from(c + 1),
            };
            buf.clear();
            entry.to_compact(&mut buf);
            w.put(st_table, &key, &buf)?;
        }
    }
    w.commit()?;
    drop(w);
    drop(db);
    let marker = db_dir.join(GENERATED_MARKER);
    std::fs::write(
        &marker,
        b"written by bal-replay-reth-db's generate_source\n",
    )
    .map_err(|source| RethDbError::Create {
        path: marker,
        source,
    })?;
    Ok(GenerateSummary {
        db: db_dir,
        layout: opts.layout,
        accounts,
        slots,
        codes,
        elapsed: started.elapsed(),
    })
}
