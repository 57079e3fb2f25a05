//! Keeping a dump equal to the canonical chain: commit, revert, resume.

use crate::{ExexError, RecordError};
use alloy_primitives::B256;
use bal_replay_dump::{
    BlockRecord, ChainSchedule, DumpMeta, DumpReader, DumpWriter, Manifest, WriterOptions,
};
use std::{collections::BTreeMap, path::Path};

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
    /// Hashes of the last [`HASH_WINDOW`](crate::HASH_WINDOW) + 1 dumped blocks (the last record's
    /// own hash window plus its hash), to tell a block already dumped from one of another branch.
    /// Its last entry is the last record, the one the next block must link to.
    recent: BTreeMap<u64, B256>,
}

impl ChainDumper {
    /// Opens the dump in `dir`, resuming it if it exists (it must be a chained dump of `chain_id`),
    /// creating it otherwise, with no fork schedule in its manifest (see
    /// [`open_with_schedule`](Self::open_with_schedule)).
    pub fn open(dir: &Path, chain_id: u64, range: BlockRange) -> Result<Self, ExexError> {
        Self::open_with_schedule(dir, chain_id, None, range)
    }

    /// [`open`](Self::open), writing `schedule` (the node's own) into a new dump's manifest, so
    /// the dump replays under the node's rules rather than ones guessed from its chain id. A
    /// resumed dump must carry the same schedule, or none (written before dumps carried one).
    pub fn open_with_schedule(
        dir: &Path,
        chain_id: u64,
        schedule: Option<ChainSchedule>,
        range: BlockRange,
    ) -> Result<Self, ExexError> {
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
            if let (Some(dumped), Some(node)) = (&manifest.schedule, &schedule)
                && dumped != node
            {
                return Err(incompatible(
                    "its manifest's fork schedule differs from the node's".into(),
                ));
            }
            let recent = tail_of(dir)?;
            let last = recent.last_key_value().map(|(number, _)| *number);
            tracing::info!(dir = %dir.display(), ?last, "resumed dump");
            Ok(Self {
                writer,
                range,
                recent,
            })
        } else {
            let meta = DumpMeta {
                chain_id,
                chained: true,
                source: "reth-exex".into(),
                schedule,
            };
            let writer = DumpWriter::create(dir, meta, WriterOptions::default())?;
            Ok(Self {
                writer,
                range,
                recent: BTreeMap::new(),
            })
        }
    }

    /// Number and hash of the last durable record: where the node's notifications resume.
    pub fn last_dumped(&self) -> Option<(u64, B256)> {
        self.recent
            .last_key_value()
            .map(|(number, hash)| (*number, *hash))
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
            self.recent = tail_of(self.writer.dir())?;
            tracing::info!(first_reverted, removed, "reverted dump");
        }
        Ok(removed)
    }

    /// Cuts the dump back to the node's canonical chain at start: keeps the highest dumped block
    /// whose hash is `canonical_hash` of its number, looking at the last
    /// [`HASH_WINDOW`](crate::HASH_WINDOW) + 1 dumped blocks, and removes the records above it.
    /// Needed when the node restarts behind the dump (a node stopped before persisting blocks it
    /// had already notified) or on another branch. Returns the records removed (0 when the dump's
    /// last block is canonical, or the dump is empty).
    ///
    /// It only ever cuts back to a block the node has. When none of those blocks is on the
    /// node's chain it removes nothing and fails, naming the dump's tip and `node_tip` (the node's
    /// best block number): [`ExexError::NodeBehind`] when the node has not reached them yet (let
    /// it sync further first), [`ExexError::OffChain`] when it has but on another chain or a branch
    /// that forked before them. In particular a dump is never emptied because the node is behind.
    pub fn rewind_to_canonical<E: std::fmt::Display>(
        &mut self,
        node_tip: u64,
        mut canonical_hash: impl FnMut(u64) -> Result<Option<B256>, E>,
    ) -> Result<u64, ExexError> {
        let Some((last, last_hash)) = self.last_dumped() else {
            return Ok(0);
        };
        let dumped: Vec<(u64, B256)> = self.recent.iter().rev().map(|(n, h)| (*n, *h)).collect();
        for (number, hash) in dumped {
            let canonical = canonical_hash(number).map_err(|e| ExexError::Record {
                block: number,
                source: RecordError::Provider {
                    block: number,
                    message: format!("canonical hash: {e}"),
                },
            })?;
            if canonical == Some(hash) {
                // Nothing follows block u64::MAX, so there is nothing to remove.
                let removed = match number.checked_add(1) {
                    Some(first_reverted) => self.revert(first_reverted)?,
                    None => 0,
                };
                if removed > 0 {
                    tracing::warn!(
                        dir = %self.writer.dir().display(),
                        dump_tip = last,
                        node_tip,
                        kept_through = number,
                        removed,
                        "cut the dump back to the last block the node has on its canonical chain"
                    );
                }
                return Ok(removed);
            }
        }
        let oldest = self.recent.keys().next().copied().unwrap_or(last);
        let dir = self.writer.dir().display().to_string();
        if node_tip < oldest {
            return Err(ExexError::NodeBehind {
                dir,
                dump_tip: last,
                dump_tip_hash: last_hash,
                oldest,
                node_tip,
            });
        }
        Err(ExexError::OffChain {
            dir,
            dump_tip: last,
            dump_tip_hash: last_hash,
            oldest,
            node_tip,
        })
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
            if let Some((last, _)) = self.last_dumped()
                && number <= last
            {
                // Blocks older than the hash window are below any head reth resumes from.
                if let Some(dumped) = self.recent.get(&number)
                    && *dumped != block.hash()
                {
                    return Err(ExexError::Diverged {
                        number,
                        dumped: *dumped,
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
        match self.last_dumped() {
            Some((last, last_hash))
                if last.checked_add(1) != Some(number) || parent != last_hash =>
            {
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
        self.recent.insert(record.number(), hash);
        while self.recent.len() as u64 > crate::HASH_WINDOW + 1 {
            self.recent.pop_first();
        }
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

/// The hashes of the dump's last record and of the dumped blocks in its hash window, by number.
fn tail_of(dir: &Path) -> Result<BTreeMap<u64, B256>, ExexError> {
    let reader = DumpReader::open(dir)?;
    let Some(record) = reader.last_record()? else {
        return Ok(BTreeMap::new());
    };
    let first = reader.manifest().first_block.unwrap_or(0);
    let mut recent: BTreeMap<u64, B256> = record
        .block_hashes
        .iter()
        .filter(|entry| entry.number >= first)
        .map(|entry| (entry.number, entry.hash))
        .collect();
    recent.insert(record.number(), record.block.header.hash_slow());
    Ok(recent)
}

/// Sets `bal_exex_lag_blocks`: the node's tip minus the last dumped block.
pub fn record_lag(tip: u64, last_dumped: Option<u64>) {
    let lag = tip.saturating_sub(last_dumped.unwrap_or(0));
    metrics::gauge!(bal_replay_metrics::EXEX_LAG_BLOCKS).set(lag as f64);
}
