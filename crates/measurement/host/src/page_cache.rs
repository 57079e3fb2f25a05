//! Cold runs: the kernel's page cache emptied, so the next reads come from the disk.

use crate::HostError;
use std::path::Path;

/// The kernel's control file: writing `3` drops the page cache, dentries and inodes.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Writes dirty pages and drops the kernel's page cache, so the next reads come from the disk.
/// Needs root; says so clearly otherwise.
pub fn drop_page_cache() -> Result<(), HostError> {
    drop_caches_through(Path::new(DROP_CACHES))
}

/// [`drop_page_cache`] through the control file `control`.
fn drop_caches_through(control: &Path) -> Result<(), HostError> {
    // `sync(2)` through the coreutils binary: the pages written are those of every filesystem.
    let synced = std::process::Command::new("sync")
        .status()
        .map_err(HostError::SyncStart)?;
    if !synced.success() {
        return Err(HostError::SyncFailed(synced));
    }
    std::fs::write(control, b"3\n").map_err(|source| HostError::DropCaches {
        path: control.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A control file that cannot be written is an error naming it (the real one is left alone:
    /// dropping the cache of a shared machine would slow every other process on it).
    #[test]
    fn a_control_file_that_cannot_be_written_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let control = dir.path().join("no-such-dir").join("drop_caches");
        match drop_caches_through(&control) {
            Err(HostError::DropCaches { path, source }) => {
                assert_eq!(path, control);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!(
                "expected DropCaches naming {}, got {other:?}",
                control.display()
            ),
        }
        assert!(!dir.path().join("no-such-dir").exists());
    }
}
