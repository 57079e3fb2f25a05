//! The replay driver: a dump, batch by batch, over a state store.

use crate::{
    BatchPlan, EngineError, IoDesign, ParallelOptions, PreValueDb, execute_parallel_with,
    execute_sequential,
    pool::{EnginePools, ThreadGroup},
    profile::{BatchProfile, PrefetchProfile, nanos},
};
use alloy_primitives::{Address, U256};
use bal_replay_cache::{CacheCapacity, CacheStats, SharedCache};
use bal_replay_dump::{BlockRecord, DumpError, DumpReader, Records};
use bal_replay_executor::ChainConfig;
use bal_replay_host::thread_cpu_time;
use bal_replay_state::{
    AppliedBlock, FlatAccount, StateChanges, StateError, StateReader, StateWriter,
};
use std::{
    num::NonZeroUsize,
    time::{Duration, Instant},
};

/// Sequential (the reference executor) or BAL-parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ExecMode {
    /// One block after another, one transaction after another.
    #[cfg_attr(feature = "clap", value(alias = "seq"))]
    Sequential,
    /// Every task of a batch at once, on `threads` workers.
    #[cfg_attr(feature = "clap", value(alias = "par"))]
    Parallel,
}

impl ExecMode {
    /// The lowercase name used on the command line and in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Parallel => "parallel",
        }
    }
}

/// How to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Sequential or parallel.
    pub mode: ExecMode,
    /// Execution workers (parallel mode).
    pub threads: NonZeroUsize,
    /// Where reads come from.
    pub design: IoDesign,
    /// Blocks per batch (mega-block); state is committed once per batch.
    pub batch: NonZeroUsize,
    /// Prefetch readers (batched and hybrid designs).
    pub io_threads: NonZeroUsize,
    /// Shared cache size.
    pub cache: CacheCapacity,
    /// Record every parallel batch's profile ([`BatchReport::profile`]): each task's CPU time,
    /// reads, worker and start, each prefetch's keys and CPU time, each commit.
    pub profile: bool,
    /// Pin worker `w` of every batch to CPU `pin_workers[w mod len]` ([`crate::cpus`]); `None`:
    /// the scheduler places them.
    pub pin_workers: Option<std::sync::Arc<[usize]>>,
    /// Replay over a state that recorded no chain id or no hash for its block (reth's MDBX read
    /// in place, states written before both were recorded), with a warning for each check that
    /// cannot be made; otherwise such a state is refused ([`EngineError::StateWithoutIdentity`]).
    pub trust_state: bool,
    /// The store's block-hash table holds the dump's own hashes (reth's MDBX under an overlay
    /// seeded with the dump's first record's: reth keeps headers outside MDBX). Checking the dump
    /// against that table would compare the dump with itself, so a state that records no hash
    /// for its block is then not checked, with a warning, and the report says so
    /// ([`ReplayReport::state_block_unchecked`]).
    pub block_hashes_from_dump: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            mode: ExecMode::Parallel,
            threads: std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
            design: IoDesign::Parallel,
            batch: NonZeroUsize::new(50).expect("50 is not 0"),
            io_threads: NonZeroUsize::new(8).expect("8 is not 0"),
            cache: CacheCapacity::default(),
            profile: false,
            pin_workers: None,
            trust_state: false,
            block_hashes_from_dump: false,
        }
    }
}

/// What one batch did and how long each phase took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchReport {
    /// First block.
    pub first_block: u64,
    /// Last block.
    pub last_block: u64,
    /// Transactions.
    pub txs: usize,
    /// Gas used.
    pub gas: u64,
    /// Reading and decoding the batch's records from the dump: this tool's input, which a
    /// client receives from the network instead (not counted as execution, nor as a client's
    /// end-to-end time).
    pub read_dump: Duration,
    /// Merging BALs and building tasks (not counted as execution).
    pub prepare: Duration,
    /// Prefetching before execution (batched design).
    pub prefetch: Duration,
    /// Executing, with the reads it waits for.
    pub exec: Duration,
    /// Committing the batch to the store.
    pub commit: Duration,
    /// The longest transaction (parallel) or block (sequential).
    pub longest_tx: Duration,
    /// Sum of all task times.
    pub busy: Duration,
    /// Keys loaded by prefetching.
    pub keys_prefetched: u64,
    /// Each transaction's execution time (parallel mode), in block order.
    pub tx_times: Vec<Duration>,
    /// The shared cache's cumulative counters after this batch.
    pub cache: CacheStats,
    /// The prefetch's readers (before execution for batched I/O, beside it for hybrid and the
    /// verifying full BAL): keys, readers, wall and CPU time.
    pub prefetch_profile: Option<PrefetchProfile>,
    /// The batch's profile, when the replay records them (parallel mode).
    pub profile: Option<BatchProfile>,
    /// The workers' own CPU while they executed the batch (parallel mode):
    /// [`crate::ParallelOutcome::worker_cpu`].
    pub worker_cpu: Option<Duration>,
}

impl BatchReport {
    /// Takes a parallel batch's timings, returning its state changes.
    fn take_parallel(&mut self, out: crate::ParallelOutcome) -> StateChanges {
        self.exec = out.exec_time;
        self.longest_tx = out.longest_task;
        self.busy = out.busy_time;
        self.tx_times = out.tx_times;
        self.worker_cpu = Some(out.worker_cpu);
        if !out.tasks.is_empty() {
            self.profile = Some(BatchProfile {
                first_block: self.first_block,
                last_block: self.last_block,
                tasks: out.tasks,
                prefetch: None,
                exec_ns: nanos(out.exec_time),
                commit_ns: 0,
                worker_run_delay_ns: out.worker_run_delay_ns,
                process_cpu_ns: out.process_cpu_ns,
            });
        }
        out.changes
    }

    /// Execution with I/O: prefetch plus execution (the research's measure).
    pub fn exec_with_io(&self) -> Duration {
        self.prefetch + self.exec
    }
}

