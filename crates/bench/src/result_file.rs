//! Result files (`--json` summaries, reports, charts) replace what their path held only once they
//! are complete.

use std::{
    ffi::OsString,
    fs::{self, File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
};

/// Temporary names tried before giving up: each is taken only if no file has it, and a name
/// already taken is another writer's (or a crashed run's), never ours to overwrite.
const TEMP_NAME_ATTEMPTS: u32 = 100;

/// Writes `bytes` to `path` through a temporary file in the same directory, synced and then
/// renamed over `path`. A write that fails (a full disk, a missing directory) leaves what `path`
/// held before as it was and removes the temporary file; a crash leaves at worst that temporary
/// file, never a truncated `path`.
///
/// The temporary file (`.<name>.<pid>.<n>.tmp` beside `path`) is created new, so the only
/// existing file this ever replaces is `path` itself.
pub fn write_result_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (temp, mut file) = create_temp_beside(path)?;
    // Synced before the rename: a filesystem that reports a full disk only when the data is
    // flushed must fail here, not after the good file is gone.
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    let renamed = written.and_then(|()| fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = fs::remove_file(&temp);
    }
    renamed
}

/// A new, empty file beside `path`, named after it, and its path.
fn create_temp_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut taken = None;
    for attempt in 0..TEMP_NAME_ATTEMPTS {
        let mut temp_name = OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}.{attempt}.tmp", std::process::id()));
        let temp = dir.join(temp_name);
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => taken = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(taken.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_result_replaces_the_file_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        write_result_file(&path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        write_result_file(&path, b"second, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer");
        assert_eq!(names(dir.path()), ["run.json"]);
    }

    #[test]
    fn files_that_hold_the_temporary_names_are_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let first_temp = dir
            .path()
            .join(format!(".run.json.{}.0.tmp", std::process::id()));
        fs::write(&first_temp, b"someone else's").unwrap();
        write_result_file(&path, b"result").unwrap();
        assert_eq!(fs::read(&first_temp).unwrap(), b"someone else's");
        assert_eq!(fs::read(&path).unwrap(), b"result");
        assert_eq!(
            names(dir.path()),
            [
                first_temp
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                "run.json".into()
            ]
        );
    }

    #[test]
    fn a_failed_rename_leaves_the_old_file_and_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        // A directory in the result's place: the file is written, the rename over it fails.
        let path = dir.path().join("report.md");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), b"kept").unwrap();
        write_result_file(&path, b"result").unwrap_err();
        assert_eq!(fs::read(path.join("inside")).unwrap(), b"kept");
        assert_eq!(names(dir.path()), ["report.md"]);
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let err = write_result_file(Path::new("/"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
