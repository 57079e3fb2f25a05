//! Verification: the destination holds exactly what the source says, entry for entry.

use std::borrow::Cow;

use alloy_primitives::{B256, Keccak256, hex};
use bal_replay_state::{ACCOUNT_VALUE_LEN, RocksStore, StateError, cf};

use crate::{
    MigrateError,
    copy::convert,
    source::{RethDb, Snapshot, TableKind},
};

/// How many mismatches a report keeps (all are counted).
const KEPT_MISMATCHES: usize = 20;

/// One difference between source and destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Source table.
    pub table: &'static str,
    /// Destination key, hex.
    pub key: String,
    /// Expected destination value, hex.
    pub expected: String,
    /// Value found (`None`: missing).
    pub found: Option<String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.found {
            None => write!(
                f,
                "{} key {}: missing (expected {})",
                self.table, self.key, self.expected
            ),
            Some(found) => write!(
                f,
                "{} key {}: {} (expected {})",
                self.table, self.key, found, self.expected
            ),
        }
    }
}

/// Entry counts of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCounts {
    /// The kind of state.
    pub table: TableKind,
    /// Entries the source holds that the flat state stores (zero slots excluded).
    pub source: u64,
    /// Entries in the destination column family.
    pub destination: u64,
}

/// The result of [`crate::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Counts per table.
    pub counts: Vec<TableCounts>,
    /// Entries compared value by value.
    pub compared: u64,
    /// All mismatches found (values and counts).
    pub mismatch_count: u64,
    /// The first mismatches.
    pub mismatches: Vec<Mismatch>,
    /// Applied height of the destination vs. the source's Execution checkpoint, if they differ.
    pub height_mismatch: Option<(Option<u64>, u64)>,
    /// The destination's content digest ([`RocksStore::content_digest`], computed streaming).
    pub digest: B256,
}

impl VerifyReport {
    /// Whether source and destination agree.
    pub fn is_ok(&self) -> bool {
        self.mismatch_count == 0 && self.height_mismatch.is_none()
    }
}

/// Whether an entry is in the sample: a fixed hash of its key, so two runs compare the same entries.
fn sampled(key: &[u8], fraction: f64) -> bool {
    if fraction >= 1.0 {
        return true;
    }
    // FNV-1a then a splitmix64 finalizer: plain addresses are not uniformly distributed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h as f64 / u64::MAX as f64) < fraction
}

/// Compares `store` with `src` as of `snapshot`: every table and the height in that one read
/// transaction, so a source being written cannot make the comparison see two states.
pub(crate) fn verify_store(
    src: &RethDb,
    snapshot: &Snapshot<'_>,
    store: &RocksStore,
    sample: f64,
) -> Result<VerifyReport, MigrateError> {
    let layout = src.layout();
    let dst_path = store.path().to_path_buf();
    let mut report = VerifyReport {
        counts: Vec::new(),
        compared: 0,
        mismatch_count: 0,
        mismatches: Vec::new(),
        height_mismatch: None,
        digest: B256::ZERO,
    };
    let record = |report: &mut VerifyReport, m: Mismatch| {
        report.mismatch_count += 1;
        if report.mismatches.len() < KEPT_MISMATCHES {
            report.mismatches.push(m);
        }
    };
    let db = store.raw_db();
    // One snapshot for the comparison and the digest, so both describe the same contents.
    let dst_snapshot = db.snapshot();
    let read_err = |table: &'static str| {
        move |source| MigrateError::Read {
            table,
            key: String::new(),
            source,
        }
    };
    for kind in TableKind::ALL {
        let table_name = layout.table(kind);
        let cf = dst_cf(store, kind.dst_cf())?;
        let txn = snapshot.txn();
        let table = src.open_table(txn, table_name)?;
        let mdbx = |source| MigrateError::Mdbx {
            table: table_name,
            source,
        };
        let mut cursor = txn.cursor(&table).map_err(mdbx)?;
        let mut source_count = 0u64;
        // A full comparison walks source and destination side by side: both are sorted by the same
        // key bytes (a storage key is the account key ++ the sub-key MDBX sorts duplicates by), so
        // it needs no point reads and also finds destination keys the source lacks.
        let merge = sample >= 1.0;
        let mut it = dst_snapshot.raw_iterator_cf(cf);
        it.seek_to_first();
        let mut destination = 0u64;
        let mut current = cursor
            .first::<Cow<'_, [u8]>, Cow<'_, [u8]>>()
            .map_err(mdbx)?;
        while let Some((k, v)) = current {
            if let Some((dk, dv)) = convert(layout, kind, &k, &v)? {
                source_count += 1;
                if merge {
                    report.compared += 1;
                    while let Some(extra) = it.key().filter(|key| *key < &dk[..]) {
                        record(&mut report, extra_entry(table_name, extra, it.value()));
                        destination += 1;
                        it.next();
                    }
                    let found = it.key().filter(|key| *key == &dk[..]).map(|_| it.value());
                    let found = found.flatten();
                    if found != Some(&dv[..]) {
                        record(&mut report, mismatch(table_name, &dk, &dv, found));
                    }
                    if found.is_some() {
                        destination += 1;
                        it.next();
                    }
                } else if sampled(&dk, sample) {
                    report.compared += 1;
                    let found = dst_snapshot.get_pinned_cf(cf, &dk).map_err(|source| {
                        MigrateError::Read {
                            table: kind.dst_cf(),
                            key: hex::encode_prefixed(&dk),
                            source,
                        }
                    })?;
                    if found.as_deref() != Some(&dv[..]) {
                        record(
                            &mut report,
                            mismatch(table_name, &dk, &dv, found.as_deref()),
                        );
                    }
                }
            }
            current = cursor.next().map_err(mdbx)?;
        }
        // Destination keys after the source's last (merge), or all of them (sampled): counted.
        while let Some(extra) = it.key() {
            if merge {
                record(&mut report, extra_entry(table_name, extra, it.value()));
            }
            destination += 1;
            it.next();
        }
        it.status().map_err(read_err(kind.dst_cf()))?;
        if destination != source_count {
            record(
                &mut report,
                Mismatch {
                    table: table_name,
                    key: "(entry count)".into(),
                    expected: source_count.to_string(),
                    found: Some(destination.to_string()),
                },
            );
        }
        report.counts.push(TableCounts {
            table: kind,
            source: source_count,
            destination,
        });
    }
    let height = snapshot.height();
    let applied = dst_snapshot
        .get_pinned_cf(dst_cf(store, cf::META)?, cf::META_APPLIED_BLOCK)
        .map_err(read_err(cf::META))?
        .and_then(|v| <[u8; 8]>::try_from(&*v).ok())
        .map(u64::from_be_bytes);
    if applied != Some(height) {
        report.height_mismatch = Some((applied, height));
    }
    report.digest = streaming_digest(store, &dst_snapshot, applied)
        .map_err(|e| MigrateError::state(&dst_path, e))?;
    Ok(report)
}