/// A whole replay. Serialized (`bal-replay run --json`) as its totals and timings in seconds, see
/// the [`serde::Serialize`] impl.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    /// Blocks replayed.
    pub blocks: u64,
    /// Blocks at the start of the dump skipped because the state already held them (a resumed
    /// replay).
    pub skipped: u64,
    /// The state's block that the dump's first block was not checked against, where it could
    /// not be (trusted, `--trust-state`): the state recorded no hash for it, and its block-hash
    /// table had none or held the dump's own ([`ReplayOptions::block_hashes_from_dump`]).
    pub state_block_unchecked: Option<u64>,
    /// Transactions.
    pub txs: u64,
    /// Gas used.
    pub gas: u64,
    /// Sum over batches of prefetch + execution.
    pub exec_with_io: Duration,
    /// Sum over batches of the longest transaction.
    pub longest_txs: Duration,
    /// Sum of commits.
    pub commit: Duration,
    /// Wall time of the whole replay (preparation and commits included).
    pub wall: Duration,
    /// Of it, reading and decoding the dump's records ([`BatchReport::read_dump`]).
    pub read_dump: Duration,
    /// Shared-cache counters.
    pub cache: CacheStats,
    /// Per-batch detail.
    pub batches: Vec<BatchReport>,
}

impl ReplayReport {
    /// Keys the replay read from its store, as the shared cache counts them: its misses and the
    /// keys prefetched (a store with its own count, RocksDB, overrides this in the bench's and
    /// `run`'s disk evidence).
    pub fn cache_key_reads(&self) -> u64 {
        self.cache.misses + self.batches.iter().map(|b| b.keys_prefetched).sum::<u64>()
    }

    /// The workers' own CPU over every batch: execution and its on-demand reads, without
    /// planning, prefetch, commits or reading the dump; `None` where a batch ran sequentially.
    pub fn worker_cpu(&self) -> Option<Duration> {
        self.batches.iter().map(|b| b.worker_cpu).sum()
    }

    /// Throughput in Mgas/s over execution with I/O.
    pub fn mgas_per_s(&self) -> f64 {
        let secs = self.exec_with_io.as_secs_f64();
        if secs == 0.0 {
            0.0
        } else {
            self.gas as f64 / secs / 1e6
        }
    }

    /// Sum over batches of the prefetch before execution (batched I/O; part of `exec_with_io`).
    pub fn prefetch(&self) -> Duration {
        self.batches.iter().map(|b| b.prefetch).sum()
    }

    /// The total gas once `plan` is replayed too, checked before it executes: the headers' gas is
    /// the dump's word, and a sum past `u64::MAX` names the blocks it spans.
    fn checked_gas_with(&self, plan: &BatchPlan) -> Result<u64, EngineError> {
        self.gas
            .checked_add(plan.gas_used())
            .ok_or(EngineError::GasOverflow {
                first: self
                    .batches
                    .first()
                    .map_or(plan.first_block(), |b| b.first_block),
                last: plan.last_block(),
            })
    }
}

/// The totals a scraper or a script can check a run against, durations in seconds; `skipped` counts
/// the blocks at the start of the dump the state already held (a resumed run), `prefetch_s` is the
/// part of `exec_with_io_s` spent prefetching before execution (batched I/O).
impl serde::Serialize for ReplayReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ReplayReport", 13)?;
        s.serialize_field("blocks", &self.blocks)?;
        s.serialize_field("skipped", &self.skipped)?;
        s.serialize_field("transactions", &self.txs)?;
        s.serialize_field("gas", &self.gas)?;
        s.serialize_field("batches", &self.batches.len())?;
        s.serialize_field("mgas_per_s", &self.mgas_per_s())?;
        s.serialize_field("exec_with_io_s", &self.exec_with_io.as_secs_f64())?;
        s.serialize_field("prefetch_s", &self.prefetch().as_secs_f64())?;
        s.serialize_field("longest_txs_s", &self.longest_txs.as_secs_f64())?;
        s.serialize_field("commit_s", &self.commit.as_secs_f64())?;
        s.serialize_field("wall_s", &self.wall.as_secs_f64())?;
        s.serialize_field("cache_hits", &self.cache.hits)?;
        s.serialize_field("cache_misses", &self.cache.misses)?;
        s.end()
    }
}

/// Replays the records of `dump` over `store`, `options.batch` blocks at a time: execute (verified),
/// then commit the batch atomically with its last block's number and hash and the dump's chain id.
/// `on_batch` sees each batch's report.
///
/// The state may be at any block from the one before the dump's first to the dump's last: records
/// the state already holds are skipped (counted in [`ReplayReport::skipped`]), so a replay stopped
/// by a crash, a kill or a failed verification resumes from the last committed batch by running
/// it again. Before anything is executed the dump must match the state's identity: the same
/// chain ([`EngineError::ChainMismatch`]) and, at the state's height, the same block
/// ([`EngineError::BlockHashMismatch`]). A state that recorded no chain id or no hash for its
/// block (written before both were recorded, or reth's MDBX) is refused
/// ([`EngineError::StateWithoutIdentity`]) unless [`ReplayOptions::trust_state`]; trusted, it is
/// checked against its block-hash table instead, with a warning, or not at all when that lacks
/// the hash too.
pub fn replay<S>(
    config: &ChainConfig,
    dump: &DumpReader,
    store: &S,
    options: &ReplayOptions,
    mut on_batch: impl FnMut(&BatchReport),
) -> Result<ReplayReport, EngineError>
where
    S: StateReader + StateWriter,
{
    let manifest = dump.manifest();
    if !manifest.chained {
        return Err(EngineError::NotChained {
            dir: dump.dir().display().to_string(),
        });
    }
    let chain_id = manifest.chain_id;
    let mut report = ReplayReport::default();
    let wall = Instant::now();
    let mut records = dump.records().peekable();
    (report.skipped, report.state_block_unchecked) =
        skip_held_records(dump, store, &mut records, options)?;
    let cache = SharedCache::new(store, options.cache);
    let pools = EnginePools::new(options.io_threads)?;
    while let Some(planned) = read_plan(&mut records, options)? {
        let gas = report.checked_gas_with(&planned.plan)?;
        let mut batch_report =
            replay_batch(config, planned, store, (&cache, &pools), options, chain_id)?;
        batch_report.cache = cache.stats();
        report.blocks += batch_report.last_block - batch_report.first_block + 1;
        report.txs += batch_report.txs as u64;
        report.gas = gas;
        report.exec_with_io += batch_report.exec_with_io();
        report.longest_txs += batch_report.longest_tx;
        report.commit += batch_report.commit;
        report.read_dump += batch_report.read_dump;
        on_batch(&batch_report);
        report.batches.push(batch_report);
    }
    report.wall = wall.elapsed();
    report.cache = cache.stats();
    Ok(report)
}

