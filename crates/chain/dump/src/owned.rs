//! Where a writer may write: only into a directory of its own user, and never through a link.
//!
//! A dump directory can sit where other users can create names (a shared `/tmp`, a world-writable
//! data directory). A symbolic or hard link planted there as `writer.lock` or
//! `manifest.json.tmp` would turn the writer's pid or manifest into a write to the link's target,
//! with the writer's rights (root's, for a node). So every file the writer writes is opened without
//! following a symbolic link (`O_NOFOLLOW`) and checked once open: a regular file with one name,
//! owned by the writer's user. And the directory itself must belong to that user: in another
//! user's directory, that user can swap any name for a link between the check and the write.

use std::{
    fs::{self, File, OpenOptions},
    io,
    path::Path,
};

use crate::DumpError;

/// The user this process writes as (its effective uid).
#[cfg(unix)]
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// Fails with [`DumpError::ForeignDirectory`] unless `dir` (and, if `dir` is a symbolic link, the
/// link itself) belongs to the user this process writes as.
#[cfg(unix)]
pub(crate) fn check_dir_owner(dir: &Path) -> Result<(), DumpError> {
    use std::os::unix::fs::MetadataExt;
    let uid = effective_uid();
    let link = fs::symlink_metadata(dir).map_err(|source| DumpError::io(dir, source))?;
    let target = if link.file_type().is_symlink() {
        refuse_foreign(dir, link.uid(), uid)?;
        fs::metadata(dir).map_err(|source| DumpError::io(dir, source))?
    } else {
        link
    };
    refuse_foreign(dir, target.uid(), uid)
}

#[cfg(unix)]
fn refuse_foreign(dir: &Path, owner: u32, uid: u32) -> Result<(), DumpError> {
    if owner == uid {
        return Ok(());
    }
    Err(DumpError::ForeignDirectory {
        path: dir.to_path_buf(),
        owner,
        uid,
    })
}

/// Ownership is a Unix notion here; elsewhere every directory is taken as the user's own.
#[cfg(not(unix))]
pub(crate) fn check_dir_owner(_dir: &Path) -> Result<(), DumpError> {
    Ok(())
}

/// Opens `path` for writing with `options`, never through a symbolic link, and fails with
/// [`DumpError::UnsafeFile`] unless what it opened is a regular file with no other name, owned by
/// this process's user.
pub(crate) fn open_for_writing(path: &Path, options: &mut OpenOptions) -> Result<File, DumpError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(source) if is_symlink(path) => {
            tracing::debug!(path = %path.display(), %source, "refused to open a symbolic link");
            return Err(unsafe_file(path, "it is a symbolic link".to_owned()));
        }
        Err(source) => return Err(DumpError::io(path, source)),
    };
    let metadata = file
        .metadata()
        .map_err(|source| DumpError::io(path, source))?;
    if let Some(reason) = unsafe_reason(&metadata) {
        return Err(unsafe_file(path, reason));
    }
    Ok(file)
}

/// Why a file the writer is about to write is not its own to write, if it is not.
pub(crate) fn unsafe_reason(metadata: &fs::Metadata) -> Option<String> {
    if metadata.file_type().is_symlink() {
        return Some("it is a symbolic link".to_owned());
    }
    if !metadata.is_file() {
        return Some("it is not a regular file".to_owned());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if metadata.nlink() > 1 {
            return Some(format!(
                "it has {} hard links, so it is also a file elsewhere",
                metadata.nlink()
            ));
        }
        let uid = effective_uid();
        if metadata.uid() != uid {
            return Some(format!(
                "it is owned by uid {}, not by this process's uid {uid}",
                metadata.uid()
            ));
        }
    }
    None
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn unsafe_file(path: &Path, reason: String) -> DumpError {
    DumpError::UnsafeFile {
        path: path.to_path_buf(),
        reason,
    }
}

/// Whether `error` says a file of that name exists already.
pub(crate) fn already_exists(error: &DumpError) -> bool {
    matches!(error, DumpError::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists)
}
