//! BAL-parallel execution of a batch: every task at once, on `threads` workers.

use crate::{
    BatchPlan, EngineError, IoDesign,
    batch::{Task, TaskKind},
    profile::{TaskClock, TaskProfile},
    verify::check_block,
};
use alloy_consensus::ReceiptEnvelope;
use alloy_evm::{
    Evm, EvmEnv, EvmFactory,
    block::{BalIndexedDatabase, BlockExecutor},
    eth::{EthBlockExecutor, EthEvmFactory, receipt_builder::AlloyReceiptBuilder},
};
use alloy_hardforks::EthereumHardforks as _;
use alloy_primitives::{B256, keccak256};
use bal_replay_executor::{ChainConfig, ExecError, check_writes, tx_writes_from_bal};
use bal_replay_host::{process_cpu_time, thread_cpu_time, worker_thread};
use bal_replay_state::{FlatAccount, StateChanges};
use revm::{
    DatabaseRef,
    database::{CacheState, State, WrapDatabaseRef},
    database_interface::DBErrorMarker,
    inspector::NoOpInspector,
    primitives::KECCAK_EMPTY,
    state::bal::Bal,
};
use std::{
    num::NonZeroUsize,
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

/// What one task produced.
#[derive(Debug, Clone)]
struct TaskOutput {
    receipt: Option<ReceiptEnvelope>,
    /// A transaction's regular and state gas (EIP-8037), which from Amsterdam on make the block's
    /// gas used (the larger of the two sums), where before it was the receipts' sum.
    gas: BlockGas,
    elapsed: Duration,
    /// The task's profile, when the run records them.
    profile: Option<TaskProfile>,
}

/// A transaction's (or a block's) gas in EIP-8037's two dimensions.
#[derive(Debug, Clone, Copy, Default)]
struct BlockGas {
    regular: u64,
    state: u64,
}

/// Timings and results of one parallel batch.
#[derive(Debug, Clone)]
pub struct ParallelOutcome {
    /// The batch's net state change (from the BAL's final writes).
    pub changes: StateChanges,
    /// Wall time from the first task start to the last task end.
    pub exec_time: Duration,
    /// The longest single task.
    pub longest_task: Duration,
    /// Sum of all task times (worker busy time).
    pub busy_time: Duration,
    /// Every transaction's execution time, in block order.
    pub tx_times: Vec<Duration>,
    /// Every task's profile in the order workers took them (empty unless asked for).
    pub tasks: Vec<TaskProfile>,
    /// The workers' time runnable but off a core, summed, ns (profiling only; `None` where the
    /// kernel does not say): [`crate::BatchProfile::worker_run_delay_ns`].
    pub worker_run_delay_ns: Option<u64>,
    /// The process's CPU while the workers ran, ns (profiling only):
    /// [`crate::BatchProfile::process_cpu_ns`].
    pub process_cpu_ns: Option<u64>,
    /// The workers' own CPU (user and kernel) from their first task to their last, summed:
    /// execution with its on-demand reads, without planning, prefetch or commit.
    pub worker_cpu: Duration,
}

/// How to run a parallel batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParallelOptions {
    /// Whether reads the BAL does not cover may go to the database ([`IoDesign::diffs_only`]).
    pub design: IoDesign,
    /// Workers.
    pub threads: NonZeroUsize,
    /// Record every task's profile ([`TaskProfile`]): two reads of the thread's CPU clock per task.
    pub profile: bool,
    /// Pin worker `w` to CPU `pin_workers[w mod len]` ([`crate::ReplayOptions::pin_workers`]).
    pub pin_workers: Option<std::sync::Arc<[usize]>>,
}

/// Executes every task of `plan` on `threads` workers over `db` (the state before the batch), with
/// revm's BAL-indexed reads over the plan's merged BAL. Checks every task's writes against the BAL,
/// and every block's gas used and receipts root against its header.
///
/// `design` says whether a read the BAL does not cover may go to `db` (the diffs-only designs,
/// [`IoDesign::diffs_only`]) or is an error (a BAL with read keys must name every key read).
pub fn execute_parallel<D>(
    config: &ChainConfig,
    plan: &BatchPlan,
    db: &D,
    design: IoDesign,
    threads: NonZeroUsize,
) -> Result<ParallelOutcome, EngineError>
where
    D: DatabaseRef + Sync + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let options = ParallelOptions {
        design,
        threads,
        profile: false,
        pin_workers: None,
    };
    execute_parallel_with(config, plan, db, options)
}