/// Replays a dump of independent blocks (`chained = false`: imported fixtures, each block with a
/// state of its own seeded with its pre-state), each block as a batch of its own over the store
/// `state_of` opens for it (which must be at the block's parent: its chain and hash are checked as
/// [`replay`] checks a chain's first block). Every block is verified as in [`replay`]; the report
/// sums them, one [`BatchReport`] per block. `options.batch` must be 1: a batch of independent
/// blocks has no one state to run over. A chained dump is replayed by [`replay`] instead.
pub fn replay_independent<S>(
    config: &ChainConfig,
    dump: &DumpReader,
    mut state_of: impl FnMut(u64) -> Result<S, EngineError>,
    options: &ReplayOptions,
    mut on_batch: impl FnMut(&BatchReport),
) -> Result<ReplayReport, EngineError>
where
    S: StateReader + StateWriter,
{
    let manifest = dump.manifest();
    if manifest.chained {
        return Err(EngineError::Chained {
            dir: dump.dir().display().to_string(),
        });
    }
    if options.batch.get() != 1 {
        return Err(EngineError::IndependentBatch {
            batch: options.batch.get(),
        });
    }
    let mut report = ReplayReport::default();
    let wall = Instant::now();
    // One set of readers for every block: at a batch of one block, starting them per block costs
    // more than many a block's prefetch.
    let pools = EnginePools::new(options.io_threads)?;
    let mut records = dump.records();
    loop {
        let read_start = Instant::now();
        let Some(record) = records.next() else {
            break;
        };
        let record = record?;
        let read_dump = read_start.elapsed();
        let number = record.number();
        let store = state_of(number)?;
        let parent = number.saturating_sub(1);
        if store.applied_block()? != Some(parent) {
            return Err(EngineError::StateHeight {
                state: store.applied_block()?,
                dump_first: number,
                dump_last: number,
                expected: parent,
            });
        }
        check_state_chain(&store, dump)?;
        check_state_identity(&store, parent, options.trust_state)?;
        let table_from_dump = options.block_hashes_from_dump;
        if !check_state_block(
            &store,
            parent,
            record.block.header.parent_hash,
            table_from_dump,
        )? {
            report.state_block_unchecked.get_or_insert(parent);
        }
        let cache = SharedCache::new(&store, options.cache);
        let mut one = std::iter::once(Ok(record)).peekable();
        let Some(mut planned) = read_plan(&mut one, options)? else {
            continue;
        };
        planned.read_dump += read_dump;
        let gas = report.checked_gas_with(&planned.plan)?;
        let mut batch_report = replay_batch(
            config,
            planned,
            &store,
            (&cache, &pools),
            options,
            manifest.chain_id,
        )?;
        batch_report.cache = cache.stats();
        report.blocks += 1;
        report.txs += batch_report.txs as u64;
        report.gas = gas;
        report.exec_with_io += batch_report.exec_with_io();
        report.longest_txs += batch_report.longest_tx;
        report.commit += batch_report.commit;
        report.read_dump += batch_report.read_dump;
        report.cache.add(&batch_report.cache);
        on_batch(&batch_report);
        report.batches.push(batch_report);
    }
    report.wall = wall.elapsed();
    Ok(report)
}

/// A batch read from the dump and planned, with the time each step took.
struct PlannedBatch {
    plan: BatchPlan,
    /// Reading and decoding its records ([`BatchReport::read_dump`]).
    read_dump: Duration,
    /// Planning it ([`BatchReport::prepare`]).
    prepare: Duration,
}

/// The next `options.batch` records planned as a batch, with the time reading them and planning
/// took; `None` at the end of the dump.
fn read_plan(
    records: &mut std::iter::Peekable<impl Iterator<Item = Result<BlockRecord, DumpError>>>,
    options: &ReplayOptions,
) -> Result<Option<PlannedBatch>, EngineError> {
    let read_start = Instant::now();
    let mut batch = Vec::with_capacity(options.batch.get());
    for record in records.by_ref().take(options.batch.get()) {
        batch.push(record?);
    }
    if batch.is_empty() {
        return Ok(None);
    }
    let read_dump = read_start.elapsed();
    let t0 = Instant::now();
    let plan = BatchPlan::new(batch, options.design)?;
    Ok(Some(PlannedBatch {
        plan,
        read_dump,
        prepare: t0.elapsed(),
    }))
}

