//! Verification: the destination holds exactly what the source says, entry for entry.

use std::borrow::Cow;

use alloy_primitives::{B256, hex};
use bal_replay_reth_db::{RethDb, RethDbError, Snapshot, TableKind};
use bal_replay_rocks::{EncodedCursor, EncodedSnapshot, RocksStore};

use crate::{
    MigrateError,
    copy::{convert, destination_table},
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

    /// The report for people, of a comparison at source height `height`: counts per table, the
    /// mismatches kept, and a last line with the totals and the content digest.
    pub fn describe(&self, height: u64) -> String {
        let mut lines: Vec<String> = self
            .counts
            .iter()
            .map(|c| {
                format!(
                    "{:>9}: source {} destination {}",
                    c.table.name(),
                    c.source,
                    c.destination
                )
            })
            .collect();
        lines.extend(self.mismatches.iter().map(|m| format!("mismatch: {m}")));
        if let Some((found, expected)) = self.height_mismatch {
            lines.push(format!(
                "mismatch: applied block {found:?}, source height {expected}"
            ));
        }
        lines.push(format!(
            "verified {} entries ({} sampled) at block {height}: {} mismatches; content digest {}",
            self.counts.iter().map(|c| c.source).sum::<u64>(),
            self.compared,
            self.mismatch_count,
            self.digest
        ));
        lines.join("\n")
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
    let dst_err = |e| MigrateError::state(store.path(), e);
    let mut report = VerifyReport {
        counts: Vec::new(),
        compared: 0,
        mismatch_count: 0,
        mismatches: Vec::new(),
        height_mismatch: None,
        digest: B256::ZERO,
    };
    // One snapshot for the comparison and the digest, so both describe the same contents.
    let dst = store.encoded_snapshot();
    for kind in TableKind::ALL {
        let counts = compare_table(src, snapshot, &dst, kind, sample, &mut report)?;
        report.counts.push(counts);
    }
    let height = snapshot.height();
    let applied = dst.applied_block().map_err(dst_err)?;
    if applied != Some(height) {
        report.height_mismatch = Some((applied, height));
    }
    report.digest = dst.content_digest(applied).map_err(dst_err)?;
    Ok(report)
}

impl VerifyReport {
    fn record(&mut self, m: Mismatch) {
        self.mismatch_count += 1;
        if self.mismatches.len() < KEPT_MISMATCHES {
            self.mismatches.push(m);
        }
    }
}

/// Compares one table: a full comparison (`sample` >= 1) walks source and destination side by
/// side, a sampled one reads the sampled keys from the destination; both count every entry.
fn compare_table(
    src: &RethDb,
    snapshot: &Snapshot<'_>,
    dst: &EncodedSnapshot<'_>,
    kind: TableKind,
    sample: f64,
    report: &mut VerifyReport,
) -> Result<TableCounts, MigrateError> {
    let dst_err = |e| MigrateError::state(dst.store().path(), e);
    let layout = src.layout();
    let table_name = layout.table(kind);
    let txn = snapshot.txn();
    let table = src.open_table(txn, table_name)?;
    let mdbx = |source| {
        MigrateError::from(RethDbError::Mdbx {
            table: table_name,
            source,
        })
    };
    let mut cursor = txn.cursor(&table).map_err(mdbx)?;
    let mut source_count = 0u64;
    // A full comparison walks source and destination side by side: both are sorted by the same
    // key bytes (a storage key is the account key ++ the sub-key MDBX sorts duplicates by), so
    // it needs no point reads and also finds destination keys the source lacks.
    let merge = sample >= 1.0;
    let mut it = dst.cursor(destination_table(kind)).map_err(dst_err)?;
    let mut destination = 0u64;
    let mut current = cursor
        .first::<Cow<'_, [u8]>, Cow<'_, [u8]>>()
        .map_err(mdbx)?;
    while let Some((k, v)) = current {
        if let Some((dk, dv)) = convert(layout, kind, &k, &v)? {
            source_count += 1;
            if merge {
                report.compared += 1;
                destination += merge_step(&mut it, table_name, &dk, &dv, report);
            } else if sampled(&dk, sample) {
                report.compared += 1;
                let found = dst.get(destination_table(kind), &dk).map_err(dst_err)?;
                if found.as_deref() != Some(&dv[..]) {
                    report.record(mismatch(table_name, &dk, &dv, found.as_deref()));
                }
            }
        }
        current = cursor.next().map_err(mdbx)?;
    }
    // Destination keys after the source's last (merge), or all of them (sampled): counted.
    while let Some(extra) = it.key() {
        if merge {
            report.record(extra_entry(table_name, extra, it.value()));
        }
        destination += 1;
        it.advance();
    }
    it.finish().map_err(dst_err)?;
    if destination != source_count {
        report.record(Mismatch {
            table: table_name,
            key: "(entry count)".into(),
            expected: source_count.to_string(),
            found: Some(destination.to_string()),
        });
    }
    Ok(TableCounts {
        table: kind,
        source: source_count,
        destination,
    })
}

/// One step of the side-by-side walk: records the destination entries before `dk` (not in the
/// source) and whether `dk` holds `dv`; returns the destination entries passed.
fn merge_step(
    it: &mut EncodedCursor<'_>,
    table: &'static str,
    dk: &[u8],
    dv: &[u8],
    report: &mut VerifyReport,
) -> u64 {
    let mut passed = 0;
    while let Some(extra) = it.key().filter(|key| *key < dk) {
        report.record(extra_entry(table, extra, it.value()));
        passed += 1;
        it.advance();
    }
    let found = it.key().filter(|key| *key == dk).and_then(|_| it.value());
    if found != Some(dv) {
        report.record(mismatch(table, dk, dv, found));
    }
    if found.is_some() {
        passed += 1;
        it.advance();
    }
    passed
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
