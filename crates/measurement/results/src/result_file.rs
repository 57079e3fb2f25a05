//! Result files (`--json` summaries, reports, charts) replace what their path held only once they
//! are complete; a JSON result carries the version of its schema, and is read only by a build
//! that reads that version.
//!
//! Every top-level JSON result (`bench`, `bench-db`, `run`, `project`) opens with
//! `"schema_version": <u32>`. A file without one was written before results were versioned:
//! version 1. A reader reads the version alone first and refuses any other than its own, naming
//! both, before it reads the rest ([`parse_result`]), so a file of another build is never read
//! as if its fields meant what this build's mean.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::{
    ffi::OsString,
    fs::{self, File, OpenOptions},
    io::{self, Read, Write},
    path::{Path, PathBuf},
};

/// Temporary names tried before giving up: each is taken only if no file has it, and a name
/// already taken is another writer's (or a crashed run's), never ours to overwrite.
const TEMP_NAME_ATTEMPTS: u32 = 100;

/// How a result's JSON is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One field a line: results a reader may open by hand.
    Pretty,
    /// On one line: results of many numbers (task profiles), which pretty printing would put
    /// one to a line.
    OneLine,
}

/// Writes `result` as JSON to `path`, whole or not at all ([`write_result_file`]): the one way
/// every result format is written, as [`read_result`] is the one way each is read.
pub fn write_result<T: VersionedResult + serde::Serialize>(
    path: &Path,
    result: &T,
    layout: Layout,
) -> io::Result<()> {
    write_result_file(path, &encode_result(result, layout)?)
}

/// `result`'s JSON, for a writer that lands its files itself (a study's staged outputs); every
/// other writer goes through [`write_result`].
pub fn encode_result<T: VersionedResult + serde::Serialize>(
    result: &T,
    layout: Layout,
) -> io::Result<Vec<u8>> {
    match layout {
        Layout::Pretty => serde_json::to_vec_pretty(result),
        Layout::OneLine => serde_json::to_vec(result),
    }
    .map_err(io::Error::other)
}

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
pub(crate) fn create_temp_beside(path: &Path) -> io::Result<(PathBuf, File)> {
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

/// A field a result file may not hold as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Its JSON path in the file (`runs[0].batch_profiles[2].tasks.reads[17]`).
    pub field: String,
    /// Its value, as written.
    pub value: String,
    /// What a real run records there.
    pub expected: String,
}

impl FieldError {
    /// `field` holds `value`, where a real run records `expected`.
    pub fn new(
        field: impl Into<String>,
        value: impl ToString,
        expected: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

/// A JSON result of a known kind and schema version, read with [`read_result`].
pub trait VersionedResult: serde::de::DeserializeOwned {
    /// What the file holds, in errors ("bench result").
    const KIND: &'static str;
    /// The schema version this build writes and reads.
    const SCHEMA_VERSION: u32;
    /// Earlier versions this build also reads: those the current one only added optional fields
    /// to, so an earlier file is read whole with the new fields absent. Empty for most formats.
    const ALSO_READS: &'static [u32] = &[];

    /// Whether what was read holds only what a real run can record (a result whose numbers
    /// feed sums and simulations checks them here); every reader of a `T` gets it checked.
    fn check(&self) -> Result<(), FieldError> {
        Ok(())
    }
}

/// The largest result file a reader takes in, bytes: 512 MiB. A bench's JSON with every run's
/// task profiles kept is tens of megabytes; a file past this is not one, and reading it whole
/// (a typed result takes about as much memory as its text) could exhaust the machine's memory.
pub const MAX_RESULT_BYTES: u64 = 512 << 20;

/// How deep serde_json reads a JSON document before it refuses it.
pub const JSON_DEPTH_LIMIT: usize = 128;

/// What a document serde_json stopped reading at its depth limit is, as errors say it (serde_json
/// reports it as a syntax error, yet the document may well be JSON): nested deeper than any
/// `kind` of result; `None` for any other failure.
pub fn too_deep(kind: &str, source: &serde_json::Error) -> Option<String> {
    source
        .to_string()
        .starts_with("recursion limit exceeded")
        .then(|| {
            format!("nested deeper than {JSON_DEPTH_LIMIT} levels, more than any {kind} holds")
        })
}

/// Why a JSON result could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultReadError {
    /// The file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is larger than any result ([`MAX_RESULT_BYTES`]).
    #[error(
        "{}: larger than {limit} bytes, more than any result holds (not a result file?)",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// [`MAX_RESULT_BYTES`].
        limit: u64,
    },
    /// The file was written with another schema version.
    #[error(
        "{}: written with {kind} schema version {found}, this build reads {}",
        path.display(),
        versions_read(*expected, also_reads)
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// What it holds.
        kind: &'static str,
        /// The version it was written with (1: no `schema_version`).
        found: u32,
        /// The version this build writes.
        expected: u32,
        /// The earlier versions this build reads as well ([`VersionedResult::ALSO_READS`]).
        also_reads: &'static [u32],
    },
    /// The file is not JSON, or not a result of this kind.
    #[error("{}: {}", path.display(), too_deep(kind, source).unwrap_or_else(|| format!("not a {kind} (`schema_version` {version})")))]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        kind: &'static str,
        /// The version it claims.
        version: u32,
        /// The cause.
        source: serde_json::Error,
    },
    /// A field of the file holds what no real run records.
    #[error("{}: {field} = {value}: expected {expected}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field's JSON path in it.
        field: String,
        /// Its value.
        value: String,
        /// What a real run records there.
        expected: String,
    },
    /// The file is not JSON, or has no object or array at its top.
    #[error("{}: {}", path.display(), too_deep(kind, source).unwrap_or_else(|| format!("not a JSON {kind}")))]
    NotJson {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        kind: &'static str,
        /// The cause.
        source: serde_json::Error,
    },
}

