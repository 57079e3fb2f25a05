//! Per-task profiles of a replay: what each task cost in CPU and in waiting for reads, which worker
//! ran it and when, and each batch's prefetch and commit. The input of the scheduler and disk model
//! (`bal-replay project`), which replays the engine's schedule for other worker, core and disk
//! counts.
//!
//! Recording is opt-in ([`crate::ReplayOptions::profile`]): it reads the thread's CPU clock twice
//! per task (a system call each, about a microsecond together), which an unprofiled run does not
//! pay. On-demand reads are tallied by the cache on every run ([`ReadTally`]).

use bal_replay_cache::ReadTally;
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
    /// Every task, in the order workers took them (the engine's task order).
    pub tasks: Vec<TaskProfile>,
    /// The prefetch before or beside execution, if the design has one.
    pub prefetch: Option<PrefetchProfile>,
    /// Execution, from the first task's start to the last one's end, ns.
    pub exec_ns: u64,
    /// The commit, ns.
    pub commit_ns: u64,
}

/// CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`); zero where the clock cannot be read.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` to the pointer it is given, a valid local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
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
