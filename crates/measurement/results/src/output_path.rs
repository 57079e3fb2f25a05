//! Output paths are checked before a command starts its work, so an hour of runs is never lost
//! to a result that cannot be written at the end: a missing directory, a directory or a
//! symbolic link where the file should go, a directory that cannot be written.
//!
//! The check writes what [`write_result_file`](crate::write_result_file) writes first, a new
//! temporary file beside the result, and removes it at once: nothing the user had is touched.

use crate::result_file::create_temp_beside;
use std::{
    fs, io,
    path::{Path, PathBuf},
};

/// Why a path given for a result cannot take it.
#[derive(Debug, thiserror::Error)]
pub enum OutputPathError {
    /// The path ends in no file name (`/`, `..`).
    #[error("cannot write a result to {}: it does not name a file", path.display())]
    NoFileName {
        /// The path given.
        path: PathBuf,
    },
    /// The directory the result would go in does not exist.
    #[error("cannot write a result to {}: the directory {} does not exist", path.display(), dir.display())]
    MissingDirectory {
        /// The path given.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
    },
    /// What should be the result's directory is not one (a file, or a path through a file).
    #[error("cannot write a result to {}: {} is not a directory", path.display(), dir.display())]
    NotInADirectory {
        /// The path given.
        path: PathBuf,
        /// What should be a directory.
        dir: PathBuf,
    },
    /// A directory stands where the result file would go.
    #[error("cannot write a result to {}: it is a directory; name a file for the result", path.display())]
    IsDirectory {
        /// The path given.
        path: PathBuf,
    },
    /// A symbolic link stands where the result file would go: the result would replace the
    /// link, not the file it points to.
    #[error(
        "cannot write a result to {}: it is a symbolic link, which the result would replace; name the file it points to",
        path.display()
    )]
    IsSymlink {
        /// The path given.
        path: PathBuf,
    },
    /// Something other than a file or a directory (a FIFO, a socket, a device) stands there.
    #[error("cannot write a result to {}: it is not a regular file", path.display())]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// The directory cannot be written (permissions, a read-only filesystem), or not looked at.
    #[error("cannot write a result to {}: {} cannot be written", path.display(), dir.display())]
    NotWritable {
        /// The path given.
        path: PathBuf,
        /// The directory tried.
        dir: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// Checks that a result file can be written at `path` by
/// [`write_result_file`](crate::write_result_file): its directory exists and can be written, and
/// `path` is missing or a regular file (which the result will replace), not a directory or a
/// symbolic link.
pub fn check_output_file(path: &Path) -> Result<(), OutputPathError> {
    let owned = || path.to_path_buf();
    if path.file_name().is_none() {
        return Err(OutputPathError::NoFileName { path: owned() });
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    check_directory(path, dir)?;
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_symlink() => Err(OutputPathError::IsSymlink { path: owned() }),
        Ok(meta) if meta.is_dir() => Err(OutputPathError::IsDirectory { path: owned() }),
        Ok(meta) if !meta.is_file() => Err(OutputPathError::NotAFile { path: owned() }),
        Ok(_) => probe_write(path, dir, path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => probe_write(path, dir, path),
        Err(source) => Err(OutputPathError::NotWritable {
            path: owned(),
            dir: dir.to_path_buf(),
            source,
        }),
    }
}

/// Checks that results can be written into the directory `path`, created if missing (as
/// `report --out` does): it is a directory (a symbolic link to one is fine) that can be written,
/// or it is missing and its nearest existing ancestor is such a directory.
pub fn check_output_dir(path: &Path) -> Result<(), OutputPathError> {
    // The nearest of `path` and its ancestors that exists ("." for a relative path's start).
    let mut existing = path;
    loop {
        match fs::metadata(existing) {
            Ok(_) => break,
            // A missing ancestor, or one under a file: the file is found further up.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) && existing != Path::new(".") =>
            {
                existing = match existing.parent() {
                    Some(up) if !up.as_os_str().is_empty() => up,
                    _ => Path::new("."),
                };
            }
            Err(e) => return Err(directory_error(path, existing, e)),
        }
    }
    check_directory(path, existing)?;
    // Named as a file in the directory, so the probe is `.<name>.<pid>.<n>.tmp` inside it.
    probe_write(path, existing, &existing.join("bal-replay-output"))
}

/// Checks that `dir`, where `path` goes, exists and is a directory (following symbolic links).
fn check_directory(path: &Path, dir: &Path) -> Result<(), OutputPathError> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(OutputPathError::NotInADirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        }),
        Err(e) => Err(directory_error(path, dir, e)),
    }
}

