//! Keeping a dump equal to the canonical chain: commit, revert, resume.

use crate::{ExexError, RecordError};
use alloy_primitives::B256;
use bal_replay_dump::{BlockRecord, DumpMeta, DumpReader, DumpWriter, Manifest, WriterOptions};
use std::path::Path;

/// The block numbers to dump: both ends optional and inclusive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockRange {
    /// First block to dump (`--bal.from-block`).
    pub from: Option<u64>,
    /// Last block to dump (`--bal.to-block`).
    pub to: Option<u64>,
}

impl BlockRange {
    /// Whether `number` is in the range.
    pub fn contains(&self, number: u64) -> bool {
        self.from.is_none_or(|from| number >= from) && self.to.is_none_or(|to| number <= to)
    }
}

/// What a dumper needs to know of a block on the node's chain before re-executing it.
pub trait ChainBlock {
    /// Block number.
    fn number(&self) -> u64;
    /// Block hash.
    fn hash(&self) -> B256;
    /// Parent hash.
    fn parent_hash(&self) -> B256;
}

/// What one [`ChainDumper::commit`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitOutcome {
    /// Records appended (and made durable).
    pub dumped: u64,
    /// Blocks the dump already held under the same hash (a notification replayed after restart).
    pub already_dumped: u64,
    /// Blocks outside the range.
    pub skipped: u64,
}

/// Keeps a chained dump equal to a prefix of the canonical chain (see the crate docs).
#[derive(Debug)]
pub struct ChainDumper {
    writer: DumpWriter,
    range: BlockRange,
    /// Number and hash of the last record: all that linking the next block needs.
    last: Option<(u64, B256)>,
}

impl ChainDumper {
    /// Opens the dump in `dir`, resuming it if it exists (it must be a chained dump of `chain_id`),
    /// creating it otherwise.
    pub fn open(dir: &Path, chain_id: u64, range: BlockRange) -> Result<Self, ExexError> {
        let incompatible = |reason: String| ExexError::Incompatible {
            dir: dir.display().to_string(),
            reason,
        };
        if Manifest::path_in(dir).exists() {
            // The writer cuts any bytes a crash left past the manifest before the reader looks.
            let writer = DumpWriter::resume(dir)?;
            let manifest = writer.manifest();
            if manifest.chain_id != chain_id {
                return Err(incompatible(format!(
                    "it is for chain {}, the node runs chain {chain_id}",
                    manifest.chain_id
                )));
            }
            if !manifest.chained {
                return Err(incompatible(
                    "it is not a chained dump (consecutive blocks of one chain)".into(),
                ));
            }
            let last = DumpReader::open(dir)?
                .last_record()?
                .map(|record| (record.number(), record.block.header.hash_slow()));
            tracing::info!(dir = %dir.display(), last = ?last.map(|l| l.0), "resumed dump");
            Ok(Self {
                writer,
                range,
                last,
            })
        } else {
            let meta = DumpMeta {
                chain_id,
                chained: true,
                source: "reth-exex".into(),
            };
            let writer = DumpWriter::create(dir, meta, WriterOptions::default())?;
            Ok(Self {
                writer,
                range,
                last: None,
            })
        }
    }

    /// Number and hash of the last durable record: where the node's notifications resume.
    pub fn last_dumped(&self) -> Option<(u64, B256)> {
        self.last
    }

    /// The dump's manifest.
    pub fn manifest(&self) -> &Manifest {
        self.writer.manifest()
    }

    /// The blocks this dumper dumps.
    pub fn range(&self) -> BlockRange {
        self.range
    }

    /// Forgets every record from `first_reverted` on, durably. Returns how many were removed.
    pub fn revert(&mut self, first_reverted: u64) -> Result<u64, ExexError> {
        let removed = self.writer.truncate_after(first_reverted.checked_sub(1))?;
        if removed > 0 {
            self.last = DumpReader::open(self.writer.dir())?
                .last_record()?
                .map(|record| (record.number(), record.block.header.hash_slow()));
            tracing::info!(first_reverted, removed, "reverted dump");
        }
        Ok(removed)
    }