/// Checks that the state is at a block from the one before the dump's first to its last, on the
/// same chain and the same block as the dump, and takes from `records` those the state already
/// holds (a resumed replay); returns how many, and the state's block where it could not be
/// checked ([`ReplayReport::state_block_unchecked`]).
fn skip_held_records<S: StateReader>(
    dump: &DumpReader,
    store: &S,
    records: &mut std::iter::Peekable<Records>,
    options: &ReplayOptions,
) -> Result<(u64, Option<u64>), EngineError> {
    let manifest = dump.manifest();
    let mut skipped = 0;
    let mut unchecked = None;
    if let (Some(first), Some(last)) = (manifest.first_block, manifest.last_block) {
        let expected = first.saturating_sub(1);
        let applied = store.applied_block()?;
        let applied = match applied {
            Some(applied) if (expected..=last).contains(&applied) => applied,
            _ => {
                return Err(EngineError::StateHeight {
                    state: applied,
                    dump_first: first,
                    dump_last: last,
                    expected,
                });
            }
        };
        check_state_chain(store, dump)?;
        check_state_identity(store, applied, options.trust_state)?;
        // The dump's hash of block `applied`: the last skipped record's own hash, or the parent
        // hash of the first record when none is skipped. A record that fails to read stops the
        // replay here with the reader's error (its file and offset): the hash check below would
        // otherwise compare block `applied` with an earlier block's hash.
        let mut dump_hash = None;
        while let Some(record) =
            records.next_if(|r| r.as_ref().map_or(true, |r| r.number() <= applied))
        {
            dump_hash = Some(record?.block.header.hash_slow());
            skipped += 1;
        }
        if dump_hash.is_none()
            && let Some(Ok(next)) = records.peek()
        {
            dump_hash = Some(next.block.header.parent_hash);
        }
        if let Some(dump_hash) = dump_hash
            && !check_state_block(store, applied, dump_hash, options.block_hashes_from_dump)?
        {
            unchecked = Some(applied);
        }
    }
    Ok((skipped, unchecked))
}