/// [`execute_parallel`], recording each task's profile when `options.profile` is set.
pub fn execute_parallel_with<D>(
    config: &ChainConfig,
    plan: &BatchPlan,
    db: &D,
    options: ParallelOptions,
) -> Result<ParallelOutcome, EngineError>
where
    D: DatabaseRef + Sync + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let start = Instant::now();
    // Two reads of the process's CPU clock per batch, outside every task's clock.
    let process_cpu_at_start = options.profile.then(process_cpu_time);
    let TaskRun {
        outputs,
        failure,
        worker_run_delay_ns,
        worker_cpu,
    } = run_tasks(config, plan, db, options, start)?;
    let exec_time = start.elapsed();
    let process_cpu_ns = process_cpu_at_start
        .map(|at_start| crate::profile::nanos(process_cpu_time().saturating_sub(at_start)));
    // The block of the failing task: every block before it ran all its tasks, so its header check
    // (gas used, receipts root) comes first, as sequential execution would report it.
    let failed_block = failure
        .as_ref()
        .and_then(|(g, _)| plan.tasks.get(*g as usize))
        .map(|t| t.block);
    let output = |i: usize| {
        outputs
            .get(i)
            .and_then(Option::as_ref)
            .ok_or_else(|| EngineError::WorkerPanic(format!("task {i} produced no output")))
    };
    let tx_times = check_blocks(config, plan, failed_block, output)?;
    if let Some((_, e)) = failure {
        return Err(e);
    }
    let outputs: Vec<&TaskOutput> = (0..outputs.len()).map(output).collect::<Result<_, _>>()?;

    // Workers take tasks in block order, which is their global indices' order.
    let tasks = outputs.iter().filter_map(|o| o.profile).collect();
    let longest_task = outputs.iter().map(|o| o.elapsed).max().unwrap_or_default();
    let busy_time = outputs.iter().map(|o| o.elapsed).sum();
    let changes = final_changes(config, plan, db)?;
    Ok(ParallelOutcome {
        changes,
        exec_time,
        longest_task,
        busy_time,
        tx_times,
        tasks,
        worker_run_delay_ns,
        process_cpu_ns,
        worker_cpu,
    })
}

/// What the workers left: each task's output by global index (none where it failed or was
/// skipped), and the lowest failing task's error with its global index.
struct TaskRun {
    outputs: Vec<Option<TaskOutput>>,
    failure: Option<(u64, EngineError)>,
    /// The workers' run delay, summed (profiling only).
    worker_run_delay_ns: Option<u64>,
    /// The workers' CPU, summed ([`ParallelOutcome::worker_cpu`]).
    worker_cpu: Duration,
}

/// Runs the plan's tasks on `threads` workers, in block order.
///
/// The error kept is the one of the lowest failing (block, index), whatever the number of workers
/// or their timing: after a failure, tasks above it are skipped (they cannot change which error
/// is the lowest), and tasks below it still run, since one of them may fail too. Tasks are
/// independent (each reads the BAL's writes below its index), so the lowest failing task is the
/// same in every run.
fn run_tasks<D>(
    config: &ChainConfig,
    plan: &BatchPlan,
    db: &D,
    options: ParallelOptions,
    batch_start: Instant,
) -> Result<TaskRun, EngineError>
where
    D: DatabaseRef + Sync + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let ParallelOptions {
        design,
        threads,
        profile,
        pin_workers,
    } = options;
    let pin_workers = pin_workers.as_deref().filter(|cpus| !cpus.is_empty());
    let board = TaskBoard::new(plan);
    let worker = BatchWorker {
        config,
        plan,
        db,
        design,
        profile,
        batch_start,
        envs: plan
            .records
            .iter()
            .map(|r| config.evm_env(&r.block.header))
            .collect(),
        board: &board,
    };
    let worker = &worker;
    let started = std::thread::scope(|scope| {
        for index in 0..threads.get() {
            let index = index as u32;
            let spawned = worker_thread(index).spawn_scoped(scope, move || {
                if pin_workers.is_none_or(|cpus| worker.board.pin(index, cpus)) {
                    worker.run(index);
                }
            });
            if let Err(e) = spawned {
                // The workers already started take no further task: the batch fails as a whole.
                board.cursor.store(usize::MAX / 2, Ordering::Relaxed);
                return Err(EngineError::ThreadStart(format!("bal-worker-{index}: {e}")));
            }
        }
        Ok(())
    });
    started?;
    board.into_run(profile)
}

