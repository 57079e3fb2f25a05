//! A memory cgroup around this process: the bound on the page cache a memory-mapped store (reth's
//! MDBX) can be served from.
//!
//! RocksDB reads around the page cache with O_DIRECT and caches only in its block cache, whose
//! size we set. MDBX is a memory map: every page it reads is a page-cache page, and the kernel
//! keeps as many as memory allows. A cgroup (v1 memory controller) with `memory.limit_in_bytes`
//! charges each page this process faults in, file pages included, and reclaims them once the
//! charge reaches the limit, so no more of the state than the limit stays in memory.
//!
//! The limit's terms, which the docs and tables state:
//! - only memory charged after the process joined counts (the kernel does not move earlier
//!   charges): new heap and every page cache page read from then on;
//! - a page already cached and charged to another cgroup is served from memory without a charge,
//!   so a disk-resident run drops the page cache first;
//! - heap counts against the same limit: a limit smaller than the run's own growth makes the
//!   kernel reclaim file pages first and then kill the process (it is not swapped).
//!
//! The cgroup is a fresh directory this process creates under its own cgroup; dropping the
//! [`MemoryLimit`] moves the process back and removes that directory, and nothing else.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

/// Where the v1 memory controller is mounted on Debian and most distributions.
const V1_MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";

/// Why the process could not be put in a memory-limited cgroup.
#[derive(Debug, thiserror::Error)]
pub enum MemoryLimitError {
    /// No v1 memory controller (cgroup v2 only, or no cgroups).
    #[error(
        "no cgroup v1 memory controller at {V1_MEMORY_ROOT}: on a cgroup v2 system run the whole \
         process under a limit instead (e.g. `systemd-run --scope -p MemoryMax=256M ...`)"
    )]
    NoController,
    /// This process's memory cgroup is not in `/proc/self/cgroup`.
    #[error("/proc/self/cgroup names no memory cgroup for this process")]
    NoOwnCgroup,
    /// A cgroup file could not be written or read (not root, or a read-only cgroupfs).
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The cgroup file or directory.
        path: PathBuf,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
    /// A limit was asked for twice in one process.
    #[error("this process already runs under a memory limit of {0} bytes")]
    AlreadyLimited(u64),
}

/// This process inside a memory cgroup of its own, until dropped.
#[derive(Debug)]
pub struct MemoryLimit {
    /// The cgroup created for this process.
    dir: PathBuf,
    /// The cgroup the process was in, to go back to.
    parent: PathBuf,
    limit_bytes: u64,
}

/// The limit in force, for the evidence of every run ([`MemoryLimit::current_usage`]).
static IN_FORCE: OnceLock<(PathBuf, u64)> = OnceLock::new();

/// What the memory cgroup counted over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemoryUsage {
    /// The limit.
    pub limit_bytes: u64,
    /// The most memory charged at once since the run started (heap and page cache).
    pub max_usage_bytes: u64,
    /// Page cache charged when the run ended.
    pub page_cache_bytes: u64,
    /// Times the charge hit the limit and the kernel had to reclaim.
    pub limit_hits: u64,
}

impl MemoryLimit {
    /// Creates a cgroup under this process's own memory cgroup, limits it to `limit_bytes` and
    /// moves this process (all its threads) into it.
    pub fn enter(limit_bytes: u64) -> Result<Self, MemoryLimitError> {
        if let Some((_, limit)) = IN_FORCE.get() {
            return Err(MemoryLimitError::AlreadyLimited(*limit));
        }
        let root = Path::new(V1_MEMORY_ROOT);
        if !root.join("memory.limit_in_bytes").exists() {
            return Err(MemoryLimitError::NoController);
        }
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|text| own_memory_cgroup(&text))
            .ok_or(MemoryLimitError::NoOwnCgroup)?;
        let parent = root.join(own.trim_start_matches('/'));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = parent.join(format!("bal-replay-{}-{nanos}", std::process::id()));
        // `create_dir`, never `create_dir_all`: the directory must be new, so it is ours to remove.
        std::fs::create_dir(&dir).map_err(|source| MemoryLimitError::Io {
            action: "creating cgroup",
            path: dir.clone(),
            source,
        })?;
        let limit = Self {
            dir,
            parent,
            limit_bytes,
        };
        limit.write("memory.limit_in_bytes", &limit_bytes.to_string())?;
        // Moving the process (cgroup.procs) moves every thread; RocksDB's and MDBX's included.
        limit.write("cgroup.procs", &std::process::id().to_string())?;
        let _ = IN_FORCE.set((limit.dir.clone(), limit_bytes));
        tracing::info!(cgroup = %limit.dir.display(), limit_bytes, "running in a memory cgroup");
        Ok(limit)
    }

    /// The limit.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    fn write(&self, file: &str, value: &str) -> Result<(), MemoryLimitError> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|source| MemoryLimitError::Io {
            action: "writing",
            path,
            source,
        })
    }

    /// Restarts the peak count of the limit in force, if any: called when a run starts.
    pub fn reset_peak() {
        if let Some((dir, _)) = IN_FORCE.get() {
            let _ = std::fs::write(dir.join("memory.max_usage_in_bytes"), "0");
            let _ = std::fs::write(dir.join("memory.failcnt"), "0");
        }
    }

    /// What the limit in force counted since [`MemoryLimit::reset_peak`]; `None` without one.
    pub fn current_usage() -> Option<MemoryUsage> {
        let (dir, limit) = IN_FORCE.get()?;
        let read = |file: &str| -> Option<String> { std::fs::read_to_string(dir.join(file)).ok() };
        let number = |file: &str| read(file).and_then(|s| s.trim().parse::<u64>().ok());
        Some(MemoryUsage {
            limit_bytes: *limit,
            max_usage_bytes: number("memory.max_usage_in_bytes")?,
            page_cache_bytes: read("memory.stat").and_then(|s| stat_value(&s, "cache"))?,
            limit_hits: number("memory.failcnt")?,
        })
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        // Back to the cgroup the process came from, then remove the (now empty) one we made.
        // The page cache it still holds is moved to the parent by the kernel on removal.
        let back = std::fs::write(
            self.parent.join("cgroup.procs"),
            std::process::id().to_string(),
        );
        let removed = back.and_then(|()| std::fs::remove_dir(&self.dir));
        if let Err(e) = removed {
            tracing::warn!(cgroup = %self.dir.display(), "leaving the memory cgroup: {e}");
        }
    }
}

/// The memory controller's path in `/proc/self/cgroup` (`N:memory:/path` or `N:cpu,memory:/path`).
fn own_memory_cgroup(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    })
}

/// A `name value` line of `memory.stat`.
fn stat_value(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_memory_cgroup_and_the_page_cache() {
        let cgroup = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            own_memory_cgroup(cgroup).as_deref(),
            Some("/process_api/abc")
        );
        assert_eq!(
            own_memory_cgroup("3:cpu,memory:/x\n").as_deref(),
            Some("/x")
        );
        assert_eq!(own_memory_cgroup("0::/user.slice\n"), None);
        let stat = "cache 1048576\nrss 4096\nmapped_file 8192\n";
        assert_eq!(stat_value(stat, "cache"), Some(1 << 20));
        assert_eq!(stat_value(stat, "rss"), Some(4096));
        assert_eq!(stat_value(stat, "swap"), None);
    }
}
