//! Per-task profiles of a replay: what each task cost in CPU and in waiting for reads, which worker
//! ran it and when, and each batch's prefetch and commit. The input of the scheduler and disk model
//! (`bal-replay project`), which replays the engine's schedule for other worker, core and disk
//! counts.
//!
//! Recording is opt-in ([`crate::ReplayOptions::profile`]): it reads the thread's CPU clock twice
//! per task (a system call each, about a microsecond together), which an unprofiled run does not
//! pay. On-demand reads are tallied by the cache on every run ([`ReadTally`]).

use bal_replay_cache::ReadTally;
use bal_replay_host::thread_cpu_time;
use std::time::{Duration, Instant};

/// One task of a parallel batch, as it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskProfile {
    /// Block number.
    pub block: u64,
    /// BAL index within the block: 0 the pre-block system calls, `i + 1` transaction `i`, the
    /// transaction count plus one the post-block changes.
    pub index: u64,
    /// The worker that ran it (0-based).
    pub worker: u32,
    /// When it started, from the start of the batch's execution, ns.
    pub start_ns: u64,
    /// Wall time, ns.
    pub wall_ns: u64,
    /// CPU time of its thread while it ran, ns (includes the CPU its reads took).
    pub cpu_ns: u64,
    /// Reads it made from the store on demand (cache misses it read itself).
    pub reads: u64,
    /// Time spent in those reads, ns.
    pub read_wait_ns: u64,
    /// Gas it used (0 for the pre- and post-block tasks).
    pub gas: u64,
    /// Of `reads`, those of keys the prefetch beside execution (hybrid's) was to load and had not
    /// loaded yet: reads it lost the race for. 0 without such a prefetch, or in profiles
    /// recorded before it was counted.
    pub raced: u64,
    /// Lookups answered by a value that prefetch loaded, the first for each value: reads it
    /// saved this task. `raced + prefetch_hits` is what the prefetch was there to serve.
    pub prefetch_hits: u64,
}

/// A prefetch's readers, together: the keys they read and what that cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PrefetchProfile {
    /// Keys read from the store (those already cached are not read).
    pub keys: u64,
    /// Reader threads.
    pub readers: u32,
    /// Wall time from the first reader's start to the last one's end, ns.
    pub wall_ns: u64,
    /// CPU time of all readers, ns.
    pub cpu_ns: u64,
    /// Whether it ran beside execution (hybrid's prefetch, full BAL's verification) rather than
    /// before it (batched I/O).
    pub concurrent: bool,
}

/// One batch, as it ran: its tasks in the order workers took them, its prefetch and its commit.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct BatchProfile {
    /// First block.
    pub first_block: u64,
    /// Last block.
    pub last_block: u64,
    /// Every task, in the order workers took them (the engine's task order). In JSON, one
    /// array per field (a batch holds thousands of tasks).
    #[serde(with = "task_columns")]
    pub tasks: Vec<TaskProfile>,
    /// The prefetch before or beside execution, if the design has one.
    pub prefetch: Option<PrefetchProfile>,
    /// Execution, from the first task's start to the last one's end, ns.
    pub exec_ns: u64,
    /// The commit, ns.
    pub commit_ns: u64,
    /// Time the batch's workers spent runnable but waiting for a core, summed over them, ns
    /// (the kernel's `run_delay`, `/proc/thread-self/schedstat`, from each worker's start to its
    /// end): what a schedule that runs a woken thread at once on a free core does not have.
    /// `None` where the kernel does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_run_delay_ns: Option<u64>,
    /// CPU the whole process used while the batch executed (from the workers' start to their
    /// end), ns (`CLOCK_PROCESS_CPUTIME_ID`): the tasks' CPU plus what other threads took beside
    /// them (RocksDB's background flushes and compactions, a concurrent prefetch's readers, the
    /// thread starting the workers). `None` where the kernel does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_cpu_ns: Option<u64>,
}