/// What the workers of one batch share: the tasks in the order they are taken, a slot for each
/// task's output, and the lowest failure so far.
struct TaskBoard {
    /// By global index: a task's position in `plan.tasks` (block order).
    outputs: Vec<Mutex<Option<TaskOutput>>>,
    /// The next task to take, in `plan.tasks`.
    cursor: AtomicUsize,
    lowest_failed: AtomicU64,
    lowest_error: Mutex<Option<(u64, EngineError)>>,
    /// The workers' run delay (profiling only), and whether every worker could read its own.
    run_delay: AtomicU64,
    run_delay_known: AtomicBool,
    /// The workers' CPU, ns, summed as each ends.
    worker_cpu_ns: AtomicU64,
    /// A worker that cannot be pinned takes no task, and the batch fails saying why (the lowest
    /// such worker's, whatever the order they fail in).
    pin_failure: Mutex<Option<(u32, String)>>,
}

impl TaskBoard {
    fn new(plan: &BatchPlan) -> Self {
        Self {
            outputs: plan.tasks.iter().map(|_| Mutex::new(None)).collect(),
            cursor: AtomicUsize::new(0),
            lowest_failed: AtomicU64::new(u64::MAX),
            lowest_error: Mutex::new(None),
            run_delay: AtomicU64::new(0),
            run_delay_known: AtomicBool::new(true),
            worker_cpu_ns: AtomicU64::new(0),
            pin_failure: Mutex::new(None),
        }
    }

    /// Pins the calling thread, worker `worker`, to its CPU of `cpus`; false (and the failure
    /// kept) where it cannot be.
    fn pin(&self, worker: u32, cpus: &[usize]) -> bool {
        let cpu = cpus[worker as usize % cpus.len()];
        let Err(e) = crate::cpus::pin_current_thread(cpu) else {
            return true;
        };
        if let Ok(mut failure) = self.pin_failure.lock()
            && failure.as_ref().is_none_or(|(w, _)| worker < *w)
        {
            *failure = Some((
                worker,
                format!("pinning bal-worker-{worker} to CPU {cpu}: {e}"),
            ));
        }
        false
    }

    /// Keeps `error` if its task is the lowest failing one so far.
    fn fail(&self, global_index: u64, error: EngineError) {
        self.lowest_failed
            .fetch_min(global_index, Ordering::Relaxed);
        if let Ok(mut lowest) = self.lowest_error.lock()
            && lowest.as_ref().is_none_or(|(g, _)| global_index < *g)
        {
            *lowest = Some((global_index, error));
        }
    }

    /// Once the workers are done: what they left.
    fn into_run(self, profile: bool) -> Result<TaskRun, EngineError> {
        if let Some((_, e)) = self.pin_failure.into_inner().ok().flatten() {
            return Err(EngineError::ThreadStart(e));
        }
        let failure = self
            .lowest_error
            .into_inner()
            .map_err(|e| EngineError::WorkerPanic(e.to_string()))?;
        let outputs = self
            .outputs
            .into_iter()
            .map(|m| m.into_inner().ok().flatten())
            .collect();
        let worker_run_delay_ns =
            (profile && self.run_delay_known.into_inner()).then(|| self.run_delay.into_inner());
        Ok(TaskRun {
            outputs,
            failure,
            worker_run_delay_ns,
            worker_cpu: Duration::from_nanos(self.worker_cpu_ns.into_inner()),
        })
    }
}

