//! What a run's host did during it, the one way `bench` and `run` measure a run: the block
//! device's and the process's I/O counters ([`device`]), whether its state reads reached the disk
//! or were served from memory ([`residency`]), the CPU and memory it used, and a memory cgroup that
//! keeps a memory-mapped state off the page cache ([`memory_limit`]).

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod device;
pub mod memory_limit;
pub mod residency;

pub use device::{CpuUse, DiskEvidence};
pub use residency::{Residency, ResidencyBasis, ResidencyCounts};

/// Resident set size of this process (`VmRSS` in `/proc/self/status`, Linux), if readable: the one
/// reading of it, for the bench's results and the replay's `bal_replay_resident_memory_bytes`.
pub fn resident_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read() {
        // A test binary with RocksDB linked in holds more than 1 MiB.
        assert!(resident_memory_bytes().unwrap() > 1 << 20);
    }
}
