//! One writer per dump directory, enforced by the operating system.
//!
//! Two writers appending to one dump (two nodes on one directory, or the ExEx and `reth-bal dump
//! --out`) would interleave frames and overwrite each other's manifests. So every
//! [`DumpWriter`](crate::DumpWriter) holds an advisory lock (`flock` on Unix, `LockFileEx` on
//! Windows, through [`File::try_lock`]) on [`LOCK_FILE`] for as long as it lives. The kernel
//! releases it when the writer's file is closed, including when the process dies, so a crash
//! never leaves a stale lock behind. The lock is taken per open file, not per process: a second
//! writer in the same process is refused too.
//!
//! The file's contents are only a hint for the error message (the holder's pid); the lock is
//! what counts. The file is never deleted: removing it while another process has it open would let
//! a third writer lock a new file of the same name while the second still holds the old one.

use std::{
    fs::{File, OpenOptions, TryLockError},
    io::{Read, Write},
    path::Path,
};

use crate::{DumpError, owned::open_for_writing};

/// Name of the lock file inside a dump directory.
pub const LOCK_FILE: &str = "writer.lock";

/// The held lock on a dump directory. Released when dropped.
#[derive(Debug)]
pub(crate) struct WriterLock {
    /// Kept open: closing it releases the lock.
    _file: File,
}

impl WriterLock {
    /// Takes the lock on `dir` (which must exist) without waiting.
    ///
    /// Fails with [`DumpError::Locked`] if another writer holds it, and with
    /// [`DumpError::UnsafeFile`] if the lock file is a link or another user's.
    pub(crate) fn acquire(dir: &Path) -> Result<Self, DumpError> {
        let path = dir.join(LOCK_FILE);
        // Never through a link planted under this name: the pid would be written to its target.
        let mut file = open_for_writing(
            &path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(DumpError::Locked {
                    path: dir.to_path_buf(),
                    holder: read_holder(&file),
                });
            }
            Err(TryLockError::Error(source)) => return Err(DumpError::io(&path, source)),
        }
        // The pid only names the holder in another writer's error. Failing to record it (a full
        // disk) must not stop a writer that holds the lock, least of all one resuming to free space.
        if let Err(error) = record_holder(&mut file) {
            tracing::warn!(path = %path.display(), %error, "could not record this process in the dump's lock file");
        }
        Ok(Self { _file: file })
    }
}

fn record_holder(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    let mut line = std::process::id().to_string();
    line.push('\n');
    // `set_len` leaves the cursor where it was; a fresh handle starts at 0, so this writes at 0.
    file.write_all(line.as_bytes())
}

/// The pid the holder recorded, if it has yet (it writes it just after locking).
fn read_holder(file: &File) -> Option<u32> {
    let mut text = String::new();
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}