/// What a failure to look at `dir`, where `path` goes, means for the result.
fn directory_error(path: &Path, dir: &Path, e: io::Error) -> OutputPathError {
    let (path, dir) = (path.to_path_buf(), dir.to_path_buf());
    match e.kind() {
        io::ErrorKind::NotFound => OutputPathError::MissingDirectory { path, dir },
        io::ErrorKind::NotADirectory => OutputPathError::NotInADirectory { path, dir },
        _ => OutputPathError::NotWritable {
            path,
            dir,
            source: e,
        },
    }
}

/// Creates the temporary file a result written at `beside` would start with, in `dir`, and
/// removes it: the directory takes new files.
fn probe_write(path: &Path, dir: &Path, beside: &Path) -> Result<(), OutputPathError> {
    let (temp, file) =
        create_temp_beside(beside).map_err(|source| OutputPathError::NotWritable {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            source,
        })?;
    drop(file);
    // Ours, created new a moment ago: nothing of the user's is removed.
    let _ = fs::remove_file(temp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_or_existing_result_file_passes_and_nothing_is_left_or_changed() {
        let dir = tempfile::tempdir().unwrap();
        check_output_file(&dir.path().join("b.json")).unwrap();
        assert!(names(dir.path()).is_empty());
        let old = dir.path().join("old.json");
        fs::write(&old, b"last week's").unwrap();
        check_output_file(&old).unwrap();
        assert_eq!(fs::read(&old).unwrap(), b"last week's");
        assert_eq!(names(dir.path()), ["old.json"]);
    }

    #[test]
    fn a_result_file_in_a_missing_directory_or_under_a_file_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/dir/b.json");
        let err = check_output_file(&missing).unwrap_err();
        let OutputPathError::MissingDirectory { path, dir: parent } = &err else {
            panic!("expected a missing directory, got {err:?}");
        };
        assert_eq!((path, parent), (&missing, &dir.path().join("no/such/dir")));
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );

        let file = dir.path().join("notes.txt");
        fs::write(&file, b"mine").unwrap();
        for under in [file.join("b.json"), file.join("sub/b.json")] {
            let err = check_output_file(&under).unwrap_err();
            assert!(
                matches!(err, OutputPathError::NotInADirectory { .. }),
                "{under:?}: {err:?}"
            );
        }
        assert_eq!(fs::read(&file).unwrap(), b"mine");
        assert_eq!(names(dir.path()), ["notes.txt"]);
    }

    #[test]
    fn a_directory_a_symlink_or_no_file_name_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("results");
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join("inside"), b"kept").unwrap();
        let err = check_output_file(&sub).unwrap_err();
        assert!(
            matches!(err, OutputPathError::IsDirectory { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("results"), "{err}");

        let target = dir.path().join("target.json");
        fs::write(&target, b"the user's").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        for path in [&link, &dangling] {
            let err = check_output_file(path).unwrap_err();
            assert!(matches!(err, OutputPathError::IsSymlink { .. }), "{err:?}");
        }
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"the user's");

        let err = check_output_file(Path::new("/")).unwrap_err();
        assert!(matches!(err, OutputPathError::NoFileName { .. }), "{err:?}");
        assert_eq!(
            names(dir.path()),
            ["dangling.json", "link.json", "results", "target.json"]
        );
        assert_eq!(names(&sub), ["inside"]);
    }

    #[test]
    fn an_output_directory_must_be_one_or_be_creatable() {
        let dir = tempfile::tempdir().unwrap();
        // Existing, or missing (several levels) under an existing directory: `report` creates it.
        check_output_dir(dir.path()).unwrap();
        check_output_dir(&dir.path().join("charts/2024")).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        check_output_dir(&link).unwrap();
        assert_eq!(names(dir.path()), ["link"]);

        let file = dir.path().join("notes.txt");
        fs::write(&file, b"mine").unwrap();
        for path in [file.clone(), file.join("charts")] {
            let err = check_output_dir(&path).unwrap_err();
            assert!(
                matches!(&err, OutputPathError::NotInADirectory { dir, .. } if dir == &file),
                "{path:?}: {err:?}"
            );
        }
        assert_eq!(fs::read(&file).unwrap(), b"mine");
        assert_eq!(names(dir.path()), ["link", "notes.txt"]);
    }
}
