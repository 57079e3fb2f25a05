//! The CPUs a thread may run on, and pinning a worker to one.
//!
//! Why: a disk with one completion queue interrupts one core, and a read issued from another is
//! finished there through an inter-processor interrupt; where the scheduler puts a woken worker
//! also decides whether it waits for a core while another idles. Pinning workers in a given order
//! (`ReplayOptions::pin_workers`) takes both out of the scheduler's hands, for measurement.

/// The CPUs the calling thread may run on (its affinity mask), ascending; `None` where the kernel
/// does not say.
pub fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: `set` is a plain bit set the kernel fills; its size is passed with it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
                .collect(),
        )
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::other(format!(
            "CPU {cpu} is past the largest CPU set ({})",
            libc::CPU_SETSIZE
        )));
    }
    // SAFETY: `set` is a plain bit set, filled here and passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU the calling thread runs on now; `None` where the kernel does not say.
    fn current_cpu() -> Option<usize> {
        // SAFETY: no arguments; returns -1 on failure.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    #[test]
    fn a_pinned_thread_runs_on_its_cpu() {
        let allowed = allowed_cpus().unwrap();
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
            assert_eq!(current_cpu(), Some(last));
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(1 << 20).is_err());
    }
}