/// Reads the result at `path` ([`parse_result`]), whole into one buffer
/// ([`read_result_bytes`]).
pub fn read_result<T: VersionedResult>(path: &Path) -> Result<T, ResultReadError> {
    parse_result(path, &read_result_bytes(path)?)
}

/// The bytes of the result file at `path`, refused past [`MAX_RESULT_BYTES`] before more than
/// that is read (a file that grows while read included). Every reader of a result file reads it
/// through this, once, and parses that one buffer.
pub fn read_result_bytes(path: &Path) -> Result<Vec<u8>, ResultReadError> {
    read_bounded(path, MAX_RESULT_BYTES)
}

fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ResultReadError> {
    let read_error = |source| ResultReadError::Read {
        path: path.into(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    // The length is a hint for the buffer only: what counts is what is read.
    let hint = file.metadata().map_or(0, |m| m.len()).min(limit) as usize;
    let mut bytes = Vec::with_capacity(hint);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(ResultReadError::TooLarge {
            path: path.into(),
            limit,
        });
    }
    Ok(bytes)
}

/// Parses `bytes` (read from `path`, named in errors) as a `T`, after checking that they were
/// written with `T`'s schema version, and checks what it holds ([`VersionedResult::check`]).
pub fn parse_result<T: VersionedResult>(path: &Path, bytes: &[u8]) -> Result<T, ResultReadError> {
    let found = schema_version(bytes).map_err(|source| ResultReadError::NotJson {
        path: path.into(),
        kind: T::KIND,
        source,
    })?;
    if found != T::SCHEMA_VERSION && !T::ALSO_READS.contains(&found) {
        return Err(ResultReadError::Version {
            path: path.into(),
            kind: T::KIND,
            found,
            expected: T::SCHEMA_VERSION,
            also_reads: T::ALSO_READS,
        });
    }
    let result: T = serde_json::from_slice(bytes).map_err(|source| ResultReadError::Parse {
        path: path.into(),
        kind: T::KIND,
        version: found,
        source,
    })?;
    result.check().map_err(|e| ResultReadError::Field {
        path: path.into(),
        field: e.field,
        value: e.value,
        expected: e.expected,
    })?;
    Ok(result)
}

/// The versions a reader takes, as an error names them: "version 4", "versions 3 and 4".
fn versions_read(current: u32, also: &[u32]) -> String {
    let mut all: Vec<u32> = also.iter().copied().chain([current]).collect();
    all.sort_unstable();
    all.dedup();
    let last = all.pop().unwrap_or(current);
    if all.is_empty() {
        return format!("version {last}");
    }
    let rest: Vec<String> = all.iter().map(u32::to_string).collect();
    format!("versions {} and {last}", rest.join(", "))
}

/// The `schema_version` of a JSON result: its top-level object's field, 1 where it has none or
/// where its top is an array (`bench-db` results were arrays before they were versioned). The
/// rest of the document is skipped, not built.
pub fn schema_version(bytes: &[u8]) -> Result<u32, serde_json::Error> {
    outline(bytes).map(|o| o.schema_version)
}

/// The names of a JSON document's top-level fields, in order (none where its top is an array):
/// what tells one kind of result from another. Their values are skipped, not built, so a file of
/// any size costs no memory beyond its bytes.
pub fn top_level_fields(bytes: &[u8]) -> Result<Vec<String>, serde_json::Error> {
    outline(bytes).map(|o| o.fields)
}

/// A JSON result's version and top-level field names.
struct Outline {
    schema_version: u32,
    fields: Vec<String>,
}

fn outline(bytes: &[u8]) -> Result<Outline, serde_json::Error> {
    struct OutlineVisitor;
    impl<'de> Visitor<'de> for OutlineVisitor {
        type Value = Outline;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object or array")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outline, A::Error> {
            let mut version = None;
            let mut fields = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                if key == "schema_version" {
                    version = Some(map.next_value::<u32>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
                fields.push(key);
            }
            Ok(Outline {
                schema_version: version.unwrap_or(1),
                fields,
            })
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Outline, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Outline {
                schema_version: 1,
                fields: Vec::new(),
            })
        }
    }
    struct Top(Outline);
    impl<'de> serde::Deserialize<'de> for Top {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(OutlineVisitor).map(Top)
        }
    }
    serde_json::from_slice::<Top>(bytes).map(|t| t.0)
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
    fn a_file_past_the_limit_is_refused_and_one_at_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        fs::write(&path, b"[1,2,3,4]").unwrap();
        assert_eq!(read_bounded(&path, 9).unwrap(), b"[1,2,3,4]");
        let err = read_bounded(&path, 8).unwrap_err();
        assert!(matches!(err, ResultReadError::TooLarge { limit: 8, .. }));
        assert_eq!(
            err.to_string(),
            format!(
                "{}: larger than 8 bytes, more than any result holds (not a result file?)",
                path.display()
            )
        );
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let err = write_result_file(Path::new("/"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
