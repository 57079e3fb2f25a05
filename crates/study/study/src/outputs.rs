//! Where a study's outputs go, and how they land. A study writes only into a directory that is
//! new, empty, or holds an earlier study's own outputs (named by its manifest, [`MANIFEST`]),
//! claimed before the first run. Its files are written whole into a staging directory inside it,
//! then moved into place together, the manifest last: the manifest lists each file with its hash,
//! so a reader tells a page of an interrupted study, or a disk table an earlier study left there,
//! from this study's own.

use alloy_primitives::{B256, keccak256};
use std::{
    io,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

/// The study's manifest: written last, it names the files of one study and marks the directory
/// as a study's own.
pub const MANIFEST: &str = "study.json";
/// The bench's runs.
pub const BENCH_JSON: &str = "bench.json";
/// The disk's fio table measured when the runs ran (fio): it goes with the runs.
pub const DISK_TABLE: &str = "disk.txt";
/// A disk table the user gave (`--disk-table`): not measured here, kept apart from a measured one.
pub const GIVEN_DISK_TABLE: &str = "disk-given.txt";
/// The findings page.
pub const PAGE: &str = "findings.md";
/// The page's frontier chart.
pub const FRONTIER_CHART: &str = "frontier.svg";
/// The regime sweep's runs.
pub const SWEEP_JSON: &str = "sweep.json";
/// The regime sweep's chart.
pub const SWEEP_CHART: &str = "sweep.svg";

/// Every name a study writes into its directory.
const OUTPUT_NAMES: [&str; 8] = [
    MANIFEST,
    BENCH_JSON,
    DISK_TABLE,
    GIVEN_DISK_TABLE,
    PAGE,
    FRONTIER_CHART,
    SWEEP_JSON,
    SWEEP_CHART,
];
/// The staging directory's prefix: one a study killed mid-write left is its own, not a user's.
const STAGING_PREFIX: &str = ".study-staging.";
/// [`StudyManifest::written_by`].
const WRITTEN_BY: &str = "bal-replay study";

/// Why a study's outputs could not be claimed, read or written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// `--out` names what is not a directory, or lies under a file.
    #[error("--out {}: not a directory a study can write into: {source}", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// `--out` is a symbolic link, which a study does not write through.
    #[error("--out {}: a symbolic link; a study writes only into a directory itself", path.display())]
    Link {
        /// The path.
        path: PathBuf,
    },
    /// The directory holds what no study wrote.
    #[error(
        "--out {}: holds {} that no study wrote; a study writes only into a new or empty directory, or over its own earlier outputs (named by its {MANIFEST}): give another --out",
        path.display(),
        entries.join(", ")
    )]
    Foreign {
        /// The directory.
        path: PathBuf,
        /// What it holds that is not a study's.
        entries: Vec<String>,
    },
    /// A study's file is not the one its manifest lists.
    #[error(
        "{}: not the file its study's {MANIFEST} lists (a study interrupted while writing, or the file changed since): run that study again",
        path.display()
    )]
    NotAsListed {
        /// The file.
        path: PathBuf,
    },
    /// A manifest that is not a study's.
    #[error("{}: not a study's manifest: {reason}", path.display())]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file of a study, as its manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputFile {
    /// Its name in the study's directory.
    pub name: String,
    /// Its length.
    pub bytes: u64,
    /// The keccak-256 of its bytes.
    pub keccak256: B256,
}

impl OutputFile {
    fn of(name: &str, bytes: &[u8]) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.len() as u64,
            keccak256: keccak256(bytes),
        }
    }
}

/// The files of one study, written last into its directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StudyManifest {
    /// "bal-replay study".
    pub written_by: String,
    /// Every file the study left, with its hash.
    pub files: Vec<OutputFile>,
    /// Where the disk table the page used came from when the user gave it (`--disk-table`): it is
    /// [`GIVEN_DISK_TABLE`], not a measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_given_from: Option<String>,
}