/// [`BatchProfile::tasks`] in JSON: one array per field, all of the same length.
mod task_columns {
    use super::TaskProfile;
    use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error};

    #[derive(Serialize, Deserialize)]
    struct Columns {
        block: Vec<u64>,
        index: Vec<u64>,
        worker: Vec<u32>,
        start_ns: Vec<u64>,
        wall_ns: Vec<u64>,
        cpu_ns: Vec<u64>,
        reads: Vec<u64>,
        read_wait_ns: Vec<u64>,
        gas: Vec<u64>,
        // Left out, like every column, only where there are no tasks; the reader then finds
        // them absent and every column empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        raced: Vec<u64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prefetch_hits: Vec<u64>,
    }

    pub(super) fn serialize<S: Serializer>(
        tasks: &[TaskProfile],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let column = |f: fn(&TaskProfile) -> u64| tasks.iter().map(f).collect::<Vec<u64>>();
        Columns {
            block: column(|t| t.block),
            index: column(|t| t.index),
            worker: tasks.iter().map(|t| t.worker).collect(),
            start_ns: column(|t| t.start_ns),
            wall_ns: column(|t| t.wall_ns),
            cpu_ns: column(|t| t.cpu_ns),
            reads: column(|t| t.reads),
            read_wait_ns: column(|t| t.read_wait_ns),
            gas: column(|t| t.gas),
            raced: column(|t| t.raced),
            prefetch_hits: column(|t| t.prefetch_hits),
        }
        .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<TaskProfile>, D::Error> {
        let c = Columns::deserialize(deserializer)?;
        let n = c.block.len();
        let lengths = [
            c.index.len(),
            c.worker.len(),
            c.start_ns.len(),
            c.wall_ns.len(),
            c.cpu_ns.len(),
            c.reads.len(),
            c.read_wait_ns.len(),
            c.gas.len(),
            c.raced.len(),
            c.prefetch_hits.len(),
        ];
        if lengths.iter().any(|&l| l != n) {
            return Err(D::Error::custom(format!(
                "task profile columns of different lengths: block has {n}, the others {lengths:?}"
            )));
        }
        Ok((0..n)
            .map(|i| TaskProfile {
                block: c.block[i],
                index: c.index[i],
                worker: c.worker[i],
                start_ns: c.start_ns[i],
                wall_ns: c.wall_ns[i],
                cpu_ns: c.cpu_ns[i],
                reads: c.reads[i],
                read_wait_ns: c.read_wait_ns[i],
                gas: c.gas[i],
                raced: c.raced[i],
                prefetch_hits: c.prefetch_hits[i],
            })
            .collect())
    }
}

impl BatchProfile {
    /// Execution time outside the tasks, ns: from the batch's start to the first task's start
    /// (workers starting), and from the last task's end to the batch's end (each block's
    /// receipts root and gas checked, the batch's net change built). The serial part of a
    /// parallel batch, whatever the workers.
    pub fn serial_ns(&self) -> u64 {
        let first = self.tasks.iter().map(|t| t.start_ns).min().unwrap_or(0);
        let last = self
            .tasks
            .iter()
            .map(|t| t.start_ns.saturating_add(t.wall_ns))
            .max()
            .unwrap_or(0);
        self.exec_ns.saturating_sub(last.saturating_sub(first))
    }
}

/// Time this thread has spent runnable but waiting for a core, ns: the second field of
/// `/proc/thread-self/schedstat` (the kernel's `run_delay`). `None` where it cannot be read.
pub fn thread_run_delay_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Readings taken at a task's start, to profile it at its end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskClock {
    started: Instant,
    cpu: Duration,
    reads: ReadTally,
}

impl TaskClock {
    pub(crate) fn start() -> Self {
        Self {
            started: Instant::now(),
            cpu: thread_cpu_time(),
            reads: ReadTally::of_this_thread(),
        }
    }