/// What every worker of a batch runs with.
struct BatchWorker<'a, D> {
    config: &'a ChainConfig,
    plan: &'a BatchPlan,
    db: &'a D,
    design: IoDesign,
    profile: bool,
    batch_start: Instant,
    /// Each block's EVM environment, by position in the batch.
    envs: Vec<EvmEnv>,
    board: &'a TaskBoard,
}

impl<'a, D> BatchWorker<'a, D>
where
    D: DatabaseRef + Sync + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    /// Worker `worker`'s loop: takes the next task until none is left, skipping those above the
    /// lowest failure.
    fn run(&self, worker: u32) {
        let board = self.board;
        // Two reads of a proc file per worker and batch, outside every task's clock.
        let delay_at_start = self.profile.then(crate::profile::thread_run_delay_ns);
        // Two reads of the thread's CPU clock per worker and batch.
        let cpu_at_start = thread_cpu_time();
        let mut kept = None;
        loop {
            let i = board.cursor.fetch_add(1, Ordering::Relaxed);
            let Some(task) = self.plan.tasks.get(i) else {
                break;
            };
            if task.global_index > board.lowest_failed.load(Ordering::Relaxed) {
                continue;
            }
            match self.output(worker, task, &mut kept) {
                Ok(out) => {
                    if let Ok(mut slot) = board.outputs[task.global_index as usize].lock() {
                        *slot = Some(out);
                    }
                }
                Err(e) => board.fail(task.global_index, e),
            }
        }
        if let Some(start) = delay_at_start {
            match start.zip(crate::profile::thread_run_delay_ns()) {
                Some((start, end)) => {
                    board
                        .run_delay
                        .fetch_add(end.saturating_sub(start), Ordering::Relaxed);
                }
                None => board.run_delay_known.store(false, Ordering::Relaxed),
            }
        }
        let cpu = thread_cpu_time().saturating_sub(cpu_at_start);
        board
            .worker_cpu_ns
            .fetch_add(crate::profile::nanos(cpu), Ordering::Relaxed);
    }

    /// Runs `task` on worker `worker` with the worker's kept EVM, timed (and profiled, when the
    /// run records profiles).
    fn output(
        &self,
        worker: u32,
        task: &Task,
        kept: &mut Option<KeptEvm<'a, D>>,
    ) -> Result<TaskOutput, EngineError> {
        let t0 = Instant::now();
        let clock = self.profile.then(TaskClock::start);
        let (receipt, gas) = self.run_task(task, kept)?;
        let elapsed = t0.elapsed();
        let profile = clock.map(|c| {
            let tx_gas = receipt.as_ref().map_or(0, |r| r.cumulative_gas_used());
            c.finish(
                self.batch_start,
                self.plan.records[task.block].number(),
                task.local_index,
                worker,
                tx_gas,
            )
        });
        Ok(TaskOutput {
            receipt,
            gas,
            elapsed,
            profile,
        })
    }

    /// The EVM for `task`: the worker's kept one where it was made for the task's block, its `State`
    /// readied for the task ([`ready_state`]); else a new one.
    fn task_evm(&self, task: &Task, kept: &mut Option<KeptEvm<'a, D>>) -> TaskEvm<'a, D> {
        let mut evm = match kept.take() {
            Some(KeptEvm { block, mut evm }) if block == task.block => {
                ready_state(evm.db_mut());
                evm
            }
            _ => {
                let state = State::builder()
                    .with_database(WrapDatabaseRef(self.db))
                    .with_bal(self.plan.bal.clone())
                    .with_bal_builder()
                    .build();
                EthEvmFactory::default().create_evm(state, self.envs[task.block].clone())
            }
        };
        let state = evm.db_mut();
        state.set_allow_bal_db_fallback(self.design.diffs_only());
        BalIndexedDatabase::set_bal_index(state, task.global_index);
        evm
    }

    /// Runs one task over a `State` of its own (BAL-indexed reads at the task's global index, BAL
    /// builder on) in the worker's kept EVM ([`Self::task_evm`]), and checks that it wrote exactly the
    /// BAL's values for its index. The EVM is kept again only where the task succeeded.
    fn run_task(
        &self,
        task: &Task,
        kept: &mut Option<KeptEvm<'a, D>>,
    ) -> Result<(Option<ReceiptEnvelope>, BlockGas), EngineError> {
        let record = &self.plan.records[task.block];
        let block = &record.block;
        let number = block.header.number;
        let exec_err = |e| {
            EngineError::Exec(ExecError::from_execution::<D::Error>(
                number,
                task.local_index,
                record.tx_count(),
                e,
            ))
        };
        let evm = self.task_evm(task, kept);
        let mut executor = EthBlockExecutor::new(
            evm,
            bal_replay_executor::step_execution_ctx(block),
            &self.config.spec,
            AlloyReceiptBuilder::default(),
        );
        let (mut evm, receipt, gas) = match task.kind {
            TaskKind::PreBlock => {
                executor.apply_pre_execution_changes().map_err(exec_err)?;
                (executor.evm, None, BlockGas::default())
            }
            TaskKind::Tx(i) => {
                let tx = &block.body.transactions[i];
                let recovered =
                    alloy_consensus::transaction::Recovered::new_unchecked(tx, record.senders[i]);
                // Not `execute_transaction_with_index`: it would set the block-local index, and this
                // state reads the batch's merged BAL at the global index set above.
                executor.execute_transaction(recovered).map_err(exec_err)?;
                let receipt = executor.receipts.first().cloned();
                // The executor ran this one transaction: its block totals are the transaction's.
                let gas = BlockGas {
                    regular: executor.block_regular_gas_used,
                    state: executor.block_state_gas_used,
                };
                (executor.evm, receipt, gas)
            }
            TaskKind::PostBlock => {
                let (evm, _) = executor.finish().map_err(exec_err)?;
                (evm, None, BlockGas::default())
            }
        };
        let built = evm.db_mut().take_built_alloy_bal().unwrap_or_default();
        check_writes(
            number,
            task.local_index,
            record.tx_count(),
            &self.plan.expected_writes[task.global_index as usize],
            &tx_writes_from_bal(&built, task.global_index),
        )?;
        *kept = Some(KeptEvm {
            block: task.block,
            evm,
        });
        Ok((receipt, gas))
    }
}