/// Checks that the chain the state recorded, if any, is the dump's.
fn check_state_chain<S: StateReader>(store: &S, dump: &DumpReader) -> Result<(), EngineError> {
    let chain_id = dump.manifest().chain_id;
    match store.chain_id()? {
        Some(state) if state != chain_id => Err(EngineError::ChainMismatch {
            state,
            dump: chain_id,
            dir: dump.dir().display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// Refuses a state at `block` that recorded no chain id or no hash for its block
/// ([`EngineError::StateWithoutIdentity`], naming its directory), unless `trust_state`: then a
/// missing chain id is a warning (a missing hash is [`check_state_block`]'s to warn of).
pub fn check_state_identity<S: StateReader + ?Sized>(
    store: &S,
    block: u64,
    trust_state: bool,
) -> Result<(), EngineError> {
    let no_chain_id = store.chain_id()?.is_none();
    let no_block_hash = store.applied_block_hash()?.is_none();
    if !no_chain_id && !no_block_hash {
        return Ok(());
    }
    if !trust_state {
        return Err(EngineError::StateWithoutIdentity {
            state: store
                .location()
                .map_or_else(|| "in memory".into(), |path| path.display().to_string()),
            block,
            no_chain_id,
            no_block_hash,
        });
    }
    if no_chain_id {
        tracing::warn!(
            block,
            "the state records no chain id: trusted (--trust-state) to be of the dump's chain"
        );
    }
    Ok(())
}

/// Checks that the state's block `number` is the dump's (`dump_hash`), by the hash the state
/// recorded for it or, failing that, by its block-hash table unless `table_from_dump` (the table
/// holds the dump's own hashes: [`ReplayOptions::block_hashes_from_dump`]). Returns whether it
/// was checked: not, with a warning, where neither can tell.
fn check_state_block<S: StateReader>(
    store: &S,
    number: u64,
    dump_hash: alloy_primitives::B256,
    table_from_dump: bool,
) -> Result<bool, EngineError> {
    let state_hash = match store.applied_block_hash()? {
        Some(hash) => hash,
        None if table_from_dump => {
            tracing::warn!(
                block = number,
                "the state records no hash for its block, and its block-hash table holds the \
                 dump's own (reth's MDBX keeps headers outside its tables): the dump's first block \
                 was not checked against the state, trusted (--trust-state) to build on it"
            );
            return Ok(false);
        }
        None => match store.block_hash(number)? {
            Some(hash) => {
                tracing::warn!(
                    block = number,
                    "the state records no hash for its block (written before block hashes were \
                     recorded, or not a RocksDB state); checking the dump against the hash in its \
                     block-hash table instead"
                );
                hash
            }
            None => {
                tracing::warn!(
                    block = number,
                    "the state records no hash for its block and its block-hash table has none: \
                     cannot check that the dump builds on this state"
                );
                return Ok(false);
            }
        },
    };
    if state_hash == dump_hash {
        Ok(true)
    } else {
        Err(EngineError::BlockHashMismatch {
            number,
            state_hash,
            dump_hash,
        })
    }
}

/// Executes and commits one batch (read and planned by [`read_plan`]).
fn replay_batch<S>(
    config: &ChainConfig,
    PlannedBatch {
        plan,
        read_dump,
        prepare,
    }: PlannedBatch,
    store: &S,
    (cache, pools): (&SharedCache<&S>, &EnginePools),
    options: &ReplayOptions,
    chain_id: u64,
) -> Result<BatchReport, EngineError>
where
    S: StateReader + StateWriter,
{
    let mut report = BatchReport {
        first_block: plan.first_block(),
        last_block: plan.last_block(),
        txs: plan.tx_count(),
        gas: plan.gas_used(),
        read_dump,
        prepare,
        ..Default::default()
    };

    let changes = execute_batch(config, &plan, cache, pools, options, &mut report)?;
    let last_hash = plan
        .records
        .last()
        .map(|r| r.block.header.hash_slow())
        .unwrap_or_default();
    let t = Instant::now();
    store.commit_block(
        &changes,
        AppliedBlock::new(plan.last_block(), last_hash, chain_id),
    )?;
    cache.apply_changes(&changes);
    report.commit = t.elapsed();
    let (prefetch, commit) = (report.prefetch_profile, report.commit);
    if let Some(profile) = report.profile.as_mut() {
        profile.prefetch = prefetch;
        profile.commit_ns = nanos(commit);
    }
    Ok(report)
}

/// Executes one batch (verified) in the mode and design of `options`, filling `report`'s timings;
/// returns the batch's net change.
fn execute_batch<S: StateReader>(
    config: &ChainConfig,
    plan: &BatchPlan,
    cache: &SharedCache<&S>,
    pools: &EnginePools,
    options: &ReplayOptions,
    report: &mut BatchReport,
) -> Result<StateChanges, EngineError> {
    let design = options.design;
    let changes = match (options.mode, design) {
        (ExecMode::Sequential, IoDesign::Full) => {
            let db = PreValueDb::from_records(&plan.records)?;
            let out = execute_sequential(config, &plan.records, &db)?;
            report.exec = out.exec_time;
            report.longest_tx = out.longest_block;
            out.changes
        }
        (_, IoDesign::FullVerify) => {
            execute_full_verify(config, plan, cache, pools, options, report)?
        }
        (ExecMode::Sequential, _) => {
            let out = execute_sequential(config, &plan.records, cache)?;
            report.exec = out.exec_time;
            report.longest_tx = out.longest_block;
            out.changes
        }
        (ExecMode::Parallel, IoDesign::Full) => {
            let db = PreValueDb::from_records(&plan.records)?;
            let out = execute_parallel_with(config, plan, &db, parallel_options(options))?;
            report.take_parallel(out)
        }
        (ExecMode::Parallel, IoDesign::Batched) => {
            let t = Instant::now();
            let prefetched = prefetch(cache, plan, &pools.readers, design)?;
            report.prefetch = t.elapsed();
            report.keys_prefetched = prefetched.keys;
            report.prefetch_profile = Some(prefetched);
            let out = execute_parallel_with(config, plan, cache, parallel_options(options))?;
            report.take_parallel(out)
        }
        (ExecMode::Parallel, IoDesign::Parallel) => {
            let out = execute_parallel_with(config, plan, cache, parallel_options(options))?;
            report.take_parallel(out)
        }
        (ExecMode::Parallel, IoDesign::Hybrid) => {
            execute_hybrid(config, plan, cache, pools, options, report)?
        }
    };
    Ok(changes)
}

/// Executes one batch in the full-verify design: execution reads the BAL's values while the
/// readers check them against the state; returns the batch's net change.
fn execute_full_verify<S: StateReader>(
    config: &ChainConfig,
    plan: &BatchPlan,
    cache: &SharedCache<&S>,
    pools: &EnginePools,
    options: &ReplayOptions,
    report: &mut BatchReport,
) -> Result<StateChanges, EngineError> {
    let mode = options.mode;
    let db = PreValueDb::from_records(&plan.records)?;
    // A validating node has the batch only once its claims are verified too: the batch's time is
    // execution's or the verifier's, whichever ends later, not execution's alone.
    let start = Instant::now();
    let (verified, out) = std::thread::scope(|scope| {
        let verifier = scope.spawn(|| verify_pre_values(cache, plan, &db, &pools.readers));
        let out = match mode {
            ExecMode::Sequential => execute_sequential(config, &plan.records, &db)
                .map(|out| (out.exec_time, out.longest_block, out.changes)),
            ExecMode::Parallel => {
                execute_parallel_with(config, plan, &db, parallel_options(options)).map(|out| {
                    let changes = report.take_parallel(out);
                    (report.exec, report.longest_tx, changes)
                })
            }
        };
        let verified = verifier
            .join()
            .map_err(|_| EngineError::WorkerPanic("pre-value verifier".into()));
        (verified, out)
    });
    let until_verified = start.elapsed();
    // A claimed value the state disagrees with is the root cause of any execution failure it led
    // to: it is reported first.
    let verified = verified??;
    report.keys_prefetched = verified.keys;
    report.prefetch_profile = Some(PrefetchProfile {
        concurrent: true,
        ..verified
    });
    let (exec, longest, changes) = out?;
    report.exec = exec.max(until_verified);
    report.longest_tx = longest;
    Ok(changes)
}

/// Executes one batch in the hybrid design: the keys the diffs name are prefetched while the
/// workers start executing; returns the batch's net change.
fn execute_hybrid<S: StateReader>(
    config: &ChainConfig,
    plan: &BatchPlan,
    cache: &SharedCache<&S>,
    pools: &EnginePools,
    options: &ReplayOptions,
    report: &mut BatchReport,
) -> Result<StateChanges, EngineError> {
    let design = options.design;
    // The cache's single-flight reads keep a key a worker is already reading from being read
    // twice.
    let tracked = options.profile;
    if tracked {
        let (accounts, slots) = prefetch_keys(plan);
        cache.track_prefetch(&accounts, &slots);
    }
    let (prefetched, out) = std::thread::scope(|scope| {
        let prefetcher = scope.spawn(|| prefetch(cache, plan, &pools.readers, design));
        let out = execute_parallel_with(config, plan, cache, parallel_options(options));
        let prefetched = prefetcher
            .join()
            .map_err(|_| EngineError::WorkerPanic("prefetcher".into()));
        (prefetched, out)
    });
    if tracked {
        cache.stop_tracking_prefetch();
    }
    let prefetched = prefetched??;
    report.keys_prefetched = prefetched.keys;
    report.prefetch_profile = Some(PrefetchProfile {
        concurrent: true,
        ..prefetched
    });
    Ok(report.take_parallel(out?))
}

/// The options of a parallel batch of this replay.
fn parallel_options(options: &ReplayOptions) -> ParallelOptions {
    ParallelOptions {
        design: options.design,
        threads: options.threads,
        profile: options.profile,
        pin_workers: options.pin_workers.clone(),
    }
}

/// Reads every pre-batch value the records claim (the full BAL's read values) from the state
/// through the cache, on every reader of `readers` in turn (multi-gets of chunks of its sorted
/// accounts, then of its slots), and compares. Returns the keys read.
/// A difference is [`EngineError::PreValueMismatch`], naming the first record that claimed it.
fn verify_pre_values<S: StateReader>(
    cache: &SharedCache<S>,
    plan: &BatchPlan,
    db: &PreValueDb,
    readers: &ThreadGroup,
) -> Result<PrefetchProfile, EngineError> {
    let started = Instant::now();
    let values = db.values();
    let mut accounts: Vec<Address> = values.accounts.keys().copied().collect();
    accounts.sort_unstable();
    // Slots of accounts that did not exist before the batch (their absence is checked with the
    // accounts) are empty by definition, and are not compared: a later record of the batch may
    // claim one with a value an earlier block wrote (its pre-block value, not the batch's), as a
    // contract created in one block and called in the next does.
    let mut slots: Vec<(Address, U256)> = values
        .storage
        .keys()
        .filter(|(address, _)| !values.is_absent(address))
        .copied()
        .collect();
    // Sorted, so with plain keys (the flat state's) each chunk's multi-get reads a run of
    // neighbouring keys; with hashed keys (reth's v2 tables) the order does not matter.
    slots.sort_unstable();
    // All readers in turn over chunks, as the key-order prefetch reads.
    let work = PrefetchChunk::of(&accounts, &slots, readers.threads());
    let verify = |chunk: &PrefetchChunk<'_>| -> Result<u64, EngineError> {
        match chunk {
            PrefetchChunk::Accounts(chunk) => {
                cache.prefetch_accounts(chunk)?;
                for address in *chunk {
                    let claimed = values.accounts[address].map(FlatAccount::from);
                    let state = cache.account(*address)?;
                    if claimed != state {
                        return Err(pre_value_mismatch(plan, *address, None, &claimed, &state));
                    }
                }
                Ok(chunk.len() as u64)
            }
            PrefetchChunk::Slots(chunk) => {
                cache.prefetch_storage(chunk)?;
                for key @ (address, slot) in *chunk {
                    let claimed = values.storage[key];
                    let state = cache.storage(*address, *slot)?;
                    if claimed != state {
                        return Err(pre_value_mismatch(
                            plan,
                            *address,
                            Some(*slot),
                            &claimed,
                            &state,
                        ));
                    }
                }
                Ok(chunk.len() as u64)
            }
        }
    };
    let (keys, cpu) = read_in_turn(readers, &work, verify, "pre-value verifier")?;
    Ok(PrefetchProfile {
        keys,
        readers: readers.threads() as u32,
        wall_ns: nanos(started.elapsed()),
        cpu_ns: nanos(cpu),
        concurrent: true,
    })
}

/// Runs a reader's `work`, returning its result with the CPU time its thread spent on it.
fn cpu_timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let cpu = thread_cpu_time();
    let out = work();
    (out, thread_cpu_time().saturating_sub(cpu))
}

/// `keys` split among `readers` readers: at most `readers` chunks of equal length (the last may be
/// shorter), none when `keys` is empty.
fn reader_chunks<T>(keys: &[T], readers: usize) -> std::slice::Chunks<'_, T> {
    keys.chunks(keys.len().div_ceil(readers).max(1))
}

/// Chunks per reader a key-order prefetch cuts each of its account and slot lists into: enough
/// that readers finishing early find more work, few enough that each multi-get holds hundreds of
/// sorted keys at a batch of 10 blocks (its merged reads of adjacent blocks, and its fixed cost).
const PREFETCH_CHUNKS_PER_READER: usize = 4;

/// A run of sorted keys one multi-get of a key-order prefetch reads.
enum PrefetchChunk<'a> {
    Accounts(&'a [Address]),
    Slots(&'a [(Address, U256)]),
}

impl<'a> PrefetchChunk<'a> {
    /// `accounts` and then `slots` cut into [`PREFETCH_CHUNKS_PER_READER`] chunks per reader each.
    fn of(accounts: &'a [Address], slots: &'a [(Address, U256)], readers: usize) -> Vec<Self> {
        let chunks = readers * PREFETCH_CHUNKS_PER_READER;
        reader_chunks(accounts, chunks)
            .map(Self::Accounts)
            .chain(reader_chunks(slots, chunks).map(Self::Slots))
            .collect()
    }
}

/// A reader's work: the keys it read, or its error, with the CPU time its thread spent on it
/// ([`cpu_timed`]).
type ReaderJob<'a, E> = Box<dyn FnOnce() -> (Result<u64, E>, Duration) + Send + 'a>;

/// Runs reader jobs at once on `readers` and sums their counts and CPU times; the first failed
/// job's error (in the jobs' order) is returned, and a panicked reader is
/// [`EngineError::WorkerPanic`] named `what`.
fn sum_each<E: Into<EngineError> + Send>(
    readers: &ThreadGroup,
    jobs: Vec<ReaderJob<'_, E>>,
    what: &str,
) -> Result<(u64, Duration), EngineError> {
    let (mut keys, mut cpu) = (0, Duration::ZERO);
    for (read, spent) in readers.run_each(jobs, what)? {
        keys += read.map_err(Into::into)?;
        cpu += spent;
    }
    Ok((keys, cpu))
}

/// Reads `work`'s chunks on every reader of `readers` in turn: each reader takes the
/// next chunk as soon as it is done with one, so none idles while chunks remain. A failed chunk
/// stops every reader before its next one. Of the chunks that failed, the error of the first in
/// `work`'s order is returned: chunks are taken in that order, so every chunk before a failed one
/// was read to its end, and the error returned does not depend on the readers' timing. Returns
/// the keys read (`read_chunk`'s counts) and the readers' CPU time.
fn read_in_turn<C: Sync, E: Into<EngineError> + Send>(
    readers: &ThreadGroup,
    work: &[C],
    read_chunk: impl Fn(&C) -> Result<u64, E> + Sync,
    what: &str,
) -> Result<(u64, Duration), EngineError> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // The failed chunk first in `work`'s order, and its error.
    let first_failure: Mutex<Option<(usize, E)>> = Mutex::new(None);
    /// Stops the other readers when its reader panics, as a failed chunk does.
    struct StopOnPanic<'a>(&'a AtomicBool);
    impl Drop for StopOnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.store(true, Ordering::Relaxed);
            }
        }
    }
    let reader = || -> Result<u64, E> {
        let _stop = StopOnPanic(&failed);
        let mut read = 0u64;
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = work.get(i) else {
                break;
            };
            match read_chunk(chunk) {
                Ok(n) => read += n,
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    let mut first = first_failure.lock().unwrap_or_else(|p| p.into_inner());
                    if first.as_ref().is_none_or(|(j, _)| i < *j) {
                        *first = Some((i, e));
                    }
                    break;
                }
            }
        }
        Ok(read)
    };
    let jobs: Vec<ReaderJob<'_, E>> = (0..readers.threads().min(work.len()))
        .map(|_| -> ReaderJob<'_, E> { Box::new(|| cpu_timed(reader)) })
        .collect();
    let read = sum_each(readers, jobs, what)?;
    match first_failure
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
    {
        Some((_, e)) => Err(e.into()),
        None => Ok(read),
    }
}

