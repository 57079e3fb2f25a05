//! What a projection reads of a bench's runs. Every `RunResult` field it uses is read in
//! [`BenchRun::of`], and nowhere else: a change to the bench's result touches this file alone.

use bal_replay_bench::{BenchResult, RunResult, StoreKind};
use bal_replay_engine::{BatchProfile, ExecMode, IoDesign, WorkerStartCost};
use bal_replay_model::{Measured, ProfiledRun, Repeats, task_totals};

/// A configuration group: runs that differ only in their worker count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Group {
    pub(crate) design: IoDesign,
    pub(crate) batch: usize,
    pub(crate) store: StoreKind,
    pub(crate) cold: bool,
}

/// A bench run as the projection sees it, with the bench and the input it came from.
#[derive(Debug, Clone)]
pub(crate) struct BenchRun {
    /// Its configuration, less the worker count.
    config: Group,
    /// Whether it ran BAL-parallel: a sequential run is in no group (the model does not simulate
    /// it).
    parallel: bool,
    /// Workers it ran with.
    pub(crate) workers: usize,
    /// Gas replayed.
    pub(crate) gas: u64,
    /// Device reads per key read, where the bench counted them.
    device_reads_per_key: Option<f64>,
    batch_profiles: Vec<BatchProfile>,
    exec_with_io_s: f64,
    longest_txs_s: f64,
    commit_s: f64,
    /// Runs the bench made of its configuration (`bench --repeat`), and their median, lowest and
    /// highest throughput, MGas/s.
    pub(crate) runs_made: usize,
    mgas_per_s: f64,
    mgas_per_s_min: f64,
    mgas_per_s_max: f64,
    /// CPUs its bench could use.
    pub(crate) cpus: usize,
    /// Of those, what was left to the run on average, where the bench measured what everything
    /// else used meanwhile (the machine is shared).
    pub(crate) cpus_free: Option<f64>,
    /// Which input it came from (its index among them).
    pub(crate) input: usize,
}

impl BenchRun {
    /// `run`, of a bench that had `cpus` CPUs, from input `input`.
    fn of(run: &RunResult, cpus: usize, input: usize) -> Self {
        Self {
            config: Group {
                design: run.design,
                batch: run.batch,
                store: run.store,
                cold: run.cold,
            },
            parallel: run.mode == ExecMode::Parallel,
            workers: run.threads,
            gas: run.gas,
            device_reads_per_key: run.disk.device_reads_per_key,
            batch_profiles: run.batch_profiles.clone(),
            exec_with_io_s: run.timing.exec_with_io_s,
            longest_txs_s: run.timing.longest_txs_s,
            commit_s: run.timing.commit_s,
            runs_made: run.throughput.repeats,
            mgas_per_s: run.throughput.mgas_per_s,
            mgas_per_s_min: run.throughput.mgas_per_s_min,
            mgas_per_s_max: run.throughput.mgas_per_s_max,
            cpus,
            cpus_free: run.cpu.map(|cpu| cpu.cpus_free(cpus)),
            input,
        }
    }

    /// Its group: runs of the same configuration at other worker counts.
    pub(crate) fn group(&self) -> Option<Group> {
        self.parallel.then_some(self.config)
    }

    /// Whether this is `group`'s one-worker run with a task profile: what a calibration takes.
    pub(crate) fn is_one_worker_profile_of(&self, group: Group) -> bool {
        self.group() == Some(group) && self.workers == 1 && !self.batch_profiles.is_empty()
    }

    /// What the model needs of it.
    pub(crate) fn profiled(&self) -> ProfiledRun {
        ProfiledRun {
            design: self.config.design,
            batch: self.config.batch,
            workers: self.workers,
            gas: self.gas,
            device_reads_per_key: self.device_reads_per_key.unwrap_or(0.0),
            batches: self.batch_profiles.clone(),
            read_cpu_ns: None,
            // Hybrid's prefetch races its tasks; only a profile that counted the race can
            // simulate it.
            simulate_race: self.config.design == IoDesign::Hybrid
                && self
                    .batch_profiles
                    .iter()
                    .flat_map(|b| &b.tasks)
                    .any(|t| t.raced + t.prefetch_hits > 0),
            measured: self.measured(),
        }
    }

    /// Its figures in the research's terms.
    pub(crate) fn measured(&self) -> Measured {
        let (task_cpu_ns, reads) = task_totals(&self.batch_profiles);
        Measured {
            exec_with_io_s: self.exec_with_io_s,
            longest_txs_s: self.longest_txs_s,
            total_s: self.exec_with_io_s + self.commit_s,
            on_demand_reads: reads as f64,
            task_cpu_s: task_cpu_ns / 1e9,
            worker_run_delay_s: self.batches_sum_s(|b| b.worker_run_delay_ns),
        }
    }

    /// A per-batch figure in ns, where the profile has it, summed over the run, in seconds.
    fn batches_sum_s(&self, figure: impl Fn(&BatchProfile) -> Option<u64>) -> f64 {
        self.batch_profiles
            .iter()
            .filter_map(figure)
            .map(|ns| ns as f64)
            .sum::<f64>()
            / 1e9
    }

    /// The bench's repeats of its configuration, where it made more than one run.
    pub(crate) fn repeats(&self) -> Option<Repeats> {
        Repeats::new(
            self.runs_made,
            self.mgas_per_s,
            self.mgas_per_s_min,
            self.mgas_per_s_max,
        )
    }
}

/// Every run of `benches`, in order, each with the index of the bench it came from.
pub(crate) fn runs_of(benches: &[BenchResult]) -> Vec<BenchRun> {
    benches
        .iter()
        .enumerate()
        .flat_map(|(input, bench)| {
            bench
                .runs
                .iter()
                .map(move |run| BenchRun::of(run, bench.cpus, input))
        })
        .collect()
}

/// What starting a worker cost, as the first of `benches` that measured it recorded.
pub(crate) fn recorded_worker_start(benches: &[BenchResult]) -> Option<WorkerStartCost> {
    benches.iter().find_map(|bench| bench.worker_start)
}