    /// The profile of the task that ran since [`Self::start`], `batch_start` being the start of
    /// its batch's execution.
    pub(crate) fn finish(
        &self,
        batch_start: Instant,
        block: u64,
        index: u64,
        worker: u32,
        gas: u64,
    ) -> TaskProfile {
        let wall = self.started.elapsed();
        let cpu = thread_cpu_time().saturating_sub(self.cpu);
        let reads = ReadTally::of_this_thread().since(self.reads);
        TaskProfile {
            block,
            index,
            worker,
            start_ns: nanos(self.started.saturating_duration_since(batch_start)),
            wall_ns: nanos(wall),
            cpu_ns: nanos(cpu),
            reads: reads.reads,
            read_wait_ns: nanos(reads.wait),
            gas,
            raced: reads.raced,
            prefetch_hits: reads.prefetch_hits,
        }
    }
}

/// A duration in whole nanoseconds (saturating).
pub fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(i: u64) -> TaskProfile {
        TaskProfile {
            block: 100 + i / 3,
            index: i % 3,
            worker: (i % 2) as u32,
            start_ns: 1_000 * i,
            wall_ns: 900,
            cpu_ns: 700 + i,
            reads: i,
            read_wait_ns: 50 * i,
            gas: 21_000 * (i % 3),
            raced: 0,
            prefetch_hits: 0,
        }
    }

    /// A profile read from a crafted file may hold any `u64`: the serial part saturates instead
    /// of overflowing.
    #[test]
    fn serial_saturates_on_counts_no_run_records() {
        let mut batch = BatchProfile {
            tasks: vec![task(1), task(2)],
            exec_ns: 10_000,
            ..BatchProfile::default()
        };
        batch.tasks[1].start_ns = u64::MAX;
        assert_eq!(batch.serial_ns(), 0);
    }

    #[test]
    fn threads_sharing_too_few_cores_wait_for_them() {
        // Twice as many spinning threads as cores, 40 ms each: together they wait at least a
        // core's worth of that, which the kernel counts as their run delay.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let waited: u64 = std::thread::scope(|scope| {
            let spinners: Vec<_> = (0..2 * cores)
                .map(|_| {
                    scope.spawn(|| {
                        let start = thread_run_delay_ns().unwrap();
                        let cpu = thread_cpu_time();
                        while thread_cpu_time() - cpu < Duration::from_millis(40) {
                            std::hint::spin_loop();
                        }
                        thread_run_delay_ns().unwrap() - start
                    })
                })
                .collect();
            spinners.into_iter().map(|s| s.join().unwrap()).sum()
        });
        assert!(waited >= 20_000_000, "{cores} cores, {waited} ns waited");
    }

    #[test]
    fn tasks_travel_as_columns_and_come_back_whole() {
        let batch = BatchProfile {
            first_block: 100,
            last_block: 101,
            tasks: (0..6).map(task).collect(),
            prefetch: None,
            exec_ns: 8_000,
            commit_ns: 3,
            worker_run_delay_ns: Some(5),
            process_cpu_ns: Some(9),
        };
        let json = serde_json::to_value(&batch).unwrap();
        assert_eq!(
            json["tasks"]["cpu_ns"],
            serde_json::json!([700, 701, 702, 703, 704, 705])
        );
        let back: BatchProfile = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, batch);
        // Tasks ran from 0 to 5,900 ns of an 8,000 ns batch: 2,100 ns outside them.
        assert_eq!(batch.serial_ns(), 2_100);
        let mut short = json;
        short["tasks"]["gas"] = serde_json::json!([1]);
        let err = serde_json::from_value::<BatchProfile>(short).unwrap_err();
        assert!(err.to_string().contains("block has 6"), "{err}");
    }

    #[test]
    fn the_thread_clock_counts_cpu_and_not_sleep() {
        let start = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_time() - start;
        assert!(slept < Duration::from_millis(10), "{slept:?}");
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spun = thread_cpu_time() - start;
        // A busy loop of 30 ms of wall time on a machine that may be loaded: at least some CPU.
        assert!(spun >= Duration::from_millis(5), "{spun:?}");
    }
}
