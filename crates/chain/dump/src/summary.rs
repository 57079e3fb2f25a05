//! What `bal-dump inspect` prints of a dump: the manifest, and one line per record.

use crate::{BlockRecord, Manifest};
use std::fmt;

/// The manifest in a few indented lines: format, chain and source; records and blocks; one line
/// per segment.
impl fmt::Display for Manifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let block = |b: Option<u64>| b.map(|b| b.to_string()).unwrap_or("-".into());
        writeln!(
            f,
            "  format version {} (manifest version {}), chain id {}, {}, source {:?}",
            self.format_version,
            self.manifest_version,
            self.chain_id,
            if self.chained {
                "chained"
            } else {
                "independent blocks"
            },
            self.source
        )?;
        match &self.schedule {
            Some(schedule) => writeln!(
                f,
                "  fork schedule in the manifest: {} forks, the last {}",
                schedule.forks.len(),
                schedule.forks.last().map_or("-", |e| e.fork.as_str())
            )?,
            None => writeln!(f, "  no fork schedule in the manifest (known by chain id)")?,
        }
        write!(
            f,
            "  {} records, blocks {}..={}, {} segment(s)",
            self.record_count,
            block(self.first_block),
            block(self.last_block),
            self.segments.len()
        )?;
        for s in &self.segments {
            write!(
                f,
                "\n    {}: blocks {}..={}, {} records, {} bytes, crc32 {:#010x}",
                s.file, s.first_block, s.last_block, s.records, s.bytes, s.crc32
            )?;
        }
        Ok(())
    }
}

/// One record in one table row: block, transactions, gas, BAL accounts and bytes, pre-state keys
/// (headed by [`RecordSummary::HEADER`]).
#[derive(Debug, Clone, Copy)]
pub struct RecordSummary<'a>(pub &'a BlockRecord);

impl RecordSummary<'_> {
    /// The column headings, aligned with the rows.
    pub const HEADER: &'static str = "     block    txs         gas bal accts  bal bytes  pre keys";
}

impl fmt::Display for RecordSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        write!(
            f,
            "{:>10} {:>6} {:>11} {:>9} {:>10} {:>9}",
            r.number(),
            r.tx_count(),
            r.gas_used(),
            r.bal.len(),
            r.bal_rlp_len(),
            r.pre_state.key_count()
        )
    }
}