/// The error for a claimed pre-value the state disagrees with: the first record of the batch that
/// claims the key, and the first transaction of that block whose BAL entry names it (a read of a
/// slot carries no transaction index in the BAL).
fn pre_value_mismatch(
    plan: &BatchPlan,
    address: Address,
    slot: Option<U256>,
    claimed: &dyn std::fmt::Debug,
    state: &dyn std::fmt::Debug,
) -> EngineError {
    let record = plan.records.iter().find(|r| match slot {
        Some(slot) => r
            .pre_state
            .storage
            .iter()
            .any(|s| s.address == address && s.slot == slot),
        None => {
            r.pre_state.accounts.iter().any(|a| a.address == address)
                || r.pre_state.absent.contains(&address)
        }
    });
    let tx = record.and_then(|r| {
        let entry = r.bal.iter().find(|a| a.address == address)?;
        let indices = match slot {
            Some(slot) => entry
                .storage_changes
                .iter()
                .filter(|s| s.slot == slot)
                .flat_map(|s| s.changes.iter().map(|c| c.block_access_index))
                .min(),
            None => entry
                .balance_changes
                .iter()
                .map(|c| c.block_access_index)
                .chain(entry.nonce_changes.iter().map(|c| c.block_access_index))
                .chain(entry.code_changes.iter().map(|c| c.block_access_index))
                .min(),
        }?;
        // BAL index 0 is the pre-transaction system calls; transaction i is index i + 1.
        indices.0.checked_sub(1)
    });
    EngineError::PreValueMismatch {
        block: record.map_or(plan.first_block(), |r| r.number()),
        tx,
        address,
        slot,
        claimed: format!("{claimed:?}"),
        state: format!("{state:?}"),
    }
}

