//! How RocksDB reads a multi-get's data blocks here: through io_uring, or one `pread` each.
//!
//! RocksDB is built with io_uring (the `rocksdb` crate's `io-uring` feature, which links Debian's
//! liburing and defines RocksDB's `RocksDbIOUringEnable` hook to return true), so its POSIX file
//! system submits a `MultiRead` (the data blocks one `MultiGet` needs from one SST file) as one
//! io_uring batch, read in parallel from one thread. Each reading thread sets up its own ring
//! (`io_uring_queue_init` with 256 entries); where the kernel refuses (a seccomp profile, a
//! container runtime, `kernel.io_uring_disabled`, a kernel before 5.1), RocksDB falls back to one
//! `pread` per block, silently. [`read_path`] asks the kernel the same question once, so a run
//! can say which path its reads took. Point reads (`Get`) are one `pread` per block either way,
//! and so are the index and filter partitions a `MultiGet` reads.
//!
//! RocksDB's `async_io` read option does not change `MultiGet` here: its asynchronous path needs
//! C++ coroutines (folly), which the `rocksdb` crate does not build.

use std::{fmt, sync::OnceLock};

/// The queue depth RocksDB asks of each thread's ring (`kIoUringDepth` in its POSIX env).
const ROCKSDB_RING_ENTRIES: u32 = 256;

/// How this process's RocksDB multi-gets read their data blocks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "path")]
pub enum ReadPath {
    /// One io_uring batch per multi-get and file.
    IoUring,
    /// One `pread` per block: the kernel refused io_uring.
    Pread {
        /// Why, as the kernel said it (`io_uring_setup`'s error).
        reason: String,
    },
}

impl ReadPath {
    /// Whether multi-gets read through io_uring.
    pub const fn is_io_uring(&self) -> bool {
        matches!(self, Self::IoUring)
    }

    /// Short name for tables and file names: `io_uring` or `pread`.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::IoUring => "io_uring",
            Self::Pread { .. } => "pread",
        }
    }
}

impl fmt::Display for ReadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IoUring => f.write_str("multi-gets read through io_uring"),
            Self::Pread { reason } => write!(
                f,
                "multi-gets read one pread per block (the kernel refused io_uring: {reason})"
            ),
        }
    }
}

/// The read path of this process, asked of the kernel once (and logged then): RocksDB's reading
/// threads get the same answer, as nothing here changes between them.
pub fn read_path() -> &'static ReadPath {
    static PATH: OnceLock<ReadPath> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = probe_read_path();
        match &path {
            ReadPath::IoUring => tracing::info!("RocksDB: {path}"),
            ReadPath::Pread { .. } => tracing::warn!("RocksDB: {path}"),
        }
        path
    })
}

/// Sets up and closes a ring as RocksDB would, without caching the answer.
pub fn probe_read_path() -> ReadPath {
    // `struct io_uring_params` is 120 bytes; all zero asks for the defaults, as liburing does.
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup(2) reads and writes only the 120-byte params block it is given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            ROCKSDB_RING_ENTRIES,
            params.as_mut_ptr(),
        )
    };
    if fd < 0 {
        let error = std::io::Error::last_os_error();
        return ReadPath::Pread {
            reason: format!("io_uring_setup: {error}"),
        };
    }
    // SAFETY: `fd` is the ring's descriptor, ours alone, closed once.
    unsafe { libc::close(fd as libc::c_int) };
    ReadPath::IoUring
}