fn dst_cf<'a>(
    store: &'a RocksStore,
    name: &'static str,
) -> Result<&'a rocksdb::ColumnFamily, MigrateError> {
    store
        .raw_db()
        .cf_handle(name)
        .ok_or_else(|| MigrateError::State {
            path: store.path().to_path_buf(),
            source: StateError::MissingColumnFamily { name },
        })
}

fn mismatch(table: &'static str, key: &[u8], expected: &[u8], found: Option<&[u8]>) -> Mismatch {
    Mismatch {
        table,
        key: hex::encode_prefixed(key),
        expected: hex::encode_prefixed(expected),
        found: found.map(hex::encode_prefixed),
    }
}

fn extra_entry(table: &'static str, key: &[u8], value: Option<&[u8]>) -> Mismatch {
    Mismatch {
        table,
        key: hex::encode_prefixed(key),
        expected: "nothing (not in the source)".into(),
        found: Some(value.map(hex::encode_prefixed).unwrap_or_default()),
    }
}

/// [`bal_replay_state::FlatContents::digest`] computed while streaming the store, so verifying a
/// mainnet-sized state does not load it into memory (`RocksStore::content_digest` does). Equal to
/// it by construction of the same serialization; the tests check both agree.
fn streaming_digest(
    store: &RocksStore,
    snapshot: &rocksdb::Snapshot<'_>,
    applied: Option<u64>,
) -> Result<B256, StateError> {
    let read = |table: &'static str| {
        move |source| StateError::Read {
            table,
            key: String::new(),
            source,
        }
    };
    let cf_of = |name: &'static str| {
        store
            .raw_db()
            .cf_handle(name)
            .ok_or(StateError::MissingColumnFamily { name })
    };
    // The serialization puts each table's count before its entries: count first, then hash.
    let count = |name: &'static str| -> Result<u64, StateError> {
        let mut it = snapshot.raw_iterator_cf(cf_of(name)?);
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status().map_err(read(name))?;
        Ok(n)
    };
    let corrupt = |table: &'static str, key: &[u8], reason: &str| StateError::Corrupt {
        table,
        key: hex::encode_prefixed(key),
        reason: reason.to_string(),
    };
    let mut h = Keccak256::new();
    let name = store.key_scheme().name().as_bytes();
    h.update([name.len() as u8]);
    h.update(name);
    for table in [cf::ACCOUNTS, cf::STORAGE, cf::CODE, cf::BLOCK_HASHES] {
        h.update(count(table)?.to_be_bytes());
        let mut it = snapshot.raw_iterator_cf(cf_of(table)?);
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
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
            it.next();
        }
        it.status().map_err(read(table))?;
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

#[cfg(test)]
mod tests {
    use super::sampled;

    #[test]
    fn sampling_is_deterministic_and_near_the_fraction() {
        let hits = (0u32..10_000)
            .filter(|i| sampled(&i.to_be_bytes(), 0.1))
            .count();
        assert!((800..1200).contains(&hits), "{hits}");
        assert!(sampled(b"x", 1.0));
        assert_eq!(sampled(b"abc", 0.5), sampled(b"abc", 0.5));
    }
}
