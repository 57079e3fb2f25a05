//! The kernel's CPU-time clocks, of this thread and of the whole process.

use std::time::Duration;

/// CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`); zero where the clock cannot be read.
pub fn thread_cpu_time() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time this process has used (`CLOCK_PROCESS_CPUTIME_ID`); zero where it cannot be read.
pub fn process_cpu_time() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The reading of CPU-time clock `clock`; zero where it cannot be read.
fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` to the pointer it is given, a valid local.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// What this process has used so far, over all its threads, those that have ended included
/// (`getrusage(RUSAGE_SELF)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceUse {
    /// CPU time in user mode.
    pub user: Duration,
    /// CPU time in the kernel on the process's behalf (system calls, page faults).
    pub system: Duration,
    /// Times a thread gave up its core to wait (a read, a lock, a condition): it slept.
    pub voluntary_switches: u64,
    /// Times a thread was taken off its core while it could run: it waited for a core.
    pub involuntary_switches: u64,
}

impl ResourceUse {
    /// The use from `earlier` to `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

/// This process's [`ResourceUse`] so far; `None` where the kernel does not tell.
pub fn process_resource_use() -> Option<ResourceUse> {
    resource_use(libc::RUSAGE_SELF)
}

/// The calling thread's [`ResourceUse`] so far; `None` where the kernel does not tell.
pub fn thread_resource_use() -> Option<ResourceUse> {
    resource_use(libc::RUSAGE_THREAD)
}

fn resource_use(who: libc::c_int) -> Option<ResourceUse> {
    // SAFETY: `rusage` is plain data, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `getrusage` writes one `rusage` to the pointer it is given, a valid local.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return None;
    }
    let time = |t: libc::timeval| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_usec).unwrap_or(0).min(999_999) * 1000,
        )
    };
    Some(ResourceUse {
        user: time(usage.ru_utime),
        system: time(usage.ru_stime),
        voluntary_switches: u64::try_from(usage.ru_nvcsw).unwrap_or(0),
        involuntary_switches: u64::try_from(usage.ru_nivcsw).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that spins, then sleeps, and ends: its CPU and its sleeps are in the process's
    /// use after it has ended.
    #[test]
    fn resource_use_counts_ended_threads() {
        let before = process_resource_use().unwrap();
        std::thread::spawn(|| {
            let start = thread_cpu_time();
            while thread_cpu_time() - start < Duration::from_millis(50) {}
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .join()
        .unwrap();
        let used = process_resource_use().unwrap().since(&before);
        assert!(
            used.user + used.system >= Duration::from_millis(45),
            "{used:?}"
        );
        assert!(used.voluntary_switches >= 5, "{used:?}");
    }

    /// A thread's own use counts its sleeps and its CPU, not another thread's.
    #[test]
    fn thread_resource_use_is_the_threads_own() {
        let before = thread_resource_use().unwrap();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let other = std::thread::spawn(|| {
            let start = thread_cpu_time();
            while thread_cpu_time() - start < Duration::from_millis(50) {}
        });
        other.join().unwrap();
        let used = thread_resource_use().unwrap().since(&before);
        assert!(used.voluntary_switches >= 3, "{used:?}");
        assert!(
            used.user + used.system < Duration::from_millis(40),
            "{used:?}"
        );
    }
}