impl StudyManifest {
    /// The manifest of the study in `dir`, if it holds one.
    pub fn read(dir: &Path) -> Result<Option<Self>, OutputError> {
        let path = dir.join(MANIFEST);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(OutputError::Io { path, source }),
        };
        let manifest: Self =
            serde_json::from_slice(&bytes).map_err(|e| OutputError::BadManifest {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if manifest.written_by != WRITTEN_BY {
            return Err(OutputError::BadManifest {
                path,
                reason: format!("written by {:?}", manifest.written_by),
            });
        }
        Ok(Some(manifest))
    }

    /// The bytes of `name` in `dir`, checked against this manifest; `None` where it lists no
    /// such file (a file of that name there is not this study's).
    pub fn read_listed(&self, dir: &Path, name: &str) -> Result<Option<Vec<u8>>, OutputError> {
        let Some(listed) = self.files.iter().find(|f| f.name == name) else {
            return Ok(None);
        };
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(io_error(&path))?;
        if OutputFile::of(name, &bytes) != *listed {
            return Err(OutputError::NotAsListed { path });
        }
        Ok(Some(bytes))
    }
}

/// The directory a study writes into, claimed before its first run.
#[derive(Debug)]
pub struct OutDir {
    path: PathBuf,
    /// This study made it: a study that fails removes it again (if nothing else is in it).
    created: bool,
    /// It held an earlier study's outputs (a manifest).
    held_a_study: bool,
}

impl OutDir {
    /// Claims `path` for a study's outputs: creates it where it does not exist; otherwise it must
    /// be a directory (not a link to one) that is empty or holds only a study's own outputs.
    pub fn claim(path: &Path) -> Result<Self, OutputError> {
        let not_a_dir = |source| OutputError::NotADirectory {
            path: path.to_path_buf(),
            source,
        };
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir_all(path).map_err(not_a_dir)?;
                return Ok(Self {
                    path: path.to_path_buf(),
                    created: true,
                    held_a_study: false,
                });
            }
            Err(e) => return Err(not_a_dir(e)),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(OutputError::Link {
                    path: path.to_path_buf(),
                });
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(not_a_dir(io::Error::from(io::ErrorKind::NotADirectory)));
            }
            Ok(_) => {}
        }
        let mut foreign = Vec::new();
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path).map_err(io_error(path))? {
            let entry = entry.map_err(io_error(path))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let own = (is_file && OUTPUT_NAMES.contains(&name.as_str()))
                || (is_dir && name.starts_with(STAGING_PREFIX));
            (if own { &mut names } else { &mut foreign }).push(name);
        }
        let held_a_study = !names.is_empty();
        if held_a_study && StudyManifest::read(path)?.is_none() {
            foreign.append(&mut names);
        }
        if !foreign.is_empty() {
            foreign.sort();
            return Err(OutputError::Foreign {
                path: path.to_path_buf(),
                entries: foreign,
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            created: false,
            held_a_study,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `file` is this directory's `name`: the very file, not a copy.
    pub fn holds(&self, name: &str, file: &Path) -> bool {
        let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        id(file).is_some_and(|f| id(&self.path.join(name)) == Some(f))
    }

    /// Removes the directory if this study made it and it is empty: a study that failed leaves
    /// nothing behind.
    pub fn release_if_unused(&self) {
        if self.created {
            // Fails, and leaves it, unless it is empty.
            let _ = std::fs::remove_dir(&self.path);
        }
    }

    /// A staging directory for one study's files, inside this one.
    pub fn stage(&self) -> Result<Staged<'_>, OutputError> {
        let dir = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(&self.path)
            .map_err(io_error(&self.path))?;
        Ok(Staged {
            out: self,
            dir,
            staged: Vec::new(),
            kept: Vec::new(),
        })
    }
}

/// One study's files, written into a staging directory, then moved into place together.
#[derive(Debug)]
pub struct Staged<'a> {
    out: &'a OutDir,
    dir: tempfile::TempDir,
    staged: Vec<OutputFile>,
    kept: Vec<OutputFile>,
}

impl Staged<'_> {
    /// Writes `name`, whole, into the staging directory.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), OutputError> {
        let path = self.dir.path().join(name);
        bal_replay_bench::write_result_file(&path, bytes).map_err(io_error(&path))?;
        self.staged.push(OutputFile::of(name, bytes));
        Ok(())
    }

    /// Where `name` is staged, for a writer of its own (then [`Staged::written`]).
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Lists `name`, written at [`Staged::path_of`], as one of the study's files.
    pub fn written(&mut self, name: &str) -> Result<(), OutputError> {
        let path = self.path_of(name);
        let bytes = std::fs::read(&path).map_err(io_error(&path))?;
        self.staged.push(OutputFile::of(name, &bytes));
        Ok(())
    }

    /// Lists `name`, already in the output directory with these `bytes`, as this study's, and
    /// leaves it as it is (the runs a page is computed again from, read from there).
    pub fn keep(&mut self, name: &str, bytes: &[u8]) {
        self.kept.push(OutputFile::of(name, bytes));
    }

    /// Moves the staged files into place and writes the manifest last, `disk_given_from` in it;
    /// then removes what an earlier study left that this one did not write (a disk table measured
    /// with other runs).
    pub fn land(mut self, disk_given_from: Option<String>) -> Result<(), OutputError> {
        let manifest = StudyManifest {
            written_by: WRITTEN_BY.into(),
            files: self.kept.iter().chain(&self.staged).cloned().collect(),
            disk_given_from,
        };
        let json = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
        let staged = std::mem::take(&mut self.staged);
        self.write(MANIFEST, &json)?;
        for file in staged.iter().chain(&self.staged) {
            let (from, to) = (
                self.dir.path().join(&file.name),
                self.out.path.join(&file.name),
            );
            std::fs::rename(&from, &to).map_err(io_error(&to))?;
        }
        if self.out.held_a_study {
            for name in OUTPUT_NAMES {
                if !manifest.files.iter().any(|f| f.name == name) && name != MANIFEST {
                    let path = self.out.path.join(name);
                    match std::fs::remove_file(&path) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => {
                            return Err(OutputError::Io { path, source: e });
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}