/// Checks each block before `failed_block` against its header (gas used, receipts root, from its
/// receipts with cumulative gas restored in block order); returns every checked transaction's time.
fn check_blocks<'a>(
    config: &ChainConfig,
    plan: &BatchPlan,
    failed_block: Option<usize>,
    output: impl Fn(usize) -> Result<&'a TaskOutput, EngineError>,
) -> Result<Vec<Duration>, EngineError> {
    let mut tx_times = Vec::with_capacity(plan.tx_count());
    for (k, record) in plan.records.iter().enumerate() {
        if failed_block == Some(k) {
            break;
        }
        let first = plan.offsets[k] as usize;
        let n = record.tx_count();
        let mut cumulative = 0u64;
        let mut block_gas = BlockGas::default();
        let mut receipts = Vec::with_capacity(n);
        for i in first + 1..=first + n {
            let out = output(i)?;
            block_gas.regular += out.gas.regular;
            block_gas.state += out.gas.state;
            let mut receipt = out
                .receipt
                .clone()
                .ok_or_else(|| EngineError::WorkerPanic("missing receipt".into()))?;
            cumulative += receipt.cumulative_gas_used();
            set_cumulative_gas(&mut receipt, cumulative);
            receipts.push(receipt);
            tx_times.push(out.elapsed);
        }
        let (root, bloom) = bal_replay_executor::receipts_root_and_bloom(&receipts);
        // As alloy-evm's `EthBlockExecutor::finish` counts it.
        let gas_used = if config
            .evm_env(&record.block.header)
            .cfg_env
            .enable_amsterdam_eip8037
        {
            block_gas.regular.max(block_gas.state)
        } else {
            cumulative
        };
        check_block(config, record, gas_used, root, bloom)?;
    }
    Ok(tx_times)
}

