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
