//! Repeatable runs: every run starts from the same pre-state, with a cold page cache on request.

use crate::EngineError;
use std::path::{Path, PathBuf};

/// Makes `dst` a copy of the RocksDB directory `src` that costs no data copy: table files (immutable
/// once written) are hard links, the small mutable files (CURRENT, MANIFEST, OPTIONS, logs) are copied.
/// This is what a RocksDB checkpoint does; doing it on a closed directory lets every run of a bench
/// start from the same pristine state without rewriting a value.
pub fn clone_db_dir(src: &Path, dst: &Path) -> Result<(), EngineError> {
    let err = |path: &Path, source| EngineError::Rewind {
        path: path.display().to_string(),
        source,
    };
    if dst.exists() {
        std::fs::remove_dir_all(dst).map_err(|e| err(dst, e))?;
    }
    std::fs::create_dir_all(dst).map_err(|e| err(dst, e))?;
    for entry in std::fs::read_dir(src).map_err(|e| err(src, e))? {
        let entry = entry.map_err(|e| err(src, e))?;
        let from = entry.path();
        let to: PathBuf = dst.join(entry.file_name());
        let is_table = from.extension().is_some_and(|e| e == "sst" || e == "blob");
        if is_table {
            std::fs::hard_link(&from, &to).map_err(|e| err(&from, e))?;
        } else if from.is_file() {
            std::fs::copy(&from, &to).map_err(|e| err(&from, e))?;
        }
    }
    Ok(())
}

/// Writes dirty pages and drops the kernel's page cache, so the next reads come from the disk.
/// Needs root; says so clearly otherwise.
pub fn drop_page_cache() -> Result<(), EngineError> {
    // SAFETY-free: `sync(2)` through the coreutils binary keeps this crate free of libc.
    let synced = std::process::Command::new("sync")
        .status()
        .map_err(|e| EngineError::DropCaches(format!("running sync: {e}")))?;
    if !synced.success() {
        return Err(EngineError::DropCaches("sync failed".into()));
    }
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n").map_err(|e| {
        EngineError::DropCaches(format!(
            "writing /proc/sys/vm/drop_caches: {e} (dropping the page cache needs root; run without --drop-caches or as root)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_links_tables_and_copies_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("000001.sst"), b"table").unwrap();
        std::fs::write(src.join("CURRENT"), b"MANIFEST-1").unwrap();
        let dst = dir.path().join("dst");
        clone_db_dir(&src, &dst).unwrap();
        std::fs::write(dst.join("CURRENT"), b"changed").unwrap();
        assert_eq!(std::fs::read(src.join("CURRENT")).unwrap(), b"MANIFEST-1");
        assert_eq!(std::fs::read(dst.join("000001.sst")).unwrap(), b"table");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            std::fs::metadata(src.join("000001.sst")).unwrap().nlink(),
            2
        );
    }
}
