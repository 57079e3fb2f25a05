//! Historical dumps: a range of a synced node's blocks, re-executed in parallel, appended in order.

use crate::{ChainDumper, ExexError, RecordError};
use bal_replay_dump::BlockRecord;
use rayon::prelude::*;

/// Records blocks `from..=to` with `record` (each block over its own parent's historical state, so
/// blocks are independent) on `threads` workers, appending them in order and making each window
/// durable before the next. Blocks the dump already holds are skipped, so an interrupted run
/// continues where its last durable window ended. Returns the records appended.
///
/// Work goes in windows of a few blocks per worker: memory stays bounded by the window, and a
/// failure stops the run with every earlier block durable.
pub fn dump_range<F>(
    dumper: &mut ChainDumper,
    from: u64,
    to: u64,
    threads: usize,
    record: F,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<u64, ExexError>
where
    F: Fn(u64) -> Result<BlockRecord, RecordError> + Sync,
{
    if from > to {
        return Err(ExexError::BadRange { from, to });
    }
    let start = match dumper.last_dumped() {
        Some((last, _)) if last >= to => return Ok(0),
        // `last < to` here, so `last + 1` cannot overflow.
        Some((last, _)) if last + 1 >= from => last + 1,
        _ => from,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("dump-{i}"))
        .build()
        .map_err(|e| ExexError::Incompatible {
            dir: dumper.manifest().source.clone(),
            reason: format!("cannot start {threads} workers: {e}"),
        })?;
    if let Some(bar) = progress {
        // `0..=u64::MAX` holds one block more than a u64 counts: there the bar's length and
        // position stop one short.
        bar.set_length((to - from).saturating_add(1));
        bar.set_position(start - from);
    }
    let window = (threads.max(1) * 4) as u64;
    let mut appended = 0;
    let mut next = start;
    loop {
        let end = next.saturating_add(window - 1).min(to);
        let records: Vec<Result<BlockRecord, ExexError>> = pool.install(|| {
            (next..=end)
                .into_par_iter()
                .map(|n| record(n).map_err(|source| ExexError::Record { block: n, source }))
                .collect()
        });
        for result in records {
            dumper.append_record(result?)?;
            appended += 1;
        }
        dumper.flush()?;
        if let Some(bar) = progress {
            bar.set_position((end - from).saturating_add(1));
        }
        // Stopping at `to` before stepping past it: `to` may be u64::MAX.
        if end == to {
            return Ok(appended);
        }
        next = end + 1;
    }
}
