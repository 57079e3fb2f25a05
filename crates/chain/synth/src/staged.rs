//! Outputs that appear whole or not at all.
//!
//! A generated dump is written block by block; one interrupted part-way (Ctrl-C, a crash) would
//! otherwise be left at the path asked for, with a valid manifest of fewer blocks (or none), and
//! read later as the whole chain. So each output is built in a fresh directory beside its target,
//! `<target>.partial-<pid>-<random>`, and renamed to the target once complete. An interrupted
//! run leaves only a directory named as partial; nothing at the target.

use std::{
    collections::hash_map::RandomState,
    fs, io,
    path::{Path, PathBuf},
};

use crate::SynthError;

/// How many fresh names to try before giving up on creating a staging directory.
const NAME_TRIES: usize = 16;

/// An output directory being built beside its target. Dropped without
/// [`commit`](Self::commit), it removes what it built.
#[derive(Debug)]
pub(crate) struct StagedDir {
    /// The directory this process created, where the output is built.
    staging: PathBuf,
    /// Where the output goes once complete.
    target: PathBuf,
    committed: bool,
}

impl StagedDir {
    /// Creates a fresh staging directory for `target`, which must not exist, or be an empty
    /// directory of this process's user (replaced by the output; never a directory with anything
    /// in it, a link or a file).
    pub(crate) fn begin(target: &Path) -> Result<Self, SynthError> {
        let refuse = |reason: String| SynthError::OutputExists {
            path: target.to_path_buf(),
            reason,
        };
        let existing = match fs::symlink_metadata(target) {
            Ok(metadata) => Some(metadata),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(source) => return Err(output_io(target, source)),
        };
        if let Some(metadata) = &existing {
            if metadata.file_type().is_symlink() {
                return Err(refuse("it is a symbolic link".into()));
            }
            if !metadata.is_dir() {
                return Err(refuse("it is not a directory".into()));
            }
            let mut entries = fs::read_dir(target).map_err(|source| output_io(target, source))?;
            if entries.next().is_some() {
                return Err(refuse("it is a directory that is not empty".into()));
            }
        }
        let name = target
            .file_name()
            .ok_or_else(|| refuse("it names no directory of its own".into()))?;
        let parent = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        fs::create_dir_all(parent).map_err(|source| output_io(parent, source))?;
        let staged = Self {
            staging: create_fresh_dir(parent, &name.to_string_lossy())?,
            target: target.to_path_buf(),
            committed: false,
        };
        if let Some(metadata) = &existing {
            check_same_owner(metadata, &staged.staging).map_err(refuse)?;
        }
        Ok(staged)
    }

    /// Where to build the output.
    pub(crate) fn path(&self) -> &Path {
        &self.staging
    }

    /// Renames the built output to its target. The kernel's rename replaces nothing but an empty
    /// directory, so a target that gained an entry, or became a link or a file, since
    /// [`begin`](Self::begin) fails this; the finished output is then kept where it was built.
    pub(crate) fn commit(mut self) -> Result<(), SynthError> {
        // Kept from here on, placed or not: it is finished.
        self.committed = true;
        fs::rename(&self.staging, &self.target).map_err(|source| SynthError::NotPlaced {
            built: self.staging.clone(),
            target: self.target.clone(),
            source,
        })?;
        if let Some(parent) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            // Durable rename: without it, a power cut could bring back the partial name.
            fs::File::open(parent)
                .and_then(|dir| dir.sync_all())
                .map_err(|source| output_io(parent, source))?;
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // Only the directory `begin` created, and what was built in it.
        if let Err(error) = fs::remove_dir_all(&self.staging) {
            tracing::warn!(path = %self.staging.display(), %error, "could not remove an unfinished output");
        }
    }
}

/// Creates `<parent>/<name>.partial-<pid>-<random>`, new (never one already there).
fn create_fresh_dir(parent: &Path, name: &str) -> Result<PathBuf, SynthError> {
    let mut last_error = None;
    for _ in 0..NAME_TRIES {
        let path = parent.join(format!(
            "{name}.partial-{}-{:016x}",
            std::process::id(),
            random_u64()
        ));
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                last_error = Some(output_io(&path, error));
            }
            Err(source) => return Err(output_io(&path, source)),
        }
    }
    Err(last_error.unwrap_or_else(|| output_io(parent, io::Error::other("no fresh name"))))
}

/// A number no other process (or call) is likely to pick: the standard library's per-instance
/// random hash keys, over the time.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// An empty directory to be replaced must be this process's user's: the directory just created
/// says who that is.
#[cfg(unix)]
fn check_same_owner(existing: &fs::Metadata, created: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let uid = fs::metadata(created).map_err(|e| e.to_string())?.uid();
    if existing.uid() == uid {
        return Ok(());
    }
    Err(format!(
        "it is an empty directory owned by uid {}, not by this process's uid {uid}",
        existing.uid()
    ))
}

#[cfg(not(unix))]
fn check_same_owner(_existing: &fs::Metadata, _created: &Path) -> Result<(), String> {
    Ok(())
}

fn output_io(path: &Path, source: io::Error) -> SynthError {
    SynthError::Output {
        path: path.to_path_buf(),
        source,
    }
}
