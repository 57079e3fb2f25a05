//! Threads kept for a whole replay: the readers that prefetch (or verify) a batch's keys. Also
//! the builder of a batch's workers' threads, which are not kept ([`EnginePools`] says why).
//!
//! Why not threads per batch: starting and joining a thread costs tens of microseconds on a
//! virtual machine. A prefetch started 16-24 reader threads per batch, which at batch 1 made batched I/O's
//! prefetch of the real mainnet fixture blocks take 0.077 s of wall time for 0.064 s of readers'
//! CPU on 2 cores (with 2 readers: 0.047 s). The readers start once; a batch hands each one job
//! and waits for all of them.

use crate::EngineError;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::{
    num::NonZeroUsize,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::Mutex,
};

/// A fixed set of threads that run jobs handed to them together ([`ThreadGroup::run_each`]).
pub(crate) struct ThreadGroup {
    pool: ThreadPool,
}

impl std::fmt::Debug for ThreadGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadGroup")
            .field("threads", &self.threads())
            .finish()
    }
}

impl ThreadGroup {
    /// `threads` threads named `name-<i>`.
    pub(crate) fn new(threads: NonZeroUsize, name: &'static str) -> Result<Self, EngineError> {
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads.get())
            .thread_name(move |i| format!("{name}-{i}"))
            .build()
            .map_err(|e| EngineError::ThreadStart(format!("{name}: {e}")))?;
        Ok(Self { pool })
    }

    /// How many threads it has.
    pub(crate) fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Runs every job at once and returns their results in the jobs' order once all have ended:
    /// job `i` runs on thread `i % threads`, so as many jobs as threads run one a thread, each
    /// thread woken at once (rayon's broadcast wakes every thread; a spawned job waits for an idle
    /// thread to find it: when this group ran a batch's workers, the second one started 0.7-0.9 ms
    /// after the first that way, 0.3-0.4 ms with the broadcast). A job that panicked is [`EngineError::WorkerPanic`] named `what`, after
    /// every other job has ended.
    pub(crate) fn run_each<T, F>(&self, jobs: Vec<F>, what: &str) -> Result<Vec<T>, EngineError>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let threads = self.threads();
        let jobs: Vec<Mutex<Option<F>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
        let results: Vec<Mutex<Option<std::thread::Result<T>>>> =
            jobs.iter().map(|_| Mutex::new(None)).collect();
        self.pool.broadcast(|ctx| {
            for i in (ctx.index()..jobs.len()).step_by(threads) {
                let job = jobs[i].lock().ok().and_then(|mut job| job.take());
                if let Some(job) = job {
                    let result = catch_unwind(AssertUnwindSafe(job));
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(result);
                    }
                }
            }
        });
        results
            .into_iter()
            .map(|r| match r.into_inner().ok().flatten() {
                Some(Ok(value)) => Ok(value),
                _ => Err(EngineError::WorkerPanic(what.into())),
            })
            .collect()
    }
}

/// The prefetch readers of one replay, started once. Its workers are not pooled: started per
/// batch, the system places each new thread on an idle core at once, where a woken pool thread
/// started its batch 0.3-0.9 ms after the first on a 2-core machine, which cost 2-worker runs over
/// the real fixture blocks up to 16% of their throughput. A reader starting late costs less: a
/// prefetch is many reads, and at a batch of one block starting 16-24 threads cost more than that.
#[derive(Debug)]
pub(crate) struct EnginePools {
    /// Read a batch's keys: twice `--io-threads` threads, which take a prefetch's chunks in turn
    /// (`--io-threads` was the readers of each of accounts and slots, both at once, before the
    /// readers shared one queue; the flag keeps its meaning, so a run's reads in flight do too).
    pub(crate) readers: ThreadGroup,
}

impl EnginePools {
    /// Threads for `io_threads` prefetch readers.
    pub(crate) fn new(io_threads: NonZeroUsize) -> Result<Self, EngineError> {
        const TWO: NonZeroUsize = NonZeroUsize::new(2).expect("2 is not 0");
        let readers = io_threads.saturating_mul(TWO);
        Ok(Self {
            readers: ThreadGroup::new(readers, "bal-reader")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn jobs_run_at_once_on_the_same_threads_every_time() {
        let group = ThreadGroup::new(NonZeroUsize::new(4).unwrap(), "test").unwrap();
        let seen = Mutex::new(HashSet::new());
        for round in 0..3 {
            // Four jobs that each wait for all four to have started: they only end if they run
            // at once.
            let started = std::sync::Barrier::new(4);
            let jobs: Vec<_> = (0..4)
                .map(|i| {
                    let (started, seen) = (&started, &seen);
                    move || {
                        started.wait();
                        seen.lock()
                            .unwrap()
                            .insert(std::thread::current().name().map(str::to_owned));
                        i * 10 + round
                    }
                })
                .collect();
            let out = group.run_each(jobs, "test job").unwrap();
            assert_eq!(out, vec![round, 10 + round, 20 + round, 30 + round]);
        }
        // The same four threads served every round.
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(
            seen.iter()
                .all(|n| n.as_deref().is_some_and(|n| n.starts_with("test-")))
        );
    }

    #[test]
    fn a_panicking_job_is_an_error_after_the_others_end() {
        let group = ThreadGroup::new(NonZeroUsize::new(2).unwrap(), "test").unwrap();
        let ended = std::sync::atomic::AtomicUsize::new(0);
        let jobs: Vec<Box<dyn FnOnce() -> u8 + Send + '_>> = vec![
            Box::new(|| panic!("reader failed")),
            Box::new(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                ended.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                1
            }),
        ];
        match group.run_each(jobs, "prefetch reader") {
            Err(EngineError::WorkerPanic(what)) => assert_eq!(what, "prefetch reader"),
            other => panic!("expected a worker panic, got {other:?}"),
        }
        assert_eq!(ended.load(std::sync::atomic::Ordering::SeqCst), 1);
        // The group still works after a panic.
        assert_eq!(group.run_each(vec![|| 7u8], "again").unwrap(), vec![7]);
    }
}