/// Every account the plan's merged BAL names, and every slot it lists (writes, and reads when the
/// BAL has them), in key order.
fn prefetch_keys(plan: &BatchPlan) -> (Vec<Address>, Vec<(Address, U256)>) {
    let accounts = plan.merged.iter().map(|a| a.address).collect();
    let slots = plan
        .merged
        .iter()
        .flat_map(|a| {
            a.storage_changes
                .iter()
                .map(move |s| (a.address, s.slot))
                .chain(a.storage_reads.iter().map(move |s| (a.address, *s)))
        })
        .collect();
    (accounts, slots)
}

/// Loads the keys the plan's merged BAL names into the cache, on every reader of `readers` in turn
/// (multi-gets of chunks of the sorted keys): every account and every listed slot (writes, and
/// reads when the BAL has them), then the code of every account
/// with code when the design prefetches code ([`IoDesign::prefetches_code`]). Returns the number
/// of keys read from the store.
fn prefetch<S: StateReader>(
    cache: &SharedCache<S>,
    plan: &BatchPlan,
    readers: &ThreadGroup,
    design: IoDesign,
) -> Result<PrefetchProfile, EngineError> {
    let started = Instant::now();
    let (accounts, slots) = prefetch_keys(plan);
    // Every reader of the group (2 x io_threads) takes the next chunk while chunks remain, the
    // accounts' first: so all stay busy to the end. Split once among io_threads readers each,
    // the accounts' readers finished long before the slots' and left half the reads in flight
    // for most of the prefetch. Chunks stay contiguous runs of the key lists (in key order with
    // plain keys), large enough that a multi-get still merges reads of adjacent blocks.
    let work = PrefetchChunk::of(&accounts, &slots, readers.threads());
    let (read, keys_cpu) = read_in_turn(
        readers,
        &work,
        |chunk| {
            match chunk {
                PrefetchChunk::Accounts(keys) => cache.prefetch_accounts(keys),
                PrefetchChunk::Slots(keys) => cache.prefetch_storage(keys),
            }
            .map(|n| n as u64)
        },
        "prefetch reader",
    )?;
    let profile = |keys: u64, cpu: Duration| PrefetchProfile {
        keys,
        readers: readers.threads() as u32,
        wall_ns: nanos(started.elapsed()),
        cpu_ns: nanos(cpu),
        concurrent: false,
    };
    if !design.prefetches_code() {
        return Ok(profile(read, keys_cpu));
    }
    let mut hashes = Vec::new();
    for address in &accounts {
        if let Some(account) = cache.account(*address)?
            && account.code_hash != revm::primitives::KECCAK_EMPTY
        {
            hashes.push(account.code_hash);
        }
    }
    hashes.sort_unstable();
    hashes.dedup();
    // Codes are read one by one (point reads), on every reader in turn as the keys were.
    let chunks: Vec<&[alloy_primitives::B256]> =
        reader_chunks(&hashes, readers.threads() * PREFETCH_CHUNKS_PER_READER).collect();
    let (_, code_cpu) = read_in_turn(
        readers,
        &chunks,
        |chunk| {
            // A prefetch is a hint: code nobody runs may be absent from a state seeded from a
            // dump's pre-values (an account whose balance alone was read). Execution still
            // fails if it needs code the state lacks.
            chunk
                .iter()
                .try_for_each(|h| match cache.code(*h) {
                    Ok(_) | Err(StateError::MissingCode { .. }) => Ok(()),
                    Err(e) => Err(e),
                })
                .map(|()| chunk.len() as u64)
        },
        "code prefetch",
    )?;
    Ok(profile(read + hashes.len() as u64, keys_cpu + code_cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn readers_take_chunks_in_turn_until_none_remain() {
        let group = ThreadGroup::new(NonZeroUsize::new(4).unwrap(), "test").unwrap();
        // The first chunk is slow: while its reader is on it, the other three read the rest.
        let work: Vec<u64> = (0..20).collect();
        let readers_of = Mutex::new(vec![None; work.len()]);
        let (read, _) = read_in_turn(
            &group,
            &work,
            |&chunk| {
                if chunk == 0 {
                    std::thread::sleep(Duration::from_millis(200));
                }
                readers_of.lock().unwrap()[chunk as usize] =
                    std::thread::current().name().map(str::to_owned);
                Ok::<_, EngineError>(chunk)
            },
            "test reader",
        )
        .unwrap();
        // Every chunk read once: the counts sum to 0 + 1 + ... + 19.
        assert_eq!(read, 190);
        let readers_of = readers_of.into_inner().unwrap();
        assert!(readers_of.iter().all(Option::is_some), "{readers_of:?}");
        // The slow chunk's reader read nothing after it had begun: the others took the 19.
        let slow = readers_of[0].clone();
        let after_slow = readers_of[1..].iter().filter(|r| **r == slow).count();
        assert!(after_slow <= 1, "{readers_of:?}");
    }

    /// Reads `chunks` chunks on 2 readers, each taking 200 µs but chunk 3, which ends with
    /// `fail`; returns the error and how many chunks were begun.
    fn stopped_at_chunk_3(
        chunks: u32,
        fail: fn() -> Result<u64, EngineError>,
    ) -> (EngineError, usize) {
        let group = ThreadGroup::new(NonZeroUsize::new(2).unwrap(), "test").unwrap();
        let work: Vec<u32> = (0..chunks).collect();
        let done = std::sync::atomic::AtomicUsize::new(0);
        let err = read_in_turn(
            &group,
            &work,
            |&chunk| {
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if chunk == 3 {
                    return fail();
                }
                std::thread::sleep(Duration::from_micros(200));
                Ok(1)
            },
            "test reader",
        )
        .unwrap_err();
        (err, done.into_inner())
    }

    #[test]
    fn a_failed_chunk_stops_the_readers_and_is_returned() {
        let (err, done) =
            stopped_at_chunk_3(1000, || Err(EngineError::WorkerPanic("chunk 3".into())));
        assert!(
            matches!(err, EngineError::WorkerPanic(ref w) if w == "chunk 3"),
            "{err:?}"
        );
        // The other reader stopped before its next chunk: far fewer than 1,000 were read.
        assert!(done < 10);
    }

    #[test]
    fn a_panicking_reader_stops_the_others_and_is_an_error() {
        // 4 s of chunks if nothing stopped them. The panic hook (a backtrace, where
        // RUST_BACKTRACE is set) runs before the unwinding that stops the other reader, so it
        // reads on for a while: the bound is loose, the point is that it stops.
        let (err, done) = stopped_at_chunk_3(20_000, || panic!("reader bug"));
        assert!(
            matches!(err, EngineError::WorkerPanic(ref w) if w == "test reader"),
            "{err:?}"
        );
        assert!(done < 10_000);
    }

    #[test]
    fn of_several_failed_chunks_the_first_in_order_is_returned() {
        let group = ThreadGroup::new(NonZeroUsize::new(4).unwrap(), "test").unwrap();
        let work: Vec<u32> = (0..8).collect();
        // Chunk 1 fails late, chunk 2 at once: the error returned is still chunk 1's.
        let err = read_in_turn(
            &group,
            &work,
            |&chunk| match chunk {
                1 => {
                    std::thread::sleep(Duration::from_millis(100));
                    Err(EngineError::WorkerPanic("chunk 1".into()))
                }
                2 => Err(EngineError::WorkerPanic("chunk 2".into())),
                _ => Ok(1),
            },
            "test reader",
        )
        .unwrap_err();
        assert!(
            matches!(err, EngineError::WorkerPanic(ref w) if w == "chunk 1"),
            "{err:?}"
        );
    }

    #[test]
    fn accounts_then_slots_are_cut_into_chunks_per_reader() {
        let accounts: Vec<Address> = (0..10u8).map(Address::with_last_byte).collect();
        let slots: Vec<(Address, U256)> = (0..100u64)
            .map(|i| (Address::ZERO, U256::from(i)))
            .collect();
        // 2 readers, 4 chunks each: 8 chunks of each list (the accounts' of 2 keys, which leaves
        // 5 chunks), in order, every key once.
        let chunks = PrefetchChunk::of(&accounts, &slots, 2);
        let (mut a, mut s) = (Vec::new(), Vec::new());
        for c in &chunks {
            match c {
                PrefetchChunk::Accounts(k) => {
                    assert!(s.is_empty(), "an account chunk after a slot chunk");
                    a.extend_from_slice(k);
                }
                PrefetchChunk::Slots(k) => s.extend_from_slice(k),
            }
        }
        assert_eq!((a, s), (accounts.clone(), slots.clone()));
        let account_chunks = chunks
            .iter()
            .filter(|c| matches!(c, PrefetchChunk::Accounts(_)))
            .count();
        assert_eq!((account_chunks, chunks.len() - account_chunks), (5, 8));
        // No keys, no chunks.
        assert!(PrefetchChunk::of(&[], &[], 4).is_empty());
    }
}
