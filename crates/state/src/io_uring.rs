//! Whether RocksDB reads a multi-get's blocks through io_uring: a build-time choice.
//!
//! RocksDB's POSIX file system submits a `MultiRead` (the data blocks one `MultiGet` needs from
//! one SST file) as one io_uring batch, so those blocks are read in parallel from one thread, when
//! it is compiled with `ROCKSDB_IOURING_PRESENT`: this crate's `io-uring` feature (the `rocksdb`
//! crate's, which links Debian's liburing and defines RocksDB's `RocksDbIOUringEnable` hook to
//! return true, so there is no switch at run time). Without it, the same `MultiRead` is one
//! `pread` per block. Point reads (`Get`) are one `pread` per block either way, and so are the
//! index and filter partitions a `MultiGet` reads. RocksDB falls back to `pread`s where the kernel
//! refuses io_uring; a run's read system calls per device read show which happened.
//!
//! RocksDB's `async_io` read option does not change `MultiGet` here: its asynchronous path needs
//! C++ coroutines (folly), which the `rocksdb` crate does not build.

/// Whether this build's RocksDB reads multi-gets' blocks through io_uring (the `io-uring` feature).
pub const IO_URING_BUILT: bool = cfg!(feature = "io-uring");
