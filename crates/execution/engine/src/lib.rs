//! The replay engine: dumped blocks over a flat state, in mega-block batches, sequential or
//! BAL-parallel, in each I/O design, every result verified.
//!
//! A batch ([`BatchPlan`]) is `B` consecutive blocks executed as one unit. In parallel mode every task
//! of the batch (each block's pre-block system calls, each transaction, each block's post-block
//! changes) runs at once: a task at BAL index `i` of block `k` reads the pre-batch state overlaid with
//! the final writes of blocks `0..k` and the BAL writes of indices below `i` of block `k` (revm's
//! BAL-indexed reads over the batch's merged BAL). Where the reads come from is the I/O design
//! ([`IoDesign`]): the dump's pre-values (full BAL), a prefetch of every key the BAL names (batched),
//! on demand through the [`SharedCache`](bal_replay_cache::SharedCache) (parallel), or on demand with a
//! free prefetch of the keys the diffs name (hybrid).
//!
//! Verification is always on: every task's writes must equal the BAL's writes for its index, and every
//! block's gas used and receipts root must equal its header's; a mismatch stops the replay and names
//! the block, index, account and slot. After a batch verifies, its net change is committed to the
//! store in one atomic write with the batch's last block number as the applied height.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Errors carry the block, index, account, slot and both values of a mismatch: they are built once,
// on the path that stops a run, so their size costs nothing where it matters.
#![allow(clippy::result_large_err)]

mod batch;
pub mod cpus;
mod design;
mod error;
mod overlay;
mod parallel;
mod pool;
mod prevalues;
pub mod profile;
mod record_check;
mod replay;
mod sequential;
mod verify;

pub use batch::{BatchPlan, IndexOverflow, Task, TaskKind, merge_bals};
pub use design::{BalSizeTotals, BalSizes, IoDesign, diffs_only_bal};
pub use error::{EngineError, PreValueMissing};
pub use overlay::{BatchOverlay, OverlayDb};
pub use parallel::{ParallelOptions, ParallelOutcome, execute_parallel, execute_parallel_with};
pub use prevalues::PreValueDb;
pub use profile::{BatchProfile, PrefetchProfile, TaskProfile};
// Part of a bench's profile, which the model reads; measured by the host crate.
pub use bal_replay_host::WorkerStartCost;
pub use record_check::check_record;
pub use replay::{
    BatchReport, ExecMode, ReplayOptions, ReplayReport, check_state_identity, replay,
    replay_independent,
};
pub use sequential::{SequentialOutcome, execute_sequential};
pub use verify::{check_block, check_block_bal, check_output};

/// Loads the KZG trusted setup (the first point-evaluation call takes seconds), so no timed run pays
/// for it.
pub fn warm_up_kzg() {
    // The compressed point at infinity is a valid commitment and proof; the answer does not matter.
    let mut infinity = [0u8; 48];
    infinity[0] = 0xc0;
    let _ = revm::precompile::kzg_point_evaluation::verify_kzg_proof(
        &infinity, &[0; 32], &[0; 32], &infinity,
    );
}
