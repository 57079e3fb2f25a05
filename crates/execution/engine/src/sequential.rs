//! Sequential execution of a batch: the reference executor, block after block, one commit at the end.

use crate::{BatchOverlay, EngineError, verify::check_output};
use bal_replay_dump::BlockRecord;
use bal_replay_executor::{ChainConfig, ExecOptions, execute_block};
use bal_replay_state::StateChanges;
use revm::{DatabaseRef, database_interface::DBErrorMarker};
use std::time::{Duration, Instant};

/// Results of one sequential batch.
#[derive(Debug, Clone)]
pub struct SequentialOutcome {
    /// The batch's net state change.
    pub changes: StateChanges,
    /// Wall time of execution.
    pub exec_time: Duration,
    /// The longest block.
    pub longest_block: Duration,
}

/// Executes `records` in order over `db` (the state before the batch), each block over the changes of
/// the earlier ones, with the BAL builder on: every block's gas, receipts root and BAL writes are
/// checked against the record.
pub fn execute_sequential<D>(
    config: &ChainConfig,
    records: &[BlockRecord],
    db: &D,
) -> Result<SequentialOutcome, EngineError>
where
    D: DatabaseRef + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let mut overlay = BatchOverlay::default();
    let start = Instant::now();
    let mut longest_block = Duration::ZERO;
    for record in records {
        let t0 = Instant::now();
        let output = execute_block(
            config,
            overlay.over(db),
            &record.block,
            &record.senders,
            ExecOptions::for_verify(),
        )?;
        longest_block = longest_block.max(t0.elapsed());
        check_output(config, record, &output)?;
        let mut changes = output.changes;
        changes
            .block_hashes
            .push((record.number(), record.block.header.hash_slow()));
        overlay.apply(&changes);
    }
    Ok(SequentialOutcome {
        changes: overlay.to_changes(),
        exec_time: start.elapsed(),
        longest_block,
    })
}