    /// Appends the records of `blocks` (ascending, consecutive: a committed chain segment), built by
    /// `record` only for blocks the dump needs, then makes them durable. After it returns, the
    /// node may be told every block of `blocks` is finished.
    pub fn commit<B: ChainBlock>(
        &mut self,
        blocks: &[B],
        mut record: impl FnMut(&B) -> Result<BlockRecord, RecordError>,
    ) -> Result<CommitOutcome, ExexError> {
        let mut outcome = CommitOutcome::default();
        for block in blocks {
            let number = block.number();
            if let Some((last, last_hash)) = self.last
                && number <= last
            {
                // Only the last record's hash is at hand; an older block replayed after a restart
                // is below the resume head, so reth does not send it.
                if number == last && block.hash() != last_hash {
                    return Err(ExexError::Diverged {
                        number,
                        dumped: last_hash,
                        chain: block.hash(),
                    });
                }
                outcome.already_dumped += 1;
                continue;
            }
            if !self.range.contains(number) {
                outcome.skipped += 1;
                continue;
            }
            self.check_links(number, block.parent_hash())?;
            let record = record(block).map_err(|source| ExexError::Record {
                block: number,
                source,
            })?;
            self.append(record, Some(block.hash()))?;
            outcome.dumped += 1;
        }
        if outcome.dumped > 0 {
            self.flush()?;
        }
        Ok(outcome)
    }

    /// Appends an already built record (checked to link to the last one), not yet durable: call
    /// [`flush`](Self::flush). The historical range dump uses this.
    pub fn append_record(&mut self, record: BlockRecord) -> Result<(), ExexError> {
        self.check_links(record.number(), record.block.header.parent_hash)?;
        self.append(record, None)
    }

    /// Makes every appended record durable.
    pub fn flush(&mut self) -> Result<(), ExexError> {
        self.writer.flush()?;
        Ok(())
    }

    fn check_links(&self, number: u64, parent: B256) -> Result<(), ExexError> {
        match self.last {
            Some((last, last_hash)) if number != last + 1 || parent != last_hash => {
                Err(ExexError::Unlinked {
                    number,
                    parent,
                    last,
                    last_hash,
                })
            }
            _ => Ok(()),
        }
    }

    fn append(&mut self, record: BlockRecord, expected: Option<B256>) -> Result<(), ExexError> {
        let hash = record.block.header.hash_slow();
        if let Some(expected) = expected
            && hash != expected
        {
            return Err(ExexError::Record {
                block: record.number(),
                source: RecordError::Provider {
                    block: record.number(),
                    message: format!(
                        "the block read back hashes to {hash}, the chain says {expected}"
                    ),
                },
            });
        }
        let before = self.dump_bytes();
        self.writer.append(&record)?;
        metrics::counter!(bal_replay_metrics::EXEX_BYTES_WRITTEN)
            .increment(self.dump_bytes().saturating_sub(before));
        self.last = Some((record.number(), hash));
        metrics::counter!(bal_replay_metrics::EXEX_BLOCKS_DUMPED).increment(1);
        Ok(())
    }

    /// Bytes of all segments, the open one included.
    fn dump_bytes(&self) -> u64 {
        self.writer
            .manifest()
            .segments
            .iter()
            .map(|s| s.bytes)
            .sum()
    }
}

/// Sets `bal_exex_lag_blocks`: the node's tip minus the last dumped block.
pub fn record_lag(tip: u64, last_dumped: Option<u64>) {
    let lag = tip.saturating_sub(last_dumped.unwrap_or(0));
    metrics::gauge!(bal_replay_metrics::EXEX_LAG_BLOCKS).set(lag as f64);
}
