//! reth's MDBX database, read as it is: a reth v2.5.1 node's latest state, in either of its layouts.
//!
//! A synced node keeps its latest state in MDBX tables, in one of two layouts, recorded as
//! `StorageSettings` (`{"storage_v2": bool}`) in its `Metadata` table:
//!
//! | layout | accounts | storage (DupSort) | flat state scheme |
//! |---|---|---|---|
//! | v1 (legacy) | `PlainAccountState`: address -> `Account` | `PlainStorageState`: address -> slot ++ value | `KeyScheme::Plain` |
//! | v2 (default) | `HashedAccounts`: keccak(address) -> `Account` | `HashedStorages`: keccak(address) -> keccak(slot) ++ value | `KeyScheme::Hashed` |
//!
//! `Bytecodes` (code hash -> `Bytecode`) exists in both. The state's height is the `Execution`
//! stage checkpoint (`StageCheckpoints`). Values are reth's `Compact` encodings, decoded by reth's
//! own implementations (`reth-primitives-traits`), never by ours ([`decode_account`],
//! [`decode_storage`], [`decode_bytecode`]), so a change in reth's encoding shows up as a
//! dependency bump rather than as silently wrong state.
//!
//! [`RethDb`] opens a database read-only and detects its [`Layout`]; a [`Snapshot`] is one read
//! transaction with the height and block hash read in it, so everything read through it is one
//! state even while a node keeps writing. [`RethDb::identity_in`] reads what the database says of
//! its chain (by its genesis hash, [`KNOWN_CHAINS`]: reth keeps no chain id in MDBX) and of its
//! block's hash (`CanonicalHeaders`, else `HeaderNumbers`). Two crates read through it:
//! `bal-replay-migrate` (copies the state into RocksDB) and `bal-replay-mdbx-state` (replays over
//! it in place).
//!
//! [`generate`] is the other direction, for tests and benchmarks: it writes reth-layout databases
//! (synthetic ones of any size, or a flat state's contents) and plays a node writing to one.
//!
//! ```no_run
//! use bal_replay_reth_db::RethDb;
//! let db = RethDb::open("/data/reth")?;
//! let snapshot = db.snapshot()?;
//! println!("{} layout at block {}", db.layout().name(), snapshot.height());
//! # Ok::<(), bal_replay_reth_db::RethDbError>(())
//! ```
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod error;
pub mod generate;
mod identity;
mod reader;

pub use error::RethDbError;
pub use generate::{
    GenerateOptions, GenerateSummary, WrittenSource, churn_source, generate_source,
    generated_address, write_source_from_flat, write_source_from_store,
};
pub use identity::{KNOWN_CHAINS, KnownChain, SourceIdentity};
pub use reader::{
    Layout, RethDb, Snapshot, TableKind, decode_account, decode_account_flat, decode_bytecode,
    decode_storage, table,
};
