//! Where a run's I/O completions arrived: the kernel's interrupt counters per CPU
//! (`/proc/interrupts`), and the CPUs this process may run on.
//!
//! Why: a disk with one completion queue interrupts one core (this VM's virtio disk: every
//! completion on CPU 1). A read issued from another core is completed there by an
//! inter-processor "function call" interrupt (`CAL`), and on a VM one that wakes a halted core
//! pays the hypervisor's wake-up. The counters say where a run's completions went: device
//! interrupts on the CPUs it ran on, and the function-call IPIs those CPUs took. A run pinned
//! away from the interrupted core (`taskset`) is what `bal-replay project
//! --remote-completions` calibrates on.

pub use bal_replay_engine::cpus::allowed_cpus;

/// Logical CPUs online; `None` where the kernel does not say.
pub fn online_cpus() -> Option<usize> {
    // SAFETY: sysconf reads a value; no memory is passed.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// The CPUs a run was pinned to, where narrower than the machine's online CPUs: `None` for a run
/// free to use every CPU (or where the kernel does not say).
pub fn pinned_cpus() -> Option<Vec<usize>> {
    let allowed = allowed_cpus()?;
    (allowed.len() < online_cpus()?).then_some(allowed)
}

/// Per-CPU interrupt counts at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterruptSample {
    /// Device interrupts (the numbered lines: disks, network), per CPU.
    device: Vec<u64>,
    /// Function-call IPIs (`CAL`), per CPU.
    call: Vec<u64>,
    /// Rescheduling IPIs (`RES`), per CPU.
    resched: Vec<u64>,
    /// The CPUs this process may run on.
    allowed: Vec<usize>,
}

/// Interrupts during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InterruptCounts {
    /// Device interrupts on every CPU (every device's: during a disk-resident run, mostly the
    /// disk's completions).
    pub device: u64,
    /// Of them, those taken by the CPUs the run may run on.
    pub device_on_run_cpus: u64,
    /// Function-call IPIs the run's CPUs took (a completion handed to the core that issued its
    /// read is one).
    pub call_ipis_on_run_cpus: u64,
    /// Rescheduling IPIs the run's CPUs took (a thread woken from another core).
    pub resched_ipis_on_run_cpus: u64,
}

impl InterruptSample {
    /// Samples `/proc/interrupts`; `None` where it cannot be read or parsed.
    pub fn take() -> Option<Self> {
        let text = std::fs::read_to_string("/proc/interrupts").ok()?;
        let mut sample = parse_interrupts(&text)?;
        sample.allowed = allowed_cpus().unwrap_or_else(|| (0..sample.device.len()).collect());
        Some(sample)
    }

    /// The interrupts from `earlier` to `self`.
    pub fn since(&self, earlier: &Self) -> InterruptCounts {
        let delta = |now: &[u64], then: &[u64], cpu: usize| {
            now.get(cpu)
                .copied()
                .unwrap_or(0)
                .saturating_sub(then.get(cpu).copied().unwrap_or(0))
        };
        let on_run = |now: &[u64], then: &[u64]| -> u64 {
            self.allowed.iter().map(|&cpu| delta(now, then, cpu)).sum()
        };
        InterruptCounts {
            device: (0..self.device.len())
                .map(|cpu| delta(&self.device, &earlier.device, cpu))
                .sum(),
            device_on_run_cpus: on_run(&self.device, &earlier.device),
            call_ipis_on_run_cpus: on_run(&self.call, &earlier.call),
            resched_ipis_on_run_cpus: on_run(&self.resched, &earlier.resched),
        }
    }
}

/// `/proc/interrupts`: a header naming the CPUs, then one line per source, its per-CPU counts
/// after the label. Numbered labels are devices; `CAL` and `RES` are IPIs.
fn parse_interrupts(text: &str) -> Option<InterruptSample> {
    let mut lines = text.lines();
    let cpus = lines
        .next()?
        .split_whitespace()
        .filter(|w| w.starts_with("CPU"))
        .count();
    if cpus == 0 {
        return None;
    }
    let mut sample = InterruptSample {
        device: vec![0; cpus],
        call: vec![0; cpus],
        resched: vec![0; cpus],
        allowed: Vec::new(),
    };
    for line in lines {
        let mut words = line.split_whitespace();
        let Some(label) = words.next().and_then(|l| l.strip_suffix(':')) else {
            continue;
        };
        let into = if label.bytes().all(|b| b.is_ascii_digit()) {
            &mut sample.device
        } else if label == "CAL" {
            &mut sample.call
        } else if label == "RES" {
            &mut sample.resched
        } else {
            continue;
        };
        for (cpu, count) in words.take(cpus).enumerate() {
            // A source with fewer counts than CPUs (`ERR:`, `MIS:`) ends at its first word.
            let Ok(count) = count.parse::<u64>() else {
                break;
            };
            into[cpu] += count;
        }
    }
    Some(sample)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "           CPU0       CPU1       \n  \
         1:          9          0   IO-APIC   1-edge      i8042\n \
        36:          0       1000   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
        NMI:          0          0   Non-maskable interrupts\n\
        RES:         10         20   Rescheduling interrupts\n\
        CAL:        100          5   Function call interrupts\n\
        ERR:          0\n";

    const AFTER: &str = "           CPU0       CPU1       \n  \
         1:          9          1   IO-APIC   1-edge      i8042\n \
        36:          0       1500   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
        NMI:          0          0   Non-maskable interrupts\n\
        RES:         13         20   Rescheduling interrupts\n\
        CAL:        590          6   Function call interrupts\n\
        ERR:          0\n";

    #[test]
    fn counts_device_interrupts_and_ipis_on_the_runs_cpus() {
        let mut before = parse_interrupts(BEFORE).unwrap();
        let mut after = parse_interrupts(AFTER).unwrap();
        // Pinned to CPU 0: the disk's 500 completions all arrived on CPU 1, and CPU 0 took
        // 490 function-call IPIs and 3 rescheduling ones.
        before.allowed = vec![0];
        after.allowed = vec![0];
        assert_eq!(
            after.since(&before),
            InterruptCounts {
                device: 501,
                device_on_run_cpus: 0,
                call_ipis_on_run_cpus: 490,
                resched_ipis_on_run_cpus: 3,
            }
        );
        // Free to run on both.
        after.allowed = vec![0, 1];
        let both = after.since(&before);
        assert_eq!(
            (both.device_on_run_cpus, both.call_ipis_on_run_cpus),
            (501, 491)
        );
    }

    #[test]
    fn this_machine_has_cpus_and_counters() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        assert!(allowed.len() <= online_cpus().unwrap());
        assert!(InterruptSample::take().is_some());
        assert_eq!(parse_interrupts("no header\n"), None);
    }
}