fn set_cumulative_gas(receipt: &mut ReceiptEnvelope, cumulative: u64) {
    if let Some(r) = receipt.as_receipt_with_bloom_mut() {
        r.receipt.cumulative_gas_used = cumulative;
    }
}

/// The EVM a task runs in.
type TaskEvm<'d, D> =
    <EthEvmFactory as EvmFactory>::Evm<State<WrapDatabaseRef<&'d D>>, NoOpInspector>;

/// A worker's EVM, kept from one task to the next of the same block. Making an EVM and its
/// `State` allocates and fills the interpreter's stack and memory, the instruction table and the
/// block-hash cache (tens of KB), which cost a small transaction's task a third of its time.
struct KeptEvm<'d, D>
where
    D: DatabaseRef + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    /// The block of the batch it was made for (its environment).
    block: usize,
    evm: TaskEvm<'d, D>,
}

/// Readies a kept `State` for the next task of its block as `State::builder()` makes one for
/// it: no cached account or slot, a new BAL builder (the index is set after). The batch's BAL, the
/// database and the block-hash cache stay: every task of the block reads the same ones. Without
/// bundle updates (the builder's default) a task's commit touches only the cache and the BAL
/// builder.
fn ready_state<DB>(state: &mut State<DB>) {
    debug_assert!(state.transition_state.is_none() && state.bundle_state.is_empty());
    state.cache = CacheState::default();
    state.bal_state.bal_builder = Some(Bal::new());
}

/// The batch's net change: the last write of every key in the merged BAL, over the pre-batch values of
/// the fields the batch did not write. From Spurious Dragon on, accounts left empty are deleted with
/// their storage (EIP-161); before it, an empty account exists like any other.
fn final_changes<D>(
    config: &ChainConfig,
    plan: &BatchPlan,
    db: &D,
) -> Result<StateChanges, EngineError>
where
    D: DatabaseRef,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let mut changes = StateChanges::default();
    for account in plan.merged.iter() {
        let address = account.address;
        let info_written = !(account.balance_changes.is_empty()
            && account.nonce_changes.is_empty()
            && account.code_changes.is_empty());
        if info_written {
            let base = db
                .basic_ref(address)
                .map_err(|e| {
                    // The commit reads the pre-batch state, outside any task's index.
                    EngineError::Exec(ExecError::from_read(
                        plan.last_block(),
                        None,
                        plan.records
                            .last()
                            .map(|r| r.tx_count())
                            .unwrap_or_default(),
                        e,
                    ))
                })?
                .map(|i| FlatAccount {
                    nonce: i.nonce,
                    balance: i.balance,
                    code_hash: i.code_hash,
                })
                .unwrap_or(FlatAccount {
                    nonce: 0,
                    balance: Default::default(),
                    code_hash: KECCAK_EMPTY,
                });
            let mut flat = base;
            if let Some(c) = account.balance_changes.last() {
                flat.balance = c.post_balance;
            }
            if let Some(c) = account.nonce_changes.last() {
                flat.nonce = c.new_nonce;
            }
            if let Some(c) = account.code_changes.last() {
                if c.new_code.is_empty() {
                    flat.code_hash = KECCAK_EMPTY;
                } else {
                    let hash: B256 = keccak256(&c.new_code);
                    flat.code_hash = hash;
                    changes.codes.push((hash, c.new_code.clone()));
                }
            }
            let empty = flat.nonce == 0 && flat.balance.is_zero() && flat.code_hash == KECCAK_EMPTY;
            if empty
                && config
                    .spec
                    .is_spurious_dragon_active_at_block(plan.last_block())
            {
                changes.accounts.push((address, None));
                changes.wiped_storage.push(address);
                continue;
            }
            changes.accounts.push((address, Some(flat)));
        }
        for slot in &account.storage_changes {
            if let Some(last) = slot.changes.last() {
                changes.storage.push((address, slot.slot, last.new_value));
            }
        }
    }
    changes.block_hashes = plan
        .records
        .iter()
        .map(|r| (r.number(), r.block.header.hash_slow()))
        .collect();
    Ok(changes)
}
