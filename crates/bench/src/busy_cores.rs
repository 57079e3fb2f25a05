//! Every core kept busy while a run replays, without taking CPU from it: one spinning thread per
//! core at `SCHED_IDLE`, the policy Linux runs only when nothing else is runnable there.
//!
//! Why: on a VM a core with nothing to run halts, and a read that completes on a halted core pays
//! the hypervisor's wake-up, in CPU (the reading thread's) and in wait. A one-worker run idles a
//! core during every on-demand read; many workers on few cores never do. A one-worker run with the
//! cores kept busy measures the second regime with the first's schedule, which is what
//! `bal-replay project --busy-cores` calibrates on (docs/notes/2026-11-25-idle-cores.md).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
};

/// Spinning threads, stopped and joined on drop.
#[derive(Debug)]
pub struct CoreSpinners {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Why the spinners could not start.
#[derive(Debug, thiserror::Error)]
pub enum CoreSpinnersError {
    /// A thread could not be spawned.
    #[error("spawning a core spinner: {0}")]
    Spawn(#[source] std::io::Error),
    /// The kernel refused `SCHED_IDLE`: a spinner at the normal policy would take CPU from the
    /// run, so none is left running.
    #[error("setting SCHED_IDLE on a core spinner: {0}")]
    Policy(#[source] std::io::Error),
}

impl CoreSpinners {
    /// Starts `count` spinners (one per core: [`std::thread::available_parallelism`]), each at
    /// `SCHED_IDLE` before it spins.
    pub fn start(count: usize) -> Result<Self, CoreSpinnersError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut spinners = Self {
            stop: stop.clone(),
            threads: Vec::with_capacity(count),
        };
        for i in 0..count {
            let stop = stop.clone();
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let thread = std::thread::Builder::new()
                .name(format!("core-spinner-{i}"))
                .spawn(move || {
                    let policy = set_idle_policy();
                    let ok = policy.is_ok();
                    let _ = ready_tx.send(policy);
                    while ok && !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .map_err(CoreSpinnersError::Spawn)?;
            spinners.threads.push(thread);
            // On error `spinners` drops here, stopping and joining those already started.
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(CoreSpinnersError::Policy(e)),
                Err(_) => {
                    return Err(CoreSpinnersError::Policy(std::io::Error::other(
                        "the spinner ended before setting its policy",
                    )));
                }
            }
        }
        Ok(spinners)
    }

    /// One per core of this machine.
    pub fn start_per_core() -> Result<Self, CoreSpinnersError> {
        Self::start(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        )
    }

    /// Spinners running.
    pub fn count(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for CoreSpinners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The calling thread's policy set to `SCHED_IDLE` (pid 0: this thread).
fn set_idle_policy() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param for the duration of the call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The calling thread's scheduling policy.
#[cfg(test)]
fn policy_of_this_thread() -> i32 {
    // SAFETY: no pointers; pid 0 is this thread.
    unsafe { libc::sched_getscheduler(0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn process_cpu_s() -> f64 {
        bal_replay_engine::process_cpu_time().as_secs_f64()
    }

    #[test]
    fn spinners_run_at_idle_policy_and_stop_on_drop() {
        // The policy is per thread: a thread that sets it has SCHED_IDLE, others keep theirs.
        let before = policy_of_this_thread();
        let policy = std::thread::spawn(|| {
            set_idle_policy().unwrap();
            policy_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(policy, libc::SCHED_IDLE);
        assert_eq!(policy_of_this_thread(), before);

        // Two spinners burn CPU while they live (on a busy machine they get only what is left,
        // so the bound is loose: some CPU, not a share).
        let cpu = process_cpu_s();
        let spinners = CoreSpinners::start(2).unwrap();
        assert_eq!(spinners.count(), 2);
        std::thread::sleep(Duration::from_millis(300));
        drop(spinners);
        let spun = process_cpu_s() - cpu;
        assert!(spun > 0.01, "spinners used {spun} s of CPU in 0.3 s");

        // Dropped: joined, so the process uses no more CPU while this thread sleeps.
        let cpu = process_cpu_s();
        let t = Instant::now();
        std::thread::sleep(Duration::from_millis(200));
        let after = process_cpu_s() - cpu;
        assert!(
            after < 0.05 * t.elapsed().as_secs_f64() + 0.01,
            "{after} s of CPU after the spinners were dropped"
        );
    }
}
