//! [`HostError`]: what the host refused.

/// Why the host could not do what a measurement asked of it.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// `sync` could not be run, so dirty pages would have stayed in the cache.
    #[error("cannot drop the page cache: running sync: {0}")]
    SyncStart(#[source] std::io::Error),
    /// `sync` ran and failed.
    #[error("cannot drop the page cache: sync failed ({0})")]
    SyncFailed(std::process::ExitStatus),
    /// The kernel's control file could not be written (it needs root).
    #[error(
        "cannot drop the page cache: writing {}: {source} (dropping the page cache needs root; run without --drop-caches or as root)",
        path.display()
    )]
    DropCaches {
        /// The control file written.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}
