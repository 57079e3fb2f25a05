//! Worker threads: the builder the engine starts a batch's workers with, and what starting one
//! costs the CPU on this machine.

use crate::{process_cpu_time, thread_cpu_time};
use std::time::Duration;

/// The thread of worker `worker` of a batch: named, so a profile (perf, top -H) tells the workers
/// from RocksDB's and the readers' threads. The engine starts them per batch, not kept in a pool
/// (its `EnginePools` says why); what starting one costs is [`measure_worker_start`]'s to
/// measure.
pub fn worker_thread(worker: u32) -> std::thread::Builder {
    std::thread::Builder::new().name(format!("bal-worker-{worker}"))
}

/// What starting and joining one batch worker costs the CPU on this machine
/// ([`measure_worker_start`]): a parallel batch starts its workers (all but the first: a one-worker
/// profile has that one in its serial part) and joins them, so this is what more workers add to
/// each batch beyond their tasks. The model simulates the starting thread sharing the cores with
/// the workers it has started (`bal_replay_model`), which a one-worker profile cannot show.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkerStartCost {
    /// CPU of the starting thread per worker it starts (the `clone` and the stack), ns.
    pub spawn_ns: f64,
    /// CPU of the worker's own thread to start and end with no task (its setup, its exit), ns.
    pub thread_ns: f64,
    /// CPU of the starting thread per worker it joins, ns.
    pub join_ns: f64,
    /// Workers started per measurement, and measurements: the cost is their mean.
    pub workers: usize,
    /// See `workers`.
    pub rounds: usize,
}

/// Workers started per round, and rounds, where a bench or a projection measures what starting a
/// worker costs ([`measure_worker_start`]): 800 threads, a few tens of milliseconds.
pub const WORKER_START_WORKERS: usize = 8;
/// See [`WORKER_START_WORKERS`].
pub const WORKER_START_ROUNDS: usize = 100;

/// Measures [`WorkerStartCost`]: `rounds` times, starts `workers` threads as a batch starts its
/// workers ([`worker_thread`], scoped) with nothing to run, and joins them. The
/// workers' own CPU is the process's less the starting thread's, so other threads of the process
/// (RocksDB's) must be idle: measure before a store opens. `None` if a thread cannot start.
pub fn measure_worker_start(workers: usize, rounds: usize) -> Option<WorkerStartCost> {
    let (workers, rounds) = (workers.max(1), rounds.max(1));
    let (mut spawn, mut join, mut all) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..rounds {
        let (process, main) = (process_cpu_time(), thread_cpu_time());
        let joined = std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(workers);
            for w in 0..workers {
                handles.push(worker_thread(w as u32).spawn_scoped(scope, || {}).ok()?);
            }
            let spawned = thread_cpu_time();
            for h in handles {
                h.join().ok()?;
            }
            Some(spawned)
        })?;
        let (main_end, process_end) = (thread_cpu_time(), process_cpu_time());
        spawn += joined.saturating_sub(main);
        join += main_end.saturating_sub(joined);
        all += process_end.saturating_sub(process);
    }
    let per = |d: Duration| d.as_nanos() as f64 / (workers * rounds) as f64;
    let main = per(spawn) + per(join);
    Some(WorkerStartCost {
        spawn_ns: per(spawn),
        thread_ns: (per(all) - main).max(0.0),
        join_ns: per(join),
        workers,
        rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starting_a_worker_costs_its_starter_cpu_per_worker() {
        let cost = measure_worker_start(4, 25).expect("threads start");
        assert_eq!((cost.workers, cost.rounds), (4, 25));
        // A `clone` with a new stack is microseconds of CPU, not nothing and not a millisecond.
        assert!(
            cost.spawn_ns > 500.0 && cost.spawn_ns < 1e6,
            "spawn {} ns",
            cost.spawn_ns
        );
        assert!(cost.join_ns >= 0.0 && cost.join_ns < 1e6, "{cost:?}");
        assert!(cost.thread_ns >= 0.0 && cost.thread_ns < 1e6, "{cost:?}");
    }
}
